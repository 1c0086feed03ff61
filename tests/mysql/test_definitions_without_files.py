"""A definition change that moves no file is still seen: after an ALTER TABLE the server
counted but no changed signature explains, every table's definitions are read again
(`partdash.mysql.ddl`); partition DDL that moves files re-reads its own table only."""

import pytest

from partdash.collector.collect import RECHECK
from partdash.metrics.models import PartitionedTable
from partdash.mysql.ddl import definitions_may_have_moved
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db


def tablespaces(instance, schema: str) -> dict[str, int]:
    rows = instance.execute(
        "SELECT NAME, SPACE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE %s",
        (f"{schema}/%",),
    )
    return dict(rows)


def server_side(instance, schema: str, table: str) -> list[tuple]:
    """(method, expression, partition, description) as information_schema says."""
    return list(
        instance.execute(
            "SELECT PARTITION_METHOD, PARTITION_EXPRESSION, PARTITION_NAME, "
            "PARTITION_DESCRIPTION FROM information_schema.PARTITIONS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY PARTITION_ORDINAL_POSITION",
            (schema, table),
        )
    )


def stored(server, schema: str, table: str) -> list[tuple]:
    """The same, as partdash stored it."""
    t = PartitionedTable.objects.get(server=server, schema=schema, name=table)
    partitions = t.partitions.filter(dropped_at=None).order_by("ordinal")
    return [(t.method, t.expression, p.name, p.description) for p in partitions]


HASH = "CREATE TABLE {} (a INT, b INT) PARTITION BY HASH (a) PARTITIONS 2"
VERSIONED = (
    "CREATE TABLE v (id INT, x INT) WITH SYSTEM VERSIONING "
    "PARTITION BY SYSTEM_TIME INTERVAL 1 WEEK PARTITIONS 3"
)


