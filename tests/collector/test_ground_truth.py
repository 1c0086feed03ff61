"""Ground truth on real MariaDB servers: what a poll stores equals what the server says
(COUNT(*), .ibd sizes on disk, information_schema.PARTITIONS); a steady-state poll opens no
table; DDL re-reads only the table concerned; sources degrade one at a time; counters
survive resets; a retried poll stores nothing twice; retention keeps levels exact.

Every test works in its own schema on the shared servers and compares only its own tables.
"""

import os
import time
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.metrics.downsampling import downsample
from partdash.metrics.history import table_history
from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot
from partdash.metrics.store import PollStore, counter_rate
from partdash.mysql.catalogue import HIDDEN, Shortfall
from partdash.mysql.connection import Session, open_session, target_for
from partdash.mysql.sources import definitions
from partdash.mysql.sources.definitions import TableGone
from partdash.polling.service import known_signatures, poll_server
from tests import builders
from tests.services import MariaDB
from tests.sql import run

pytestmark = pytest.mark.django_db

# InnoDB's n_rows is exact while a partition's leaf pages fit in the statistics sample
# (innodb_stats_persistent_sample_pages = 20); larger ones are extrapolated from the
# sample. Measured on 10.11: 8,018 for the 8,000-row partition below (+0.2%), and 5,145
# for 5,000 wider rows in 27 pages (+2.9%); the partitions of up to 300 rows were exact.
EXACT_UP_TO_ROWS = 1000
ESTIMATE_TOLERANCE = 0.10
IO_FIELDS = ("read_ops", "write_ops", "read_bytes", "write_bytes")


def count(instance: MariaDB, schema: str, table: str, partition: str) -> int:
    return run(instance, schema, f"SELECT COUNT(*) FROM {table} PARTITION ({partition})")[0][0]


def opened_tables(instance: MariaDB) -> int:
    return int(instance.execute("SHOW GLOBAL STATUS LIKE 'Opened_tables'")[0][1])


def ibd(instance: MariaDB, schema: str, table: str, partition: Partition) -> str:
    name = f"{table}#P#{partition.name}"
    if partition.subpartition:
        name += f"#SP#{partition.subpartition}"
    return str(instance.datadir / schema / f"{name}.ibd")


def stored_table(server, schema: str, name: str) -> PartitionedTable:
    return PartitionedTable.objects.get(server=server, schema=schema, name=name)


def live(server, schema: str, name: str) -> dict[str, Partition]:
    """A table's live partitions, keyed `p0` or `p0#p0sp0`."""
    partitions = stored_table(server, schema, name).partitions.filter(dropped_at=None)
    return {p.name + (f"#{p.subpartition}" if p.subpartition else ""): p for p in partitions}


def information_schema(instance: MariaDB, schema: str, table: str) -> list[tuple]:
    return list(
        instance.execute(
            "SELECT PARTITION_NAME, IFNULL(SUBPARTITION_NAME, ''), PARTITION_ORDINAL_POSITION, "
            "SUBPARTITION_ORDINAL_POSITION, PARTITION_DESCRIPTION, PARTITION_METHOD, "
            "PARTITION_EXPRESSION, IFNULL(SUBPARTITION_METHOD, ''), "
            "IFNULL(SUBPARTITION_EXPRESSION, ''), DATA_LENGTH, INDEX_LENGTH "
            "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY 3, 4",
            (schema, table),
        )
    )


def api_table(client, server, schema: str, name: str) -> dict | None:
    rows = client.get(f"/api/v1/servers/{server.pk}/tables/").json()
    return next((t for t in rows if t["schema"] == schema and t["name"] == name), None)


def flush_to_disk(instance: MariaDB, schema: str, table: str) -> None:
    """Write the table's dirty pages to its files now (FLUSH ... FOR EXPORT)."""
    run(instance, schema, f"FLUSH TABLES {table} FOR EXPORT", "UNLOCK TABLES")


# -- 1. figures and definitions against ground truth ---------------------------------------

HASH_FILL = {"p0": 8000, "p1": 300, "p2": 25, "p3": 0}


