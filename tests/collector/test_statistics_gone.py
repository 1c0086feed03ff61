"""A partition the server keeps no statistics row for shows unknown rows and sizes, not
the figures it had: EXCHANGE PARTITION moves the statistics row with the data, and with
STATS_AUTO_RECALC=0 InnoDB never writes the emptied partition a new one."""

import pytest

from partdash.metrics.models import Partition
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db


def stats_rows(instance, schema: str) -> dict[str, int]:
    rows = instance.execute(
        "SELECT table_name, n_rows FROM mysql.innodb_table_stats WHERE database_name = %s",
        (schema,),
    )
    return dict(rows)


def test_a_partition_emptied_by_exchange_without_statistics_shows_unknown_rows(
    mariadb, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT) STATS_AUTO_RECALC=0 PARTITION BY RANGE (id) "
        "(PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200))",
        "INSERT INTO t SELECT seq, seq FROM seq_1_to_150",
        "ANALYZE TABLE t",
        "CREATE TABLE e (id INT PRIMARY KEY, v INT) STATS_AUTO_RECALC=0",
    )
    server = make_server(mariadb)
    assert poll_server(server).ok
    stored = {p.name: p for p in Partition.objects.filter(table__schema=schema)}
    assert (stored["p0"].rows, stored["p1"].rows) == (99, 51)

    run(mariadb, schema, "ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE e")
    assert "t#P#p0" not in stats_rows(mariadb, schema)  # the server's side of the story
    assert run(mariadb, schema, "SELECT COUNT(*) FROM t PARTITION (p0)")[0][0] == 0
    assert poll_server(server).ok

    stored = {p.name: p for p in Partition.objects.filter(table__schema=schema, dropped_at=None)}
    p0, p1 = stored["p0"], stored["p1"]
    assert (p0.rows, p0.data_bytes, p0.index_bytes, p0.stats_updated_at) == (None,) * 4
    assert p0.file_bytes is not None  # what the other sources read is still shown
    assert p1.rows == 51  # the partition whose row is there keeps it
    table_id = p0.table_id
    shown = admin_client.get(f"/api/v1/tables/{table_id}/partitions/").json()
    assert [(p["name"], p["rows"]) for p in shown] == [("p0", None), ("p1", 51)]

    # Once analysed, the partition has a row again and shows its figures.
    run(mariadb, schema, "ANALYZE TABLE t")
    assert poll_server(server).ok
    assert Partition.objects.get(table_id=table_id, name="p0").rows == 0
