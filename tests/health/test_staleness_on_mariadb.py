"""Staleness and runway on a real MariaDB: UPDATEs that leave row counts alone never make
statistics stale; a REORGANIZE that leaves them far from the rows is said, with the
rows its file holds; a yearly table without a catch-all warns 34 days before its bound."""

import time
from datetime import UTC, datetime

import pytest

from partdash.health.findings import runway_finding
from partdash.health.partitions import PartitionState
from partdash.health.runway import table_runway
from partdash.metrics.models import Partition, PartitionedTable
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db


def poll(server) -> None:
    report = poll_server(server)
    assert report.ok, report.error


def findings(client, server, schema: str, table: str) -> dict[str, dict]:
    """The table's findings; `schema` too, as the server is shared with other tests."""
    response = client.get(f"/api/v1/servers/{server.pk}/tables/")
    assert response.status_code == 200
    (row,) = [t for t in response.json() if (t["schema"], t["name"]) == (schema, table)]
    return {f["kind"]: f for f in row["findings"]}


def statistics_rows(instance, schema: str, partition: str) -> int:
    ((rows,),) = instance.execute(
        "SELECT n_rows FROM mysql.innodb_table_stats WHERE database_name = %s AND table_name = %s",
        (schema, f"t#P#{partition}"),
    )
    return rows


def counted_rows(instance, schema: str, partition: str) -> int:
    return instance.execute(f"SELECT COUNT(*) FROM `{schema}`.t PARTITION ({partition})")[0][0]


CREATE = (
    "CREATE TABLE t (id INT NOT NULL, d DATE NOT NULL, note VARCHAR(100), PRIMARY KEY (id, d)) "
    "PARTITION BY RANGE (TO_DAYS(d)) ("
    "PARTITION p1 VALUES LESS THAN (TO_DAYS('2026-01-01')), "
    "PARTITION p2 VALUES LESS THAN (TO_DAYS('2026-02-01')), "
    "PARTITION pmax VALUES LESS THAN MAXVALUE)"
)


def test_an_update_loop_on_one_partition_is_never_stale(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        CREATE,
        "INSERT INTO t SELECT seq, '2025-12-15', 'a' FROM seq_1_to_900",
        "INSERT INTO t SELECT seq, '2026-01-15', 'a' FROM seq_1_to_900",
        "ANALYZE TABLE t",
    )
    server = make_server(mariadb)
    for round_ in range(4):
        # 20 rows UPDATEd 60 times: MODIFIED_COUNTER gains 1,200, past 20% of 900.
        for i in range(60):
            run(
                mariadb,
                schema,
                f"UPDATE t SET note = 'x{round_}{i}' WHERE d = '2026-01-15' AND id <= 20",
            )
        poll(server)
        assert statistics_rows(mariadb, schema, "p2") == counted_rows(mariadb, schema, "p2") == 900
        assert "staleness" not in findings(admin_client, server, schema, "t")
    stored = Partition.objects.get(table__schema=schema, table__name="t", name="p2")
    assert stored.modified_counter >= 1000  # the counter moved: the signal was there


def test_a_reorganize_that_leaves_statistics_far_off_is_said(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        CREATE,
        "INSERT INTO t SELECT seq, '2025-12-15', REPEAT('n', 90) FROM seq_1_to_30000",
        "INSERT INTO t SELECT seq, '2026-01-15', REPEAT('n', 90) FROM seq_1_to_30000",
        "INSERT INTO t SELECT seq, '2026-03-15', REPEAT('n', 90) FROM seq_1_to_20000",
        "ANALYZE TABLE t",
        # No background recalculation: the rewritten partitions keep empty statistics.
        "ALTER TABLE t STATS_AUTO_RECALC=0",
        "ALTER TABLE t REORGANIZE PARTITION pmax INTO ("
        "PARTITION p3 VALUES LESS THAN (TO_DAYS('2026-04-01')), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
    )
    time.sleep(1)
    assert statistics_rows(mariadb, schema, "p3") == 0
    assert counted_rows(mariadb, schema, "p3") == 20000
    server = make_server(mariadb)
    poll(server)

    finding = findings(admin_client, server, schema, "t")["staleness"]
    assert "p3: statistics say 0 rows, its file holds ~" in finding["message"]
    assert "REORGANIZE" in finding["message"]
    assert finding["fix"]["sql"].endswith("ANALYZE PARTITION `p3`")
    assert "never for UPDATEs" in finding["fix"]["advice"]

    run(mariadb, schema, "ALTER TABLE t ANALYZE PARTITION p3")
    poll(server)
    assert "staleness" not in findings(admin_client, server, schema, "t")


def test_a_yearly_table_without_a_catchall_warns_34_days_before_its_last_bound(
    mariadb, new_schema, make_server
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE sales (id INT NOT NULL, yr SMALLINT NOT NULL, PRIMARY KEY (id, yr)) "
        "PARTITION BY RANGE (yr) (PARTITION p2024 VALUES LESS THAN (2025), "
        "PARTITION p2025 VALUES LESS THAN (2026), PARTITION p2026 VALUES LESS THAN (2027))",
        "INSERT INTO sales SELECT seq, 2026 FROM seq_1_to_100",
        "ANALYZE TABLE sales",
    )
    poll(make_server(mariadb))
    table = PartitionedTable.objects.get(schema=schema, name="sales")
    states = [PartitionState.from_object(p) for p in Partition.objects.filter(table=table)]

    on_the_day = datetime(2026, 11, 28, 12, tzinfo=UTC)  # the issue's: inserts fail in 34 days
    runway = table_runway(table.method, table.expression, states, on_the_day)
    assert (runway.days_left, runway.span_days, runway.warning_days) == (34, 365, 45)
    finding = runway_finding(runway)
    assert finding.severity == "warning"
    assert finding.message.startswith("34 days left before inserts past the last bound")
    early = table_runway(table.method, table.expression, states, datetime(2026, 11, 16, tzinfo=UTC))
    assert runway_finding(early) is None  # 46 days: not yet