def test_hash_partition_figures_equal_count_star_and_the_ibd_files(
    mariadb, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb)
    fills = [
        f"INSERT INTO t SELECT seq * 4 + {i}, REPEAT('x', 40) FROM seq_1_to_{rows}"
        for i, rows in enumerate(HASH_FILL.values())
        if rows
    ]
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40)) PARTITION BY HASH(id) PARTITIONS 4",
        *fills,
        "ANALYZE TABLE t",
    )
    server = make_server(mariadb)
    assert poll_server(server).ok

    partitions = live(server, schema, "t")
    truth = {row[0]: row for row in information_schema(mariadb, schema, "t")}
    assert list(partitions) == list(HASH_FILL)
    for name, partition in partitions.items():
        exact = count(mariadb, schema, "t", name)
        assert exact == HASH_FILL[name]
        if exact <= EXACT_UP_TO_ROWS:
            assert partition.rows == exact, name
        else:
            assert abs(partition.rows - exact) <= exact * ESTIMATE_TOLERANCE, name
        assert partition.file_bytes == os.path.getsize(ibd(mariadb, schema, "t", partition))
        assert (partition.data_bytes, partition.index_bytes) == truth[name][9:11]

    table = api_table(admin_client, server, schema, "t")
    assert (table["method"], table["expression"], table["partition_count"]) == ("HASH", "`id`", 4)
    for figure in ("rows", "data_bytes", "index_bytes", "file_bytes"):
        assert table[figure] == sum(getattr(p, figure) for p in partitions.values()), figure

    listed = admin_client.get(f"/api/v1/tables/{table['id']}/partitions/").json()
    assert [p["name"] for p in listed] == ["p0", "p1", "p2", "p3"]
    assert [p["ordinal"] for p in listed] == [1, 2, 3, 4]
    assert sum(p["row_share"] for p in listed) == pytest.approx(1.0)
    assert listed[3]["row_share"] == 0


DEFINED_TABLES = {
    "by_year": (
        "CREATE TABLE by_year (d DATE NOT NULL) "
        "PARTITION BY RANGE (YEAR(d)) SUBPARTITION BY HASH (TO_DAYS(d)) SUBPARTITIONS 2 ("
        "PARTITION p0 VALUES LESS THAN (2024), PARTITION p1 VALUES LESS THAN (2025), "
        "PARTITION p2 VALUES LESS THAN MAXVALUE)"
    ),
    "by_region": (
        "CREATE TABLE by_region (region INT) PARTITION BY LIST (region) ("
        "PARTITION north VALUES IN (1, 2, NULL), PARTITION south VALUES IN (3))"
    ),
    "hashed": "CREATE TABLE hashed (id INT PRIMARY KEY) PARTITION BY HASH (id % 7) PARTITIONS 3",
}


def test_definitions_match_information_schema_partitions(mariadb, make_server, new_schema):
    schema = new_schema(mariadb)
    run(mariadb, schema, *DEFINED_TABLES.values())
    server = make_server(mariadb)
    assert poll_server(server).ok

    for name in DEFINED_TABLES:
        truth = information_schema(mariadb, schema, name)
        table = stored_table(server, schema, name)
        partitions = list(table.partitions.filter(dropped_at=None))
        assert (
            table.method,
            table.expression,
            table.subpartition_method,
            table.subpartition_expression,
        ) == truth[0][5:9]
        assert table.partition_count == len(truth)
        assert [
            (p.name, p.subpartition, p.ordinal, p.subpartition_ordinal, p.description)
            for p in partitions
        ] == [row[:5] for row in truth]
        for partition in partitions:
            assert partition.file_bytes == os.path.getsize(ibd(mariadb, schema, name, partition))

    by_year = live(server, schema, "by_year")
    assert list(by_year) == [f"p{p}#p{p}sp{s}" for p in range(3) for s in range(2)]
    assert by_year["p2#p2sp1"].description == "MAXVALUE"
    assert live(server, schema, "by_region")["north"].description == "NULL,1,2"
    assert {p.description for p in live(server, schema, "hashed").values()} == {None}


# -- 2. steady state -------------------------------------------------------------------------


def test_a_steady_state_poll_stores_nothing_and_opens_no_table(
    mariadb_factory, make_server, new_schema
):
    instance = mariadb_factory.get({"table_open_cache": 10, "performance_schema": "ON"})
    schema = new_schema(instance)
    tables = [f"t{i}" for i in range(16)]  # more than the table cache holds
    run(
        instance,
        schema,
        *(
            f"CREATE TABLE {t} (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 2"
            for t in tables
        ),
        *(f"INSERT INTO {t} SELECT seq FROM seq_1_to_10" for t in tables),
        f"ANALYZE TABLE {', '.join(tables)}",
    )
    server = make_server(instance)
    first = poll_server(server)
    assert first.definitions_read >= len(tables)
    samples = PartitionSample.objects.count()

    # The first poll's definition reads evicted the cheap sources' own tables
    # (mysql.innodb_table_stats, performance_schema.file_summary_by_instance) from the
    # 10-entry cache; the next poll brings them back, whatever the number of tables.
    before = opened_tables(instance)
    second = poll_server(server)
    reopened = opened_tables(instance) - before
    assert reopened < len(tables)
    assert (second.definitions_read, second.stored) == (0, 0)  # rates go from unknown to 0
    assert PartitionSample.objects.count() == samples

    before = opened_tables(instance)
    third = poll_server(server)
    assert opened_tables(instance) - before == 0
    assert (third.definitions_read, third.changed, third.stored) == (0, 0, 0)

    before = opened_tables(instance)
    instance.execute("SELECT * FROM information_schema.PARTITIONS")
    assert opened_tables(instance) - before >= len(tables) - 10


