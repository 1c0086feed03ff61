"""Reading the tablespace list and file I/O where they changed (issue 14) loses nothing:
after every kind of change, what the bucketed read returns equals a read of every row
made right after, and a poll that compares only the partitions that may have changed
stores what a full comparison stores."""

import time

import pymysql
import pytest

from partdash.collector.catalogue import FILE_IO, TABLESPACES
from partdash.collector.collect import collect
from partdash.collector.dialects import dialect_for
from partdash.collector.incremental import SourceMemory
from partdash.collector.service import known_signatures, poll_server
from partdash.collector.sources import file_io, tablespaces
from partdash.metrics.models import Partition
from partdash.metrics.store import PollStore
from partdash.servers.connection import open_session, target_for
from tests.sql import run
from tests.test_collector import flush_to_disk

TABLES = [
    "CREATE TABLE h (id INT PRIMARY KEY, v VARCHAR(200)) PARTITION BY HASH(id) PARTITIONS 24",
    "INSERT INTO h SELECT seq, REPEAT('x', 100) FROM seq_1_to_2400",
    "CREATE TABLE r (id INT PRIMARY KEY) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS "
    "THAN (100), PARTITION p1 VALUES LESS THAN (200), PARTITION pmax VALUES LESS THAN MAXVALUE)",
    "INSERT INTO r SELECT seq FROM seq_1_to_150",
    "CREATE TABLE s (id INT, d INT, PRIMARY KEY (id, d)) PARTITION BY RANGE (d) "
    "SUBPARTITION BY HASH (id) SUBPARTITIONS 3 (PARTITION a VALUES LESS THAN (10), "
    "PARTITION b VALUES LESS THAN MAXVALUE)",
    "INSERT INTO s SELECT seq, seq % 20 FROM seq_1_to_300",
]
# Each change, and the tables whose files it touches (flushed before reading).
CHANGES = [
    ("one HASH partition written", ["INSERT INTO h VALUES (2401, 'y'), (2425, 'y')"], ["h"]),
    ("a partition truncated", ["ALTER TABLE h TRUNCATE PARTITION p3"], ["h"]),
    (
        "a partition added",
        [
            "ALTER TABLE r REORGANIZE PARTITION pmax INTO (PARTITION p2 "
            "VALUES LESS THAN (300), PARTITION pmax VALUES LESS THAN MAXVALUE)"
        ],
        ["r"],
    ),
    ("a partition dropped", ["ALTER TABLE r DROP PARTITION p0"], ["r"]),
    ("HASH partitions coalesced", ["ALTER TABLE h COALESCE PARTITION 4"], ["h"]),
    ("a subpartitioned table written", ["INSERT INTO s VALUES (1000, 5), (1001, 15)"], ["s"]),
    ("a table renamed", ["RENAME TABLE s TO s2"], ["s2"]),
    ("a table dropped", ["DROP TABLE r"], []),
    ("nothing", [], []),
]


def full_and_bucketed(session, dialect, memory, schema):
    """A bucketed read, then a read of every row: (bucketed, full) per source, this
    schema's rows only (the server is shared with other tests)."""
    ours = f"/{schema}/"
    files = memory.read(session, dialect, TABLESPACES)
    io = memory.read(session, dialect, FILE_IO)
    all_files = tablespaces.read(session, dialect)
    all_io = file_io.read(session, True)

    def mine_files(rows):
        return sorted(row for row in rows if row.name.schema == schema)

    def mine_io(rows):
        return sorted(row for row in rows if row.path_key.startswith(schema + "\0"))

    assert ours  # (paths are matched by their key, which starts with the schema)
    return (mine_files(files), mine_io(io)), (mine_files(all_files), mine_io(all_io))


@pytest.mark.parametrize("full_read_seconds", [3600, 0])
def test_a_bucketed_read_equals_a_read_of_every_row_after_each_change(
    mariadb_ps, new_schema, settings, full_read_seconds
):
    settings.PARTDASH_FULL_READ_SECONDS = full_read_seconds
    schema = new_schema(mariadb_ps)
    run(mariadb_ps, schema, *TABLES)
    for table in ("h", "r", "s"):
        flush_to_disk(mariadb_ps, schema, table)
    memory = SourceMemory()
    target = target_for_instance(mariadb_ps)
    with open_session(target) as session:
        dialect = dialect_for(session.flavor, session.version)
        bucketed, full = full_and_bucketed(session, dialect, memory, schema)
        assert bucketed == full and len(full[0]) == 24 + 3 + 6
        for what, statements, touched in CHANGES:
            if statements:
                run(mariadb_ps, schema, *statements)
            for table in touched:
                flush_to_disk(mariadb_ps, schema, table)
            bucketed, full = full_and_bucketed(session, dialect, memory, schema)
            assert bucketed == full, what
            if full_read_seconds == 0:
                assert memory.touched[TABLESPACES.key] is None  # every row, every time
        # The last change was none: nothing of the tablespace list was read again.
        if full_read_seconds:
            assert memory.changed[TABLESPACES.key] == 0
            assert memory.fetched[TABLESPACES.key] == 0


