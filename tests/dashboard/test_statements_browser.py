"""The table page's Statements section and the server page's count of tables with
unpruned statements, in a real browser, on stored digests (tests/builders.py): the
statements reading every partition first, with what they cost; the digest text as
stored (placeholders), never a literal."""

from datetime import UTC, datetime

import pytest

from partdash.metrics.models import PartitionedTable, StatementDigest
from tests import builders
from tests.conftest import log_in
from tests.dashboard.test_pages_browser import open_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]
SEEN = datetime(2026, 11, 28, 12, tzinfo=UTC)


def digest(table: PartitionedTable, name: str, text: str, prunes: str, read, seconds: float):
    return StatementDigest.objects.create(
        table=table,
        digest=name * 32,
        text=text,
        calls=100,
        rows_examined=int(seconds * 1000),
        seconds=seconds,
        last_seen=SEEN,
        prunes=prunes,
        partitions_read=read,
        partitions_total=4,
        why="test",
    )


def test_the_table_page_lists_unpruned_statements_first_and_the_server_page_counts_them(
    page, live_server, admin_user
):
    server = builders.server("stmt-db", enabled=True)
    builders.poll(server, builders.hash_table("shop", "orders", [10, 10, 10, 10]))
    table = PartitionedTable.objects.get(server=server, name="orders")
    digest(table, "a", "SELECT * FROM `orders` WHERE `id` = ?", "one", 1, 50.0)
    digest(table, "b", "SELECT * FROM `orders` WHERE `customer` = ?", "all", 4, 2.5)
    log_in(page, live_server)

    open_page(page, live_server, f"/tables/{table.pk}/", "#table-page")
    page.wait_for_selector("#statements-table")
    rows = page.locator("#statements-table tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).inner_text()
    assert "`customer` = ?" in first and "every partition" in first and "4 of 4" in first
    assert "one partition" in rows.nth(1).inner_text()
    assert "1 statement(s) read every partition" in page.locator("#unpruned-summary").inner_text()

    open_page(page, live_server, f"/servers/{server.pk}/", "#server-page")
    facts = page.locator("#server-facts").inner_text()
    assert "1 table(s) read by a statement that reads every partition" in facts
