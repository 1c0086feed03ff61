"""The server page says which partitioned tables partdash does not monitor (MyISAM, Aria,
MEMORY), beside the InnoDB ones it does, after a real poll."""

import pytest

from partdash.polling.service import poll_server
from tests.conftest import PAGE_READY_MS, log_in
from tests.sql import run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]


def test_the_server_page_lists_the_tables_of_other_engines_as_not_monitored(
    page, live_server, admin_user, mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE inno (id INT) PARTITION BY HASH (id) PARTITIONS 2",
        "CREATE TABLE legacy (id INT) ENGINE=MyISAM PARTITION BY HASH (id) PARTITIONS 3",
        "INSERT INTO legacy SELECT seq FROM seq_1_to_12",
        "CREATE TABLE scratch (id INT) ENGINE=MEMORY PARTITION BY KEY (id) PARTITIONS 2",
    )
    server = make_server(mariadb, name="mixed-engines")
    assert poll_server(server).ok

    log_in(page, live_server)
    page.goto(f"{live_server.url}/servers/{server.pk}/")
    page.wait_for_selector("#server-page[data-ready]", state="attached", timeout=PAGE_READY_MS)

    notice = page.locator("#notices .unmonitored-tables")
    text = notice.inner_text()
    assert "are not monitored" in text
    items = notice.locator("li").all_inner_texts()
    assert f"{schema}.legacy: MyISAM, 3 partitions, 12 rows" in " ".join(items)
    assert any(item.startswith(f"{schema}.scratch: MEMORY, 2 partitions") for item in items)
    assert page.console_errors == []