def target_for_instance(instance):
    from partdash.servers.connection import Target

    return Target(instance.host, instance.port, "root", "", "disabled", "")


def stored_figures(server) -> dict:
    fields = (
        "file_bytes",
        "allocated_bytes",
        "space_id",
        "read_ops",
        "write_ops",
        "read_bytes",
        "write_bytes",
        "rows",
    )
    return {
        (p.table.schema, p.table.name, p.key): tuple(getattr(p, f) for f in fields)
        for p in Partition.objects.filter(table__server=server, dropped_at=None).select_related(
            "table"
        )
    }


def test_polls_that_compare_only_what_changed_store_what_a_full_poll_stores(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings
):
    """Committed polls (the memory of the previous poll is kept only on commit), so the
    store compares only the partitions the bucketed reads say may have changed."""
    schema = new_schema(mariadb_ps)
    run(mariadb_ps, schema, *TABLES)
    for table in ("h", "r", "s"):
        flush_to_disk(mariadb_ps, schema, table)
    from partdash.servers.models import Server

    server = Server(name="inc", host=mariadb_ps.host, port=mariadb_ps.port, user="root")
    server.set_password("")
    server.save()
    compared = []
    members = PollStore._members

    def spy(self, visit):
        compared.append(None if visit is None else len(visit))
        return members(self, visit)

    monkeypatch.setattr(PollStore, "_members", spy)
    # Statistics refreshed in the last seconds are read again by every poll (a refresh
    # may commit late); these tables were just filled, so that margin would name them all.
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
    assert poll_server(server).ok and poll_server(server).ok
    for what, statements, touched in CHANGES[:2] + CHANGES[5:6] + CHANGES[-1:]:
        if statements:
            run(mariadb_ps, schema, *statements)
        for table in touched:
            flush_to_disk(mariadb_ps, schema, table)
        report = poll_server(server)
        assert report.ok, what
        incremental = stored_figures(server)
        # The truth: the same server polled with every row read and every partition
        # compared (the process's memory turned off).
        settings.PARTDASH_INCREMENTAL_READS = False
        with open_session(target_for(server)) as session:
            everything = collect(session, known_signatures(server))
        settings.PARTDASH_INCREMENTAL_READS = True
        for key, figures in everything.partitions.items():
            if key.schema != schema:
                continue
            stored = incremental[(key.schema, key.table, figures.slot)]
            truth = (
                figures.file_bytes,
                figures.allocated_bytes,
                figures.space_id,
                figures.read_ops,
                figures.write_ops,
                figures.read_bytes,
                figures.write_bytes,
            )
            assert stored[:7] == truth, (what, key)
    # Quiet polls and small changes compared a few partitions, not all 33 of ours.
    # Two quiet polls a second apart (statistics' times have whole seconds: a refresh
    # in the second of the previous poll is read again once).
    time.sleep(1.1)
    assert poll_server(server).ok and poll_server(server).ok
    print(f"partitions compared per poll: {compared}")
    partial = [n for n in compared if n is not None]
    assert partial, compared
    assert compared[-1] is not None and compared[-1] < 10, compared


class RefusesAggregates:
    """A session whose server rejects the bucketed queries (say, a MySQL fork without
    one of their functions) and answers the plain ones."""

    def __init__(self, rows):
        self.plain = rows
        self.asked = []

    def rows(self, sql, args=()):
        self.asked.append(sql)
        if "BIT_XOR" in sql:
            raise pymysql.err.OperationalError(1305, "FUNCTION MD5 does not exist")
        return self.plain


def test_a_server_refusing_the_bucketed_queries_gets_every_row_read():
    session = RefusesAggregates([("shop/orders#P#p0", 7, 65536, 65536, 16384, 0, "Dynamic")])
    memory = SourceMemory()
    dialect = dialect_for("mariadb", "10.11.6-MariaDB")
    rows = memory.read(session, dialect, TABLESPACES)
    assert [(row.name.table, row.name.partition, row.file_bytes) for row in rows] == [
        ("orders", "p0", 65536)
    ]
    assert memory.touched[TABLESPACES.key] is None  # every partition may have changed
    assert len(session.asked) == 2  # the refused aggregate, then every row
