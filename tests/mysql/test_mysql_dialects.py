"""MySQL 5.7, 8.0 and 8.4 through the whole collector, against recorded result sets
(MySQL cannot run on these machines; MariaDB is tested against real servers)."""

import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.metrics.models import Partition, PartitionedTable
from partdash.metrics.store import PollStore
from partdash.mysql.connection import _session_settings
from partdash.mysql.dialects import MARIADB, MARIADB_OLD, MYSQL8, MYSQL57, dialect_for
from tests.recorded_mysql import RecordedSession, mysql57, mysql80


@pytest.mark.parametrize(
    ("flavor", "version", "dialect"),
    [
        ("mysql", "5.7.44-log", MYSQL57),
        ("mysql", "8.0.36", MYSQL8),
        ("mysql", "8.4.3", MYSQL8),
        ("mariadb", "10.5.27-MariaDB", MARIADB_OLD),
        ("mariadb", "10.11.19-MariaDB-0+deb12u1", MARIADB),
        ("mariadb", "5.5.5-10.6.20-MariaDB", MARIADB),
    ],
)
def test_each_version_gets_its_dialect(flavor, version, dialect):
    assert dialect_for(flavor, version) == dialect


def test_mysql_caps_statements_in_milliseconds_and_mariadb_in_seconds(settings):
    settings.PARTDASH_STATEMENT_TIMEOUT = 20
    assert "SET SESSION max_execution_time = 20000" in _session_settings("mysql")
    assert "SET SESSION max_statement_time = 20.0" in _session_settings("mariadb")


@pytest.mark.parametrize("recording", [mysql80, mysql57, lambda: mysql80("8.4.3")])
def test_a_mysql_poll_reads_every_partition_with_the_right_dialect(recording):
    flavor, version, results = recording()
    session = RecordedSession(flavor, version, results)
    collection = collect(session, CollectRequest(known={}))

    keys = sorted(key.partition for key in collection.partitions)
    assert keys == ["p2026", "p2027", "pmax"]
    p2026 = next(f for k, f in collection.partitions.items() if k.partition == "p2026")
    assert (p2026.rows, p2026.clustered_pages, p2026.file_bytes) == (1000, 5, 180224)
    assert (p2026.read_ops, p2026.write_ops, p2026.write_bytes) == (10, 30, 30 * 16384)
    p2027 = next(f for k, f in collection.partitions.items() if k.partition == "p2027")
    assert (p2027.modified_counter, p2027.autoinc) == (17, 251)
    assert collection.definitions[("shop", "orders")].method == "RANGE"
    assert collection.warnings == []


@pytest.mark.parametrize("recording", [mysql80, mysql57])
def test_a_mysql_poll_never_scans_all_partitions_nor_reads_reset_tables(recording):
    session = RecordedSession(*recording())
    collect(session, CollectRequest(known={}))
    for sql, args in session.queries:
        assert "_RESET" not in sql.upper()
        if "information_schema.PARTITIONS" in sql:
            assert "TABLE_SCHEMA = %s AND TABLE_NAME = %s" in sql
            assert args == ("shop", "orders")


def test_tablestats_are_not_read_when_switched_off(settings):
    settings.PARTDASH_READ_TABLESTATS = "off"
    session = RecordedSession(*mysql80())
    collection = collect(session, CollectRequest(known={}))
    assert not any("TABLESTATS" in sql for sql, _ in session.queries)
    assert all(f.modified_counter is None for f in collection.partitions.values())


@pytest.mark.parametrize(
    ("recording", "counted"),
    [
        (mysql80, "information_schema.INNODB_TABLESPACES"),
        (mysql57, "information_schema.INNODB_SYS_TABLES"),
    ],
)
@pytest.mark.parametrize(("cache", "read"), [("7", True), ("6", False)])
def test_tablestats_are_read_only_where_the_dictionary_cache_holds_every_table(
    recording, counted, cache, read
):
    """The recording's dictionary has 7 tables: with table_definition_cache 6 a read
    would load some again every time, so by default it is not read."""
    flavor, version, results = recording()
    variables = [
        (n, cache if n == "table_definition_cache" else v)
        for n, v in results["SHOW GLOBAL VARIABLES"]
    ]
    session = RecordedSession(flavor, version, results | {"SHOW GLOBAL VARIABLES": variables})
    collection = collect(session, CollectRequest(known={}))
    queries = " ".join(sql for sql, _ in session.queries)
    assert f"SELECT COUNT(*) FROM {counted}" in queries
    assert ("TABLESTATS" in queries) is read
    counters = sorted((f.modified_counter for f in collection.partitions.values()), key=str)
    assert counters == ([0, 0, 17] if read else [None, None, None])
    assert collection.tablestats_plan == ("read" if read else "uncached")


def test_mysql8_reads_the_data_dictionary_tables_and_57_the_sys_tables():
    eight = RecordedSession(*mysql80())
    collect(eight, CollectRequest(known={}))
    five = RecordedSession(*mysql57())
    collect(five, CollectRequest(known={}))
    eight_sql = " ".join(sql for sql, _ in eight.queries)
    five_sql = " ".join(sql for sql, _ in five.queries)
    assert "INNODB_TABLESPACES" in eight_sql and "INNODB_SYS_TABLESPACES" not in eight_sql
    assert "INNODB_SYS_TABLESPACES" in five_sql
    assert "ZIP_PAGE_SIZE" in eight_sql and "ZIP_PAGE_SIZE" in five_sql


def test_a_known_table_is_not_read_again(make_server):
    session = RecordedSession(*mysql80())
    first = collect(session, CollectRequest(known={}))
    second_session = RecordedSession(*mysql80())
    second = collect(second_session, CollectRequest(known=first.signatures))
    assert second.definitions == {}
    assert not any("PARTITIONS" in sql for sql, _ in second_session.queries)


@pytest.mark.django_db
def test_a_mysql8_poll_is_stored_like_a_mariadb_one(mariadb, make_server):
    server = make_server(mariadb, name="mysql8-recorded")
    collection = collect(RecordedSession(*mysql80()), CollectRequest(known={}))
    PollStore(server=server, collection=collection, poll_id="recorded-1", seconds=0.1).save()

    table = PartitionedTable.objects.get(server=server, schema="shop", name="orders")
    assert (table.method, table.partition_count) == ("RANGE", 3)
    partitions = list(Partition.objects.filter(table=table).order_by("ordinal"))
    assert [p.name for p in partitions] == ["p2026", "p2027", "pmax"]
    assert [p.description for p in partitions] == ["740000", "740365", "MAXVALUE"]
    assert [p.rows for p in partitions] == [1000, 250, 0]
    assert partitions[0].data_bytes == 5 * 16384
    assert partitions[0].allocated_bytes == 180224 - 4096
