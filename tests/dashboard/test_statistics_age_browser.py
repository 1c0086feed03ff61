""" "Statistics N min old" says whose statistics: a table's totals are as old as its
stalest partition's, so the API's `statistics` and the table and server pages name that
partition, and only where the partitions' ages differ (after one ANALYZE TABLE they are
one age, and the page says so without a name). Polled from a real MariaDB whose
`mysql.innodb_table_stats` holds the ages."""

import re
from datetime import datetime

import pytest

from partdash.polling.service import poll_server
from tests.conftest import PAGE_READY_MS, log_in
from tests.sql import run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]


def table_row(client, server, schema: str) -> dict:
    (table,) = [t for t in client.get(f"/api/v1/servers/{server.pk}/tables/").json()
                if t["schema"] == schema]  # fmt: skip
    return table


def stats_times(instance, schema: str) -> dict[str, datetime]:
    rows = instance.execute(
        "SELECT table_name, last_update FROM mysql.innodb_table_stats WHERE database_name = %s",
        (schema,),
    )
    return {name.split("#P#")[1]: at for name, at in rows}


def rows_fact(page, live_server, table_id: int) -> str:
    page.goto(f"{live_server.url}/tables/{table_id}/")
    page.wait_for_selector("#rows-fact .est", timeout=PAGE_READY_MS)
    return page.inner_text("#rows-fact")


def test_the_statistics_age_names_the_oldest_partition_and_only_when_ages_differ(
    mariadb, make_server, new_schema, admin_client, admin_user, live_server, page
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 3",
        "INSERT INTO t SELECT seq FROM seq_1_to_3000",
        "ANALYZE TABLE t",
        # p1's statistics as InnoDB leaves them when it last recalculated p1 half an hour
        # before the others.
        "UPDATE mysql.innodb_table_stats SET last_update = last_update - INTERVAL 30 MINUTE "
        f"WHERE database_name = '{schema}' AND table_name = 't#P#p1'",
    )
    server = make_server(mariadb)
    assert poll_server(server).ok
    times = stats_times(mariadb, schema)
    assert min(times, key=times.get) == "p1"

    statistics = table_row(admin_client, server, schema)["statistics"]
    assert statistics["partition"] == "p1" and statistics["partitions"] == 3
    oldest = datetime.fromisoformat(statistics["as_of"])
    newest = datetime.fromisoformat(statistics["newest_at"])
    assert (newest - oldest).total_seconds() == (times["p0"] - times["p1"]).total_seconds()
    assert (newest - oldest).total_seconds() == 1800

    log_in(page, live_server)
    table_id = table_row(admin_client, server, schema)["id"]
    shown = rows_fact(page, live_server, table_id)
    assert re.search(r"statistics 3[01] min old: p1's, the oldest\)", shown), shown
    title = page.locator("#rows-fact .est").get_attribute("title")
    assert "partition p1's, the oldest of 3" in title
    page.goto(f"{live_server.url}/servers/{server.pk}/")
    cell = page.locator(f"#tables tbody tr[data-id='{table_id}'] td[data-key='rows']")
    cell.locator(".est").wait_for(timeout=PAGE_READY_MS)
    assert re.search(r"est\., 3[01] min old \(p1\)", cell.inner_text()), cell.inner_text()

    # One ANALYZE TABLE refreshes every partition at once: one age, no partition named.
    run(mariadb, schema, "ANALYZE TABLE t")
    assert poll_server(server).ok
    statistics = table_row(admin_client, server, schema)["statistics"]
    spread = datetime.fromisoformat(statistics["newest_at"]) - datetime.fromisoformat(
        statistics["as_of"]
    )
    assert spread.total_seconds() < 60
    shown = rows_fact(page, live_server, table_id)
    assert re.search(r"\(estimate, statistics (under a minute|1 min) old\)", shown), shown
    assert page.console_errors == []