def test_renaming_the_partitioning_column_moves_no_file_and_is_seen(
    mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    run(mariadb, schema, HASH.format("t"), HASH.format("bystander"))
    server = make_server(mariadb)
    assert poll_server(server).ok
    files = tablespaces(mariadb, schema)

    run(mariadb, schema, "ALTER TABLE t RENAME COLUMN a TO c")
    assert tablespaces(mariadb, schema) == files  # nothing a signature could see
    report = poll_server(server)

    assert stored(server, schema, "t") == server_side(mariadb, schema, "t")
    assert {row[1] for row in stored(server, schema, "t")} == {"`c`"}
    assert report.definitions_read >= 2  # every table: the ALTER could be any one's
    # Once read, the next poll reads none again.
    assert poll_server(server).definitions_read == 0


def test_a_new_system_time_interval_is_seen(mariadb, make_server, new_schema):
    schema = new_schema(mariadb)
    run(mariadb, schema, VERSIONED, "INSERT INTO v VALUES (1, 1)")
    server = make_server(mariadb)
    assert poll_server(server).ok
    before = stored(server, schema, "v")

    run(mariadb, schema, "ALTER TABLE v PARTITION BY SYSTEM_TIME INTERVAL 10 WEEK PARTITIONS 3")
    assert poll_server(server).ok

    after = stored(server, schema, "v")
    assert after == server_side(mariadb, schema, "v")
    assert [row[2] for row in after] == [row[2] for row in before]  # same names
    assert after != before  # new bounds


@pytest.mark.parametrize(
    ("create", "reorganize"),
    [
        (
            "CREATE TABLE t (a INT) PARTITION BY RANGE (a) "
            "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))",
            "REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES LESS THAN (30))",
        ),
        (
            "CREATE TABLE t (a INT) PARTITION BY LIST (a) "
            "(PARTITION p0 VALUES IN (1, 2), PARTITION p1 VALUES IN (3))",
            "REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES IN (3, 4))",
        ),
    ],
    ids=["range", "list"],
)
def test_reorganizing_into_same_named_partitions_rereads_that_table_only(
    mariadb, make_server, new_schema, create, reorganize
):
    schema = new_schema(mariadb)
    run(mariadb, schema, create, HASH.format("bystander"))
    server = make_server(mariadb)
    assert poll_server(server).ok
    before = stored(server, schema, "t")

    run(mariadb, schema, f"ALTER TABLE t {reorganize}")
    report = poll_server(server)

    assert stored(server, schema, "t") == server_side(mariadb, schema, "t") != before
    assert report.definitions_read == 1  # the new tablespace explains the one ALTER


def test_without_a_file_per_partition_a_rebuild_is_seen(mariadb_factory, make_server, new_schema):
    instance = mariadb_factory.get({"innodb_file_per_table": "OFF"})
    schema = new_schema(instance)
    run(
        instance,
        schema,
        "CREATE TABLE t (a INT) PARTITION BY RANGE (a) "
        "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))",
        "INSERT INTO t VALUES (1), (15)",
        "ANALYZE TABLE t",
    )
    server = make_server(instance)
    assert poll_server(server).ok
    assert tablespaces(instance, schema) == {}  # in the system tablespace: no signature

    run(
        instance,
        schema,
        "ALTER TABLE t REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES LESS THAN (30))",
    )
    assert poll_server(server).ok

    assert stored(server, schema, "t") == server_side(instance, schema, "t")
    assert stored(server, schema, "t")[1][3] == "30"


def test_tables_over_the_budget_are_read_by_the_next_polls(
    mariadb, make_server, new_schema, settings
):
    schema = new_schema(mariadb)
    names = ["t0", "t1", "t2"]
    run(mariadb, schema, *(HASH.format(name) for name in names))
    server = make_server(mariadb)
    assert poll_server(server).ok
    run(mariadb, schema, *(f"ALTER TABLE {name} RENAME COLUMN a TO c" for name in names))
    settings.PARTDASH_DEFINITIONS_PER_POLL = 1

    # The shared server may hold other tests' tables, due a read as well: poll until
    # this schema's are read, one definition a poll.
    waiting = PartitionedTable.objects.filter(server=server, schema=schema, signature=RECHECK)
    reports = []
    while len(reports) < 10 and (not reports or waiting.exists()):
        reports.append(poll_server(server))

    assert all(report.definitions_read == 1 for report in reports), reports
    assert len(reports) >= len(names) and not waiting.exists()
    for name in names:
        assert stored(server, schema, name) == server_side(mariadb, schema, name)
    assert poll_server(server).definitions_read == 0


STATUS = {
    "com_alter_table": "5",
    "com_truncate": "0",
    "com_create_table": "2",
    "com_rename_table": "0",
    "com_optimize": "0",
    "uptime": "100",
}


def status(**moved) -> dict:
    return {**STATUS, **{name: str(int(STATUS.get(name, 0)) + n) for name, n in moved.items()}}


@pytest.mark.parametrize(
    ("now", "changed", "due"),
    [
        (status(uptime=60), 0, False),  # no ALTER
        (status(uptime=60, com_alter_table=1), 1, False),  # one ALTER, one table moved
        (status(uptime=60, com_alter_table=2), 1, True),  # one ALTER moved nothing
        (status(uptime=60, com_alter_table=1, com_truncate=1), 1, True),  # TRUNCATE moved it
        (status(uptime=60, com_alter_table=1, com_create_table=1), 1, True),  # re-created
        (status(uptime=60, com_alter_table=1, com_rename_table=1), 5, True),  # renames swap
        (status(uptime=60, com_alter_table=1, com_optimize=1), 5, True),  # rebuilds many
        ({**status(com_alter_table=3), "uptime": "50"}, 9, True),  # restarted
        (status(uptime=60, com_alter_table=-1), 0, True),  # FLUSH STATUS
    ],
)
def test_which_alters_a_changed_signature_explains(now, changed, due):
    assert definitions_may_have_moved(STATUS, now, changed) is due


def test_without_counters_from_the_previous_poll_nothing_is_due():
    assert not definitions_may_have_moved(None, status(com_alter_table=1), 0)
    assert not definitions_may_have_moved({"uptime": "10"}, status(com_alter_table=1), 0)