# -- 3. DDL re-reads only the table concerned -------------------------------------------------

RANGE_TABLE = (
    "CREATE TABLE {name} (id INT PRIMARY KEY) PARTITION BY RANGE (id) ("
    "PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), "
    "PARTITION p2 VALUES LESS THAN (30))"
)


def two_range_tables(instance: MariaDB, schema: str) -> None:
    """`t` (the one DDL is run on) and `bystander`, each with rows in every partition."""
    run(
        instance,
        schema,
        RANGE_TABLE.format(name="t"),
        RANGE_TABLE.format(name="bystander"),
        "INSERT INTO t SELECT seq FROM seq_1_to_29",
        "INSERT INTO bystander SELECT seq FROM seq_1_to_29",
        "ANALYZE TABLE t, bystander",
    )


def polled_two_range_tables(instance: MariaDB, make_server, new_schema):
    """`two_range_tables` in a new schema, its server registered and polled once."""
    schema = new_schema(instance)
    two_range_tables(instance, schema)
    server = make_server(instance)
    poll_server(server)
    return schema, server


@pytest.mark.parametrize(
    ("ddl", "names"),
    [
        ("ADD PARTITION (PARTITION p3 VALUES LESS THAN (40))", ["p0", "p1", "p2", "p3"]),
        ("DROP PARTITION p2", ["p0", "p1"]),
        (
            "REORGANIZE PARTITION p2 INTO (PARTITION p2a VALUES LESS THAN (25), "
            "PARTITION p2b VALUES LESS THAN (30))",
            ["p0", "p1", "p2a", "p2b"],
        ),
        ("TRUNCATE PARTITION p1", ["p0", "p1", "p2"]),
    ],
    ids=["add", "drop", "reorganize", "truncate"],
)
def test_partition_ddl_rereads_the_definitions_of_that_table_only(
    mariadb, make_server, new_schema, ddl, names
):
    schema, server = polled_two_range_tables(mariadb, make_server, new_schema)
    read_at = {t: stored_table(server, schema, t).definitions_read_at for t in ("t", "bystander")}

    run(mariadb, schema, f"ALTER TABLE t {ddl}")
    report = poll_server(server)

    assert report.definitions_read == 1
    assert stored_table(server, schema, "t").definitions_read_at > read_at["t"]
    assert stored_table(server, schema, "bystander").definitions_read_at == read_at["bystander"]
    assert list(live(server, schema, "t")) == names
    assert names == [row[0] for row in information_schema(mariadb, schema, "t")]
    assert stored_table(server, schema, "t").partition_count == len(names)
    dropped = Partition.objects.filter(table__schema=schema, table__name="t").exclude(
        dropped_at=None
    )
    assert {p.name for p in dropped} == {"p0", "p1", "p2"} - set(names)


