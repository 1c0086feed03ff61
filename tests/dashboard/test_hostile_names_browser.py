"""Names from the server with bidi and control characters are shown escaped on the pages
(Chromium) and in emails: a right-to-left override (U+202E) in a table or partition
name shows as `\\u202e`, never reorders what follows it."""

import pytest

from partdash.metrics.models import PartitionedTable
from partdash.polling.service import poll_server
from tests.conftest import log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]

RLO = "\u202e"
TABLE = f"orders{RLO}txt.exe"  # shows as "ordersexe.txt" when not escaped
PARTITION = f"p{RLO}0"


@pytest.fixture
def hostile_table(mariadb, new_schema, make_server):
    schema = new_schema(mariadb)
    mariadb.execute(
        f"CREATE TABLE `{schema}`.`{TABLE}` (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB "
        f"PARTITION BY RANGE (id) (PARTITION `{PARTITION}` VALUES LESS THAN (100), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)"
    )
    mariadb.execute(f"INSERT INTO `{schema}`.`{TABLE}` VALUES (1), (200)")
    server = make_server(mariadb, name="bidi-db")
    assert poll_server(server).ok
    return PartitionedTable.objects.get(server=server, name=TABLE)


def page_text(page) -> str:
    return page.evaluate("() => document.title + document.body.innerText")


def test_bidi_characters_in_names_are_shown_escaped_on_the_pages(
    page, live_server, admin_user, hostile_table
):
    log_in(page, live_server)
    server_page = f"{live_server.url}/servers/{hostile_table.server_id}/"
    page.goto(server_page)
    page.wait_for_selector("#server-page[data-ready]", state="attached")
    text = page_text(page)
    assert "orders\\u202etxt.exe" in text and RLO not in text

    page.goto(f"{live_server.url}/tables/{hostile_table.pk}/")
    page.wait_for_selector("#table-page[data-ready]", state="attached")
    text = page_text(page)
    assert "orders\\u202etxt.exe" in text and "p\\u202e0" in text
    assert RLO not in text

    page.goto(f"{live_server.url}/search/?q=orders")
    text = page_text(page)
    assert "orders\\u202etxt.exe" in text and RLO not in text
    assert page.console_errors == []