def test_truncate_partition_gets_a_new_tablespace_and_its_figures_reset(
    mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY RANGE (id) ("
        "PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "INSERT INTO t SELECT seq FROM seq_1_to_8000",
        "ANALYZE TABLE t",
    )
    server = make_server(mariadb)
    poll_server(server)
    before = live(server, schema, "t")

    run(mariadb, schema, "ALTER TABLE t TRUNCATE PARTITION p1")
    report = poll_server(server)

    after = live(server, schema, "t")
    assert report.definitions_read == 1
    assert after["p1"].space_id != before["p1"].space_id  # 10.11: TRUNCATE makes a new file
    assert after["p1"].pk == before["p1"].pk  # the same partition: its history continues
    assert before["p1"].rows > 0
    assert after["p1"].rows == count(mariadb, schema, "t", "p1") == 0
    assert after["p1"].file_bytes == os.path.getsize(ibd(mariadb, schema, "t", after["p1"]))
    assert after["p1"].file_bytes < before["p1"].file_bytes
    assert after["p0"].space_id == before["p0"].space_id
    assert after["p0"].rows == before["p0"].rows == 9


def test_a_dropped_table_is_marked_dropped_and_leaves_the_api(
    mariadb, make_server, new_schema, admin_client
):
    schema, server = polled_two_range_tables(mariadb, make_server, new_schema)
    read_at = stored_table(server, schema, "bystander").definitions_read_at

    run(mariadb, schema, "DROP TABLE t")
    report = poll_server(server)

    assert report.definitions_read == 0
    assert stored_table(server, schema, "t").dropped_at is not None
    assert not Partition.objects.filter(table__schema=schema, table__name="t", dropped_at=None)
    assert api_table(admin_client, server, schema, "t") is None
    assert api_table(admin_client, server, schema, "bystander") is not None
    assert stored_table(server, schema, "bystander").definitions_read_at == read_at


def test_a_renamed_table_drops_the_old_name_and_appears_under_the_new(
    mariadb, make_server, new_schema, admin_client
):
    schema, server = polled_two_range_tables(mariadb, make_server, new_schema)
    read_at = stored_table(server, schema, "bystander").definitions_read_at

    run(mariadb, schema, "RENAME TABLE t TO t_renamed")
    report = poll_server(server)

    assert report.definitions_read == 1
    assert stored_table(server, schema, "t").dropped_at is not None
    assert api_table(admin_client, server, schema, "t") is None
    renamed = api_table(admin_client, server, schema, "t_renamed")
    assert (renamed["partition_count"], renamed["rows"]) == (3, 29)
    assert stored_table(server, schema, "bystander").definitions_read_at == read_at


# -- 4. per-source degradation ----------------------------------------------------------------

HASHED_4 = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100)) PARTITION BY HASH(id) PARTITIONS 4"
FILL_4 = "INSERT INTO t SELECT seq, REPEAT('x', 100) FROM seq_1_to_400"


def test_without_performance_schema_the_poll_is_degraded_and_io_is_unknown(
    mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    run(mariadb, schema, HASHED_4, FILL_4, "ANALYZE TABLE t")
    server = make_server(mariadb)
    poll_server(server)
    report = poll_server(server)

    server.refresh_from_db()
    assert report.ok and server.status == "degraded"
    assert any("performance_schema is OFF" in warning for warning in report.warnings)
    assert ServerSnapshot.objects.filter(server=server).latest().sources["file_io"] is False
    for partition in live(server, schema, "t").values():
        assert partition.rows == 100
        assert [getattr(partition, f) for f in IO_FIELDS] == [None] * 4
        assert (partition.read_bytes_per_s, partition.write_bytes_per_s) == (None, None)


def test_with_performance_schema_writes_show_as_counters_and_rates(
    mariadb_ps, make_server, new_schema
):
    schema = new_schema(mariadb_ps)
    run(mariadb_ps, schema, HASHED_4, FILL_4)
    flush_to_disk(mariadb_ps, schema, "t")
    server = make_server(mariadb_ps)
    poll_server(server)
    before = live(server, schema, "t")

    run(mariadb_ps, schema, "INSERT INTO t SELECT seq, 'y' FROM seq_1_to_2000 WHERE seq > 400")
    flush_to_disk(mariadb_ps, schema, "t")
    poll_server(server)

    for name, partition in live(server, schema, "t").items():
        assert partition.write_ops > before[name].write_ops > 0
        assert partition.write_bytes > before[name].write_bytes
        assert partition.write_bytes_per_s > 0
        assert partition.read_bytes_per_s >= 0


def create_account(instance: MariaDB, *grants: str) -> tuple[str, str]:
    user, password = f"mon_{uuid4().hex[:8]}", "mon-pw-" + uuid4().hex[:8]
    instance.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
    for grant in grants:
        instance.execute(f"GRANT {grant} TO '{user}'@'%'")
    return user, password


def as_account(server, user: str, password: str):
    server.user = user
    server.set_password(password)
    server.save()
    return server


FIGURES = ("ordinal", "description", "rows", "data_bytes", "index_bytes", "file_bytes")


def test_a_least_privilege_account_sees_the_same_figures_as_root(
    mariadb_ps, make_server, new_schema
):
    schema = new_schema(mariadb_ps)
    run(mariadb_ps, schema, HASHED_4, FILL_4, "ANALYZE TABLE t")
    user, password = create_account(
        mariadb_ps,
        "PROCESS ON *.*",
        "SELECT ON mysql.innodb_table_stats",
        "SELECT ON performance_schema.*",
        f"SELECT ON {schema}.*",
    )
    try:
        root = make_server(mariadb_ps, name="as-root")
        monitor = as_account(make_server(mariadb_ps, name="as-monitor"), user, password)
        assert poll_server(root).ok
        report = poll_server(monitor)
    finally:
        mariadb_ps.execute(f"DROP USER '{user}'@'%'")

    assert report.ok
    assert all(ServerSnapshot.objects.filter(server=monitor).latest().sources.values())
    expected = {n: [getattr(p, f) for f in FIGURES] for n, p in live(root, schema, "t").items()}
    seen = {n: [getattr(p, f) for f in FIGURES] for n, p in live(monitor, schema, "t").items()}
    assert seen == expected
    assert all(figures[2] == 100 for figures in seen.values())


def test_without_the_statistics_grant_partitions_still_come_from_the_tablespaces(
    mariadb_ps, make_server, new_schema
):
    schema = new_schema(mariadb_ps)
    run(mariadb_ps, schema, HASHED_4, FILL_4, "ANALYZE TABLE t")
    user, password = create_account(
        mariadb_ps, "PROCESS ON *.*", "SELECT ON performance_schema.*", f"SELECT ON {schema}.*"
    )
    try:
        server = as_account(make_server(mariadb_ps), user, password)
        report = poll_server(server)
    finally:
        mariadb_ps.execute(f"DROP USER '{user}'@'%'")

    server.refresh_from_db()
    assert report.ok and server.status == "degraded"
    assert any("GRANT SELECT ON mysql.innodb_table_stats" in warning for warning in report.warnings)
    partitions = live(server, schema, "t")
    assert list(partitions) == ["p0", "p1", "p2", "p3"]
    for partition in partitions.values():
        assert partition.rows is None
        assert partition.file_bytes == os.path.getsize(ibd(mariadb_ps, schema, "t", partition))


def test_a_table_the_account_may_not_see_gets_a_grant_hint_and_is_not_marked_dropped(
    mariadb, make_server, new_schema, admin_client
):
    shown, hidden = new_schema(mariadb), new_schema(mariadb)
    for schema in (shown, hidden):
        run(mariadb, schema, RANGE_TABLE.format(name="t"))
    user, password = create_account(
        mariadb,
        "PROCESS ON *.*",
        "SELECT ON mysql.innodb_table_stats",
        f"SELECT ON {shown}.*",
        f"SELECT ON {hidden}.*",
    )
    try:
        server = as_account(make_server(mariadb), user, password)
        poll_server(server)
        mariadb.execute(f"REVOKE SELECT ON {hidden}.* FROM '{user}'@'%'")
        run(mariadb, hidden, "ALTER TABLE t ADD PARTITION (PARTITION p3 VALUES LESS THAN (40))")
        report = poll_server(server)
    finally:
        mariadb.execute(f"DROP USER '{user}'@'%'")

    assert not [warning for warning in report.warnings if "dropped mid-poll" in warning]
    # The stored warning, every GRANT of it: the poll's one line shows the first few, the
    # schemas with most hidden tables first, and the account also sees (PROCESS) the
    # tables of the other tests' schemas on this shared MariaDB, hidden from it too.
    (snapshot,) = ServerSnapshot.objects.filter(server=server).order_by("-pk")[:1]
    hints = [Shortfall.from_dict(w) for w in snapshot.warnings if w["cause"] == HIDDEN]
    assert len(hints) == 1, snapshot.warnings
    assert (hidden, "t") in [tuple(table) for table in hints[0].tables]
    assert [fix for fix in hints[0].fixes if fix.startswith(f"GRANT SHOW VIEW ON `{hidden}`.* ")]
    assert not [table for table in hints[0].tables if table[0] == shown]
    assert stored_table(server, hidden, "t").dropped_at is None
    assert api_table(admin_client, server, hidden, "t") is not None
    assert list(live(server, shown, "t")) == ["p0", "p1", "p2"]


# -- 5. a table dropped mid-poll --------------------------------------------------------------


def test_reading_the_definitions_of_a_missing_table_raises_table_gone(
    mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    with open_session(target_for(make_server(mariadb))) as session:
        with pytest.raises(TableGone):
            definitions.read(session, schema, "no_such_table")
        with pytest.raises(TableGone):
            definitions.read(session, "no_such_schema", "t")


def test_a_table_dropped_before_its_definitions_are_read_is_reported_and_marked_dropped(
    mariadb, make_server, new_schema
):
    schema, server = polled_two_range_tables(mariadb, make_server, new_schema)
    run(mariadb, schema, "ALTER TABLE t ADD PARTITION (PARTITION p3 VALUES LESS THAN (40))")

    class DropsTheTableFirst(Session):
        """Loses the race: the table goes between the cheap sources and its definitions."""

        def rows(self, sql, args=()):
            if sql == definitions.PARTITIONS_SQL and args == (schema, "t"):
                mariadb.execute(f"DROP TABLE {schema}.t")
            return super().rows(sql, args)

    with open_session(target_for(server)) as session:
        racing = DropsTheTableFirst(session.conn, session.flavor, session.version)
        collection = collect(racing, CollectRequest(known_signatures(server)))
    PollStore(server=server, collection=collection, poll_id="race", seconds=0.0).save()

    assert f"table `{schema}`.`t` was dropped mid-poll" in collection.lines
    assert (schema, "t") in collection.gone
    assert stored_table(server, schema, "t").dropped_at is not None
    assert stored_table(server, schema, "bystander").dropped_at is None


# -- 6. counters across resets ----------------------------------------------------------------


def test_io_counters_reset_by_a_restart_never_give_negative_rates(make_server):
    with MariaDB({"performance_schema": "ON"}) as instance:
        instance.execute("CREATE DATABASE s")
        run(instance, "s", HASHED_4, FILL_4, "INSERT INTO t SELECT seq, 'z' FROM seq_401_to_3000")
        flush_to_disk(instance, "s", "t")
        server = make_server(instance, name="restarted")
        poll_server(server)
        before = live(server, "s", "t")

        instance.restart()
        server.port = instance.port
        server.save()
        poll_server(server)
        after = live(server, "s", "t")

    assert sum(p.write_bytes for p in after.values()) < sum(p.write_bytes for p in before.values())
    for partition in after.values():
        assert partition.read_bytes_per_s >= 0
        assert partition.write_bytes_per_s >= 0


@pytest.mark.parametrize(
    ("new", "old", "seconds", "rate"),
    [
        (150, 100, 10, 5.0),
        (30, 100, 10, 3.0),  # reset: what accumulated since
        (0, 100, 10, 0.0),
        (None, 100, 10, None),
        (100, None, 10, None),
        (150, 100, 0, None),
        (150, 100, None, None),
        (150, 100, -5, None),
    ],
)
def test_counter_rate(new, old, seconds, rate):
    assert counter_rate(new, old, seconds) == rate


# -- 7. idempotency ---------------------------------------------------------------------------


def test_a_retried_poll_id_stores_one_snapshot_and_no_duplicate_samples(
    mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    run(mariadb, schema, HASHED_4, FILL_4, "ANALYZE TABLE t")
    server = make_server(mariadb)
    poll_server(server)
    run(mariadb, schema, "INSERT INTO t SELECT seq, 'a' FROM seq_401_to_500", "ANALYZE TABLE t")
    assert poll_server(server, poll_id="same").stored > 0
    samples = PartitionSample.objects.count()

    run(mariadb, schema, "INSERT INTO t SELECT seq, 'b' FROM seq_501_to_600", "ANALYZE TABLE t")
    retried = poll_server(server, poll_id="same")

    assert retried.ok and retried.stored == 0
    assert ServerSnapshot.objects.filter(poll_id="same").count() == 1
    assert PartitionSample.objects.count() == samples


# -- 8. compression ---------------------------------------------------------------------------


def test_compressed_partitions_carry_their_compression_counters(
    mariadb_ps, make_server, new_schema
):
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE c (id INT PRIMARY KEY, v VARCHAR(200), KEY (v)) "
        "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 PARTITION BY HASH(id) PARTITIONS 2",
        "INSERT INTO c SELECT seq, REPEAT(MD5(seq), 4) FROM seq_1_to_5000",
        "ANALYZE TABLE c",
    )
    server = make_server(mariadb_ps)
    poll_server(server)

    per_index = mariadb_ps.execute(
        "SELECT table_name, SUM(compress_ops), SUM(compress_ops_ok) "
        "FROM information_schema.INNODB_CMP_PER_INDEX WHERE database_name = %s "
        "GROUP BY table_name",
        (schema,),
    )
    truth = {table.split("#")[-1]: (int(ops), int(ok)) for table, ops, ok in per_index}
    sizes = {row[0]: row[9:11] for row in information_schema(mariadb_ps, schema, "c")}
    partitions = live(server, schema, "c")
    for name, partition in partitions.items():
        assert (partition.row_format, partition.page_size) == ("Compressed", 8192)
        assert 0 < partition.compress_ops_ok <= partition.compress_ops
        assert (partition.compress_ops, partition.compress_ops_ok) == truth[name]  # both indexes
        assert (partition.data_bytes, partition.index_bytes) == sizes[name]  # in 8K pages
    cmp = ServerSnapshot.objects.filter(server=server).latest().innodb_cmp
    (cmp_8k,) = [row for row in cmp if row["page_size"] == 8192]
    assert cmp_8k["compress_ops"] >= sum(p.compress_ops for p in partitions.values())


def test_page_compressed_partitions_allocate_less_than_their_file_size(
    mariadb_ps, make_server, new_schema
):
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE pc (id INT PRIMARY KEY, v VARCHAR(200)) PAGE_COMPRESSED=1 "
        "PARTITION BY HASH(id) PARTITIONS 2",
        "INSERT INTO pc SELECT seq, REPEAT('a', 200) FROM seq_1_to_20000",
    )
    flush_to_disk(mariadb_ps, schema, "pc")
    server = make_server(mariadb_ps)
    poll_server(server)

    for partition in live(server, schema, "pc").values():
        stat = os.stat(ibd(mariadb_ps, schema, "pc", partition))
        assert partition.file_bytes == stat.st_size
        assert partition.allocated_bytes == stat.st_blocks * 512
        assert partition.allocated_bytes < partition.file_bytes


# -- 9. retention -----------------------------------------------------------------------------

NOW = datetime(2025, 6, 15, 12, 30, tzinfo=UTC)


def snapshot(server, taken_at: datetime, samples: dict) -> ServerSnapshot:
    """A stored poll with change-only samples: {partition: {figure: value}}."""
    poll = ServerSnapshot.objects.create(
        server=server, taken_at=taken_at, poll_id=uuid4().hex, flavor="mariadb", version="10.11"
    )
    for partition, figures in samples.items():
        PartitionSample.objects.create(partition=partition, snapshot=poll, **figures)
    return poll


def polls(server) -> list[tuple[datetime, str]]:
    return list(
        ServerSnapshot.objects.filter(server=server)
        .order_by("taken_at")
        .values_list("taken_at", "resolution")
    )


def sample_rows() -> list[tuple]:
    return list(
        PartitionSample.objects.order_by("snapshot__taken_at", "partition_id").values_list(
            "snapshot__taken_at", "partition_id", "rows", "data_bytes"
        )
    )


def level_at(points: list[list], stamp: str) -> list:
    """The values of a level history at `stamp` (carried forward from the last point)."""
    at = datetime.fromisoformat(stamp)
    return [p for p in points if datetime.fromisoformat(p[0]) <= at][-1][1:]


def test_downsampling_thins_old_polls_keeps_levels_and_is_idempotent():
    server = builders.server()
    table = PartitionedTable.objects.create(
        server=server, schema="s", name="t", method="RANGE", first_seen_at=NOW - timedelta(1000)
    )
    busy = Partition.objects.create(table=table, key="p0#", name="p0", ordinal=1)
    idle = Partition.objects.create(table=table, key="p1#", name="p1", ordinal=2)
    day = NOW.replace(hour=0, minute=0)
    expired = day - timedelta(days=800)
    snapshot(server, expired, {busy: {"rows": 1}, idle: {"rows": 7, "data_bytes": 16384}})
    daily = [day - timedelta(days=100, hours=-h) for h in (2, 5)]
    snapshot(server, daily[0], {busy: {"rows": 2}})
    snapshot(server, daily[1], {busy: {"rows": 3, "data_bytes": 16384}})
    hourly = [day - timedelta(days=10, minutes=-m) for m in (5, 20, 40)]
    snapshot(server, hourly[0], {busy: {"rows": 4}})
    snapshot(server, hourly[1], {busy: {"data_bytes": 32768}})
    snapshot(server, hourly[2], {busy: {"rows": 5}})
    recent = [NOW - timedelta(days=1, minutes=m) for m in (20, 10, 0)]
    for rows, taken_at in enumerate(recent, start=6):
        snapshot(server, taken_at, {busy: {"rows": rows}})
    since = NOW - timedelta(days=1000)
    history = {m: table_history(table, m, since)["points"] for m in ("rows", "data_bytes")}

    report = downsample(now=NOW)

    assert (report.thinned_to_hourly, report.thinned_to_daily, report.deleted) == (2, 1, 1)
    assert polls(server) == [
        (daily[1], "day"),
        (hourly[2], "hour"),
        *((t, "raw") for t in recent),
    ]
    assert sample_rows() == [
        (daily[1], busy.pk, 3, 16384),
        (daily[1], idle.pk, 7, 16384),  # the idle partition's level outlives its poll
        (hourly[2], busy.pk, 5, 32768),
        *((t, busy.pk, rows, None) for rows, t in enumerate(recent, start=6)),
    ]
    for metric, points in history.items():
        thinned = table_history(table, metric, since)["points"]
        assert thinned[-1][1:] == points[-1][1:]
        for stamp, *values in thinned:  # levels at the kept times are what they were
            assert values == level_at(points, stamp), (metric, stamp)

    kept_polls, kept_samples = polls(server), sample_rows()
    again = downsample(now=NOW)
    assert (again.thinned_to_hourly, again.thinned_to_daily, again.deleted) == (0, 0, 0)
    assert (polls(server), sample_rows()) == (kept_polls, kept_samples)


# -- 10. history API --------------------------------------------------------------------------


def test_the_rows_history_ends_at_the_partitions_count_star(
    mariadb, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb)
    run(mariadb, schema, "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 3")
    server = make_server(mariadb)
    poll_server(server)
    since = ServerSnapshot.objects.filter(server=server).latest().taken_at.isoformat()
    for batch in ("seq_1_to_50", "seq_51_to_80"):
        run(mariadb, schema, f"INSERT INTO t SELECT seq FROM {batch}", "ANALYZE TABLE t")
        poll_server(server)
    url = f"/api/v1/tables/{stored_table(server, schema, 't').pk}/history/"

    history = admin_client.get(url, {"metric": "rows", "since": since}).json()

    assert history["partitions"] == ["p0", "p1", "p2"]
    points = history["points"]
    assert points[-1][1:] == [count(mariadb, schema, "t", p) for p in ("p0", "p1", "p2")]
    assert [sum(point[1:]) for point in points] == [0, 50, 80]
    assert admin_client.get(url, {"metric": "bogus"}).status_code == 400
    assert admin_client.get(url, {"metric": "rows", "since": "yesterday"}).status_code == 400


class CountingSession(Session):
    """A real session that remembers how many statistics rows each poll fetched."""

    fetched: list[int] = []

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        rows = super().rows(sql, args)
        if "mysql.innodb_table_stats" in sql and "UNIX_TIMESTAMP" in sql:
            CountingSession.fetched.append(len(rows))
        return rows


def test_steady_polls_read_only_statistics_rows_refreshed_since_the_last_poll(
    mariadb, make_server, new_schema, monkeypatch
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE a (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8",
        "CREATE TABLE b (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8",
    )
    server = make_server(mariadb, name="incremental")
    assert poll_server(server).ok  # the first poll reads every row
    snapshot = ServerSnapshot.objects.filter(server=server).latest()
    assert snapshot.files_cover_partitions and snapshot.stats_watermark

    # As if the last poll saw statistics up to now and every row were a day old; then
    # refresh one table's statistics.
    run(
        mariadb,
        schema,
        "UPDATE mysql.innodb_table_stats SET last_update = NOW() - "
        f"INTERVAL 1 DAY WHERE database_name = '{schema}'",
    )
    now = mariadb.execute("SELECT UNIX_TIMESTAMP()")[0][0]
    ServerSnapshot.objects.filter(pk=snapshot.pk).update(stats_watermark=now)
    run(mariadb, schema, "INSERT INTO a SELECT seq FROM seq_1_to_40", "ANALYZE TABLE a")

    monkeypatch.setattr("partdash.polling.service.open_session", counting_session)
    CountingSession.fetched = []
    assert poll_server(server).ok
    fetched_after_refresh = CountingSession.fetched[-1]
    all_rows = mariadb.execute(
        "SELECT COUNT(*) FROM mysql.innodb_table_stats WHERE table_name LIKE '%#P#%'"
    )[0][0]
    assert fetched_after_refresh == 8 < all_rows  # table a's partitions only
    assert sum(p.rows for p in live(server, schema, "a").values()) == 40
    assert sum(p.rows for p in live(server, schema, "b").values()) == 0

    # Once nothing is refreshed, a poll reads no statistics rows at all: the watermark
    # is the server's clock, not the newest refresh (which would re-read its last
    # seconds on every poll).
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
    time.sleep(1.1)  # past the second of the refresh
    assert poll_server(server).ok
    assert poll_server(server).ok
    assert CountingSession.fetched[-1] == 0
    assert sum(p.rows for p in live(server, schema, "a").values()) == 40


def counting_session(target, *deadline):
    from contextlib import contextmanager

    from partdash.mysql import connection

    @contextmanager
    def wrapped():
        with connection.open_session(target, *deadline) as session:
            yield CountingSession(session.conn, session.flavor, session.version)

    return wrapped()
