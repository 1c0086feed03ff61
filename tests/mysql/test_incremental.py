"""Reading the tablespace list and file I/O where they changed (issue 14) loses nothing:
after every kind of change, what the bucketed read returns equals a read of every row
made right after, and a poll that compares only the partitions that may have changed
stores what a full comparison stores."""

import logging
import time
from collections import Counter

import pymysql
import pytest

from partdash.collector import collect as collect_module
from partdash.collector import comparing
from partdash.collector.collect import CollectRequest, collect
from partdash.metrics.models import Partition
from partdash.metrics.store import PollStore
from partdash.mysql.catalogue import FILE_IO, TABLESPACES
from partdash.mysql.connection import open_session, target_for
from partdash.mysql.dialects import dialect_for
from partdash.mysql.incremental import (
    FILE_IO_COLUMNS,
    FILE_IO_COUNTED_SQL,
    SHAPES,
    SourceMemory,
    file_io_same,
)
from partdash.mysql.sources import file_io, tablespaces
from partdash.polling.memory import PollMemories, StoredPoll
from partdash.polling.service import known_signatures, poll_server
from tests.collector.test_ground_truth import flush_to_disk
from tests.sql import run

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
    schema's rows only (the server is shared with other tests), file I/O's as hashed."""
    ours = f"/{schema}/"
    files = memory.read(session, dialect, TABLESPACES)
    io = memory.read(session, dialect, FILE_IO)
    all_files = tablespaces.read(session, dialect)
    all_io = file_io.read(session, True)

    def mine_files(rows):
        return sorted(row for row in rows if row.name.schema == schema)

    # File rows as their aggregate hashes them: a flush's or a close's other operations
    # may move between the two reads without reaching a quantum (`file_io_same`).
    same = file_io_same(FILE_IO_COLUMNS)

    def mine_io(rows):
        return sorted(same(row) for row in rows if row.path_key.startswith(schema + "\0"))

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
    from partdash.mysql.connection import Target

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


def assert_stored_is_the_truth(server, schema: str, settings, what: str, quantum=None) -> None:
    """The stored figures of `schema`'s partitions are what the same server polled with
    every row read and every partition compared (the process's memory turned off) says;
    with `quantum`, page reads only to their quantum (a server just started reads pages
    of its own between the two)."""
    incremental = stored_figures(server)
    settings.PARTDASH_INCREMENTAL_READS = False
    with open_session(target_for(server)) as session:
        everything = collect(session, CollectRequest(known_signatures(server)))
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
        if quantum:
            stored = (*stored[:3], stored[3] // quantum, stored[4], None, stored[6])
            truth = (*truth[:3], truth[3] // quantum, truth[4], None, truth[6])
        assert stored[:7] == truth, (what, key)


def new_server(instance, name: str):
    from partdash.servers.models import Server

    server = Server(name=name, host=instance.host, port=instance.port, user="root")
    server.set_password("")
    server.save()
    return server


def stored_space_ids(server, schema: str) -> dict:
    """(table, partition key) -> space id of the schema's live partitions, as stored."""
    live = Partition.objects.filter(
        table__server=server, table__schema=schema, table__dropped_at=None, dropped_at=None
    )
    return {
        (table, key): space
        for table, key, space in live.values_list("table__name", "key", "space_id")
    }


def server_space_ids(instance, schema: str) -> dict:
    """The same, as the server's tablespace list says now."""
    from partdash.metrics.store import partition_key
    from partdash.mysql.dialects import MARIADB

    with open_session(target_for_instance(instance)) as session:
        rows = [r for r in tablespaces.read(session, MARIADB) if r.name.schema == schema]
    return {
        (r.name.table, partition_key(r.name.partition, r.name.subpartition)): r.space_id
        for r in rows
    }


def sources_of(server) -> SourceMemory:
    """What this process's poll memory holds of the server's wide sources."""
    from partdash.polling import service

    held = service.MEMORIES.held(server.pk)
    assert held is not None and held.sources is not None
    return held.sources


def tables_and_server(instance, new_schema, name: str):
    """A new schema holding TABLES, their statistics settled and flushed to disk, and a
    server polling it. Settled by ANALYZE, as the ground-truth tests do: else InnoDB
    recalculates the fill's statistics in the background about 10 s after it (its
    minimum interval between two recalculations of a table), which on a loaded machine
    lands in a later poll, whose store rightly compares every refreshed partition (issue
    44: 22 of 33 compared, each for its statistics refreshed)."""
    schema = new_schema(instance)
    run(instance, schema, *TABLES, "ANALYZE TABLE h, r, s")
    for table in ("h", "r", "s"):
        flush_to_disk(instance, schema, table)
    return schema, new_server(instance, name)


def test_polls_that_compare_only_what_changed_store_what_a_full_poll_stores(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings, caplog
):
    """Committed polls (the memory of the previous poll is kept only on commit), so the
    store compares only the partitions the bucketed reads say may have changed. Should
    a poll compare more, the message says why (the product's `comparing` log)."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "inc")
    caplog.set_level(logging.DEBUG, logger=comparing.__name__)
    compared = []
    why: list[Counter] = []  # per poll, this schema's compared partitions by reason
    lines: list[list[str]] = []  # per poll, the product's line for each of them
    members = PollStore._members

    def spy(self, visit):
        # This schema's partitions only: the server is shared with the tests before this
        # one, whose tables InnoDB may still be flushing or purging (their files' counters
        # move, so a poll rightly compares them; issue 44 saw 22 compared).
        compared.append(None if visit is None else len([k for k in visit if k.schema == schema]))
        ours = [r for r in caplog.records if getattr(r, "partition", ("",))[0] == schema]
        why.append(Counter(reason for record in ours for reason in record.reasons))
        lines.append([record.getMessage() for record in ours])
        caplog.clear()
        return members(self, visit)

    monkeypatch.setattr(PollStore, "_members", spy)
    adopted = []
    adopt = collect_module.Reuse.adopt

    def spy_adopt(self, collection, touched):
        adopted.append(adopt(self, collection, touched))
        return adopted[-1]

    monkeypatch.setattr(collect_module.Reuse, "adopt", spy_adopt)
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
        assert_stored_is_the_truth(server, schema, settings, what)
    # Quiet polls and small changes compared a few partitions, not all 33 of ours.
    # Two quiet polls a second apart (statistics' times have whole seconds: a refresh
    # in the second of the previous poll is read again once).
    time.sleep(1.1)
    assert poll_server(server).ok and poll_server(server).ok
    print(f"partitions compared per poll: {compared}")
    print(f"why, per poll: {why}")
    partial = [n for n in compared if n is not None]
    assert partial, compared
    explained = (
        f"partitions compared per poll: {compared}; why, per poll: {why}; "
        + "the last poll's: "
        + " | ".join(lines[-1])
    )
    assert compared[-1] is not None and compared[-1] < 10, explained
    # Polls that found the tablespace list unchanged updated the previous poll's
    # partitions in place (and still stored the truth above); the others built anew.
    print(f"previous partitions reused: {adopted}")
    assert adopted[-1] and not adopted[0], adopted


class RefusesAggregates:
    """A session whose server rejects the bucketed queries (say, a MySQL fork without
    one of their functions) and answers the plain ones."""

    def __init__(self, rows):
        self.plain = rows
        self.asked = []

    def rows(self, sql, args=()):
        self.asked.append(sql)
        if "BIT_XOR" in sql:
            raise pymysql.err.OperationalError(1305, "FUNCTION SHA1 does not exist")
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


def test_file_reads_are_read_again_when_their_quantum_moves(mariadb_ps, new_schema, settings):
    """File I/O's aggregate hashes a file's net reads (2 x COUNT_READ - COUNT_MISC) by
    twice PARTDASH_MIN_SAMPLED_READS and its reads by COARSE_QUANTA of it: the header
    page each reopen of its table reads (with its close and open) leaves the bucket
    alone, and so would a few page reads (the store samples neither); a quantum of page
    reads, the coarse quanta of reopens, or any write reads the file again. A real
    server's aggregate over a table shaped like file_summary_by_instance (its counters
    unsigned, as there: the net reads of a file may be negative), counters set at will."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    schema = new_schema(mariadb_ps)
    paths = [f"/data/shop/orders#P#p{i}.ibd" for i in range(200)]
    counter = "BIGINT UNSIGNED NOT NULL"
    run(
        mariadb_ps,
        schema,
        f"CREATE TABLE files (FILE_NAME VARCHAR(200) PRIMARY KEY, COUNT_READ {counter}, "
        f"COUNT_WRITE {counter}, SUM_NUMBER_OF_BYTES_READ {counter}, "
        f"SUM_NUMBER_OF_BYTES_WRITE {counter}, SUM_TIMER_READ {counter}, COUNT_MISC {counter})",
        "INSERT INTO files VALUES "
        + ", ".join(
            f"('{path}', {16 * i}, 1, {16 * i * 16384}, 16384, {16 * i * 10**7}, 4)"
            for i, path in enumerate(paths)
        ),
    )
    sql = f"SELECT {FILE_IO_COLUMNS} FROM `{schema}`.files WHERE (FILE_NAME LIKE '%%#P#%%')"
    shape = SHAPES[FILE_IO.key]
    memory = SourceMemory()
    quanta = file_io_same(FILE_IO_COLUMNS)

    def read():
        rows = {row.path_key: row for row in memory._read(session, shape, sql)}
        truth = {row.path_key: row for row in file_io.parse(session.rows(sql))}
        return rows, truth

    def path_key(partition):
        return f"shop\0orders\0{partition}\0"  # names.file_path_key's

    with open_session(target_for_instance(mariadb_ps)) as session:
        rows, truth = read()
        assert rows == truth and memory.touched[FILE_IO.key] is None  # the first read
        assert truth[path_key("p0")].misc_ops == 4  # net reads -4: the server took it signed
        # Every table reopened 3 times: a header page read, a close and an open each.
        run(
            mariadb_ps,
            schema,
            "UPDATE files SET COUNT_READ = COUNT_READ + 3, COUNT_MISC = COUNT_MISC + 6, "
            "SUM_NUMBER_OF_BYTES_READ = SUM_NUMBER_OF_BYTES_READ + 3 * 16384, "
            "SUM_TIMER_READ = SUM_TIMER_READ + 3 * 10000000",
        )
        rows, truth = read()
        assert memory.changed[FILE_IO.key] == 0 and memory.fetched[FILE_IO.key] == 0
        for key, row in truth.items():  # the same but for reads no quantum moved with
            kept = rows[key]
            assert quanta(kept) == quanta(row) and kept.read_ops + 3 == row.read_ops
            assert kept.read_wait_us < row.read_wait_us  # (moves with the reads: not hashed)
        # One file read 16 pages more, one reopened 128 times (a coarse quantum), one
        # written, one closed (its other operations alone: no quantum moves).
        run(
            mariadb_ps,
            schema,
            f"UPDATE files SET COUNT_READ = COUNT_READ + 16 WHERE FILE_NAME = '{paths[5]}'",
            "UPDATE files SET COUNT_READ = COUNT_READ + 128, COUNT_MISC = COUNT_MISC + 256 "
            f"WHERE FILE_NAME = '{paths[6]}'",
            f"UPDATE files SET COUNT_WRITE = 2 WHERE FILE_NAME = '{paths[7]}'",
            f"UPDATE files SET COUNT_MISC = COUNT_MISC + 1 WHERE FILE_NAME = '{paths[9]}'",
        )
        rows, truth = read()
        assert 1 <= memory.changed[FILE_IO.key] <= 3  # three buckets, or fewer holding them
        assert rows[path_key("p5")].read_ops == truth[path_key("p5")].read_ops == 16 * 5 + 19
        assert rows[path_key("p6")].read_ops == truth[path_key("p6")].read_ops == 16 * 6 + 131
        assert rows[path_key("p7")].write_ops == 2
        touched = {row.path_key for row in memory.touched[FILE_IO.key]}
        assert {path_key("p5"), path_key("p6"), path_key("p7")} <= touched
        assert path_key("p9") not in touched and len(touched) < 40


def test_the_server_hashes_the_read_quanta_the_store_compares(mariadb_ps, new_schema):
    """The server's quotients (`read_quanta_sql`, unsigned counters as performance_schema
    has them) split files exactly where Python's (`read_quanta`) do, negative net reads
    (a file flushed more than read) included: the store never keeps what the aggregate
    would read again, nor the reverse."""
    schema = new_schema(mariadb_ps)
    counter = "BIGINT UNSIGNED NOT NULL"
    pairs = [(reads, misc) for reads in range(0, 300, 7) for misc in range(0, 700, 5)]
    run(
        mariadb_ps,
        schema,
        f"CREATE TABLE files (COUNT_READ {counter}, COUNT_MISC {counter})",
        "INSERT INTO files VALUES " + ", ".join(f"({r}, {m})" for r, m in pairs),
    )
    for quantum in (2, 16, 100):
        rows = run(
            mariadb_ps,
            schema,
            f"SELECT COUNT_READ, COUNT_MISC, {file_io.read_quanta_sql(quantum)} FROM files",
        )
        server = {(int(r), int(m)): (int(net), int(coarse)) for r, m, net, coarse in rows}
        assert len(server) == len(pairs)
        python = {pair: file_io.read_quanta(*pair, quantum) for pair in pairs}
        # One-to-one: equal on the server exactly where equal in Python, in the same order.
        mapping = {python[pair]: server[pair] for pair in pairs}
        assert len(set(mapping.values())) == len(mapping) == len(set(python.values()))
        assert all(server[pair] == mapping[python[pair]] for pair in pairs)
        nets = sorted(mapping)
        assert [mapping[n][0] for n in nets] == sorted(mapping[n][0] for n in nets)
        assert min(net for net, _ in python.values()) < 0  # (negative ones were compared)


def test_the_catalogue_reads_the_file_columns_whose_reads_are_hashed_by_quantum():
    assert FILE_IO.sql.startswith(f"SELECT {FILE_IO_COLUMNS} FROM ")


def test_a_memory_not_continuing_the_last_stored_poll_reads_file_io_in_full():
    """Another process's poll stored since: the reads remembered here may be a quantum
    behind what it stored, so file I/O is read in full (the tablespace list's rows are
    exact, and are kept); the previous poll's partitions are not reused either."""
    memory = SourceMemory()
    memory.sources = {TABLESPACES.key: "tablespaces", FILE_IO.key: "files"}
    memory.stored("poll-1")
    assert collect_module._begin(memory, "poll-1", "partitions") == ("poll-1", "partitions")
    assert set(memory.sources) == {TABLESPACES.key, FILE_IO.key}
    memory.stored("poll-2")
    assert collect_module._begin(memory, "poll-3", "partitions") == (None, None)
    assert set(memory.sources) == {TABLESPACES.key}
    assert memory.begin("poll-3") is None  # a failed poll stored nothing


def test_aggregates_cut_short_by_group_concat_max_len_are_read_row_by_row(mariadb_ps, new_schema):
    """The bucket aggregates arrive as one GROUP_CONCAT string; where the server cuts it
    (group_concat_max_len), one row per bucket is read instead, with the same result."""
    schema = new_schema(mariadb_ps)
    run(mariadb_ps, schema, *TABLES[:2])
    memory, cut = SourceMemory(), SourceMemory()
    with open_session(target_for_instance(mariadb_ps)) as session:
        dialect = dialect_for(session.flavor, session.version)
        whole = memory.read(session, dialect, TABLESPACES)
        assert memory.sources[TABLESPACES.key].digest  # one string
        session.rows("SET SESSION group_concat_max_len = 16")
        assert sorted(cut.read(session, dialect, TABLESPACES)) == sorted(whole)
        assert cut.sources[TABLESPACES.key].digest is None
        assert sorted(cut.read(session, dialect, TABLESPACES)) == sorted(whole)
        assert cut.fetched[TABLESPACES.key] == 0  # and still only what changed is read


def test_a_process_polling_after_another_one_did_stores_the_truth(
    transactional_db, mariadb_ps, new_schema, settings
):
    """Without the shared poll memory (switched off here; as after Redis lost it): a
    worker child polls a server, another child polls it next, then the first again: its
    remembered file reads may lag what the other stored by a few reads within their
    quantum, so it reads file I/O in full (the tablespace list only where it changed),
    rebuilds the partitions and compares every one; what it stores is the truth."""
    from partdash.polling import service

    settings.PARTDASH_SHARE_POLL_MEMORY = False
    schema, server = tables_and_server(mariadb_ps, new_schema, "two-children")
    assert poll_server(server).ok and poll_server(server).ok
    first = service.MEMORIES
    memory = sources_of(server)
    service.MEMORIES = PollMemories()  # the other child, which never polled it
    try:
        for rows in ("(5001, 'a'), (5002, 'b')", "(5003, 'c')"):
            run(mariadb_ps, schema, f"INSERT INTO h VALUES {rows}")
            flush_to_disk(mariadb_ps, schema, "h")
            assert poll_server(server).ok
        assert sources_of(server) is not memory
    finally:
        service.MEMORIES = first  # the first child again
    run(mariadb_ps, schema, "INSERT INTO h VALUES (5004, 'd')")
    flush_to_disk(mariadb_ps, schema, "h")
    assert poll_server(server).ok
    assert sources_of(server) is memory
    assert memory.touched[FILE_IO.key] is None  # file I/O read in full
    assert memory.touched[TABLESPACES.key] is not None  # the tablespaces where changed
    assert_stored_is_the_truth(server, schema, settings, "after another child's polls")
    assert poll_server(server).ok  # and the next poll continues its own again
    assert memory.touched[FILE_IO.key] is not None
    assert_stored_is_the_truth(server, schema, settings, "the next poll")


def test_a_table_without_tablespaces_of_its_own_is_seen_dropped(
    transactional_db, mariadb_factory, new_schema
):
    """With innodb_file_per_table=OFF a table's partitions live in the system tablespace:
    the tablespace list does not name them, so an unchanged list proves nothing, and the
    previous poll's partitions are not reused. A dropped table is seen dropped."""
    from partdash.metrics.models import PartitionedTable

    instance = mariadb_factory.get({"innodb_file_per_table": "OFF", "performance_schema": "ON"})
    schema = new_schema(instance)
    run(instance, schema, TABLES[0], TABLES[1], TABLES[2])
    server = new_server(instance, "system-tablespace")
    assert poll_server(server).ok and poll_server(server).ok and poll_server(server).ok
    tables = PartitionedTable.objects.filter(server=server, schema=schema)
    assert set(tables.filter(dropped_at=None).values_list("name", flat=True)) == {"h", "r"}
    run(instance, schema, "DROP TABLE r")
    assert poll_server(server).ok
    assert set(tables.filter(dropped_at=None).values_list("name", flat=True)) == {"h"}


def test_a_restarted_server_has_its_file_io_read_in_full(
    transactional_db, new_schema, settings, tmp_path
):
    """A restart starts every file counter again from zero, which a remembered quantum
    could hide (10 reads remembered, 3 now: the same quantum): the poll after it reads
    file I/O in full, and stores the truth."""
    from tests.services import MariaDB

    with MariaDB({"performance_schema": "ON"}) as instance:
        schema = new_schema(instance)
        run(instance, schema, *TABLES[:2])
        flush_to_disk(instance, schema, "h")
        server = new_server(instance, "restarted")
        assert poll_server(server).ok and poll_server(server).ok
        memory = sources_of(server)
        assert memory.touched[FILE_IO.key] is not None  # what changed only
        instance.restart()
        assert poll_server(server).ok
        assert memory.touched[FILE_IO.key] is None  # every row
        quantum = settings.PARTDASH_MIN_SAMPLED_READS
        assert_stored_is_the_truth(server, schema, settings, "after a restart", quantum)
        assert poll_server(server).ok
        assert memory.touched[FILE_IO.key] is not None


def test_a_start_time_that_moved_means_a_restart():
    from partdash.mysql.sources.server_facts import ServerFacts

    def facts(clock, uptime):
        return ServerFacts(status={"uptime": str(uptime)}, clock=clock)

    memory = SourceMemory()
    memory.sources = {TABLESPACES.key: "tablespaces", FILE_IO.key: "files"}
    assert not memory.restarted(facts(1000, 900))  # first seen: started at 100
    assert not memory.restarted(facts(1030, 929))  # read a moment apart: still 100-101
    assert FILE_IO.key in memory.sources
    assert memory.restarted(facts(1060, 5))  # started at 1055
    assert set(memory.sources) == {TABLESPACES.key}
    assert not memory.restarted(facts(1090, 35))
    assert not memory.restarted(ServerFacts(status={}, clock=1100))  # no uptime: unknown


def test_the_analysis_reads_what_the_poll_stored_without_reading_it_back(
    transactional_db, mariadb_ps, new_schema, monkeypatch
):
    """Each table's partitions, as the store hands them to the analysis from what it
    just wrote, equal what reading them back from the database gives (definition order,
    figures, recent activity), after writes, truncation, added and dropped partitions,
    subpartitions and renames."""
    from partdash.metrics import analysis
    from partdash.metrics.store import StoredFigures

    schema, server = tables_and_server(mariadb_ps, new_schema, "from-memory")
    handed, read_back, rebuilt = [], [], []
    partitions_of = StoredFigures.partitions_of

    def spy(self, table_ids):
        rebuilt.extend(table_id for table_id in table_ids if table_id in self.built)
        held = partitions_of(self, table_ids)
        handed.append(held)
        read_back.append(analysis._partitions_of(table_ids))
        return held

    monkeypatch.setattr(StoredFigures, "partitions_of", spy)
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
    assert poll_server(server).ok and poll_server(server).ok
    # Then writes to a few partitions, poll after poll (the partitions handed last time
    # are kept, and those whose rows the poll replaced are built again)...
    writes = [f"INSERT INTO h VALUES ({n}, 'w'), ({n + 7}, 'w')" for n in (5000, 6000, 7000)]
    steps = [(f"write {n}", [sql], ["h"]) for n, sql in enumerate(writes)]
    # ... and every kind of change.
    for what, statements, touched in steps + CHANGES:
        run(mariadb_ps, schema, *statements) if statements else None
        for table in touched:
            flush_to_disk(mariadb_ps, schema, table)
        assert poll_server(server).ok, what
    held = [(h, r) for h, r in zip(handed, read_back, strict=True) if h is not None]
    assert len(held) >= len(CHANGES), f"memory used in {len(held)} of {len(handed)} analyses"
    for from_memory, from_database in held:
        assert from_memory == from_database
    tables = {t for h, _ in held for t in h}
    assert len(tables) >= 3  # h, r and s (or s2) were all handed from memory at least once
    assert rebuilt, "no table was handed twice from one poll's memory to the next"


def test_the_tablespace_list_is_read_only_after_a_data_file_was_touched(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings
):
    """A poll whose file I/O proves that no data file was touched since the previous
    poll (`SourceMemory.files_untouched`) does not read the tablespace list, the largest
    query of a quiet poll. Every change to a tablespace touches a file: after each, the
    list is read again and the poll stores what a read of every row says (sizes, space
    ids, names)."""
    from partdash.mysql.connection import Session

    schema, server = tables_and_server(mariadb_ps, new_schema, "still")
    asked = []
    rows = Session.rows

    def spy(self, sql, args=()):
        asked.append(sql)
        return rows(self, sql, args)

    monkeypatch.setattr(Session, "rows", spy)
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)

    def poll_reads_tablespaces() -> bool:
        asked.clear()
        assert poll_server(server).ok
        return any("TABLESPACES" in sql for sql in asked)

    def a_quiet_poll_skips_them() -> bool:
        # The server is shared and has background work of its own (purge, statistics):
        # some polls see a file touched. One of a few quiet ones sees none.
        for _ in range(8):
            if not poll_reads_tablespaces():
                return True
            time.sleep(0.5)
        return False

    assert poll_reads_tablespaces()  # the first poll reads every source
    assert a_quiet_poll_skips_them()
    assert_stored_is_the_truth(server, schema, settings, "quiet")
    extend = "INSERT INTO h SELECT 100000 + seq * 24, REPEAT('z', 200) FROM seq_1_to_3000"
    create = (
        "CREATE TABLE n (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 4",
        "INSERT INTO n SELECT seq FROM seq_1_to_40",
    )
    steps = [
        ("a file extended", [extend], ["h"]),
        ("a table created", list(create), ["n"]),
        *[step for step in CHANGES if step[1]],
    ]
    for what, statements, touched in steps:
        run(mariadb_ps, schema, *statements)
        for table in touched:
            flush_to_disk(mariadb_ps, schema, table)
        assert poll_reads_tablespaces(), what
        assert_stored_is_the_truth(server, schema, settings, what)
        assert a_quiet_poll_skips_them(), what
        assert_stored_is_the_truth(server, schema, settings, f"quiet after {what}")
    # Files deleted and created again under their names, nothing flushed: the new file's
    # own row can equal the old one's (no page written yet), the server's totals cannot.
    again = [
        ("a partition truncated, nothing flushed", ["ALTER TABLE h TRUNCATE PARTITION p5"]),
        ("a table dropped and created again", ["DROP TABLE n", create[0]]),
    ]
    for what, statements in again:
        before = stored_space_ids(server, schema)
        run(mariadb_ps, schema, *statements)
        assert poll_reads_tablespaces(), what
        assert stored_space_ids(server, schema) != before, what
        assert stored_space_ids(server, schema) == server_space_ids(mariadb_ps, schema), what


class SetupTables:
    """A session answering the instrument and consumer check, counting the questions."""

    def __init__(self, instrument="YES", consumer="YES"):
        self.answer, self.asked = (instrument, consumer), 0

    def rows(self, sql, args=()):
        assert sql == FILE_IO_COUNTED_SQL
        self.asked += 1
        return [self.answer]


def test_the_tablespace_list_is_trusted_unread_only_while_every_file_is_counted(settings):
    from partdash.mysql.sources.server_facts import ServerFacts

    lost = "performance_schema_file_{}_lost"
    counted = ServerFacts(status={lost.format("instances"): "0", lost.format("handles"): "0"})
    memory = SourceMemory(files_still=True)
    session = SetupTables()
    assert memory.files_untouched(session, counted)
    assert memory.files_untouched(session, counted) and session.asked == 1  # once an hour
    assert not SourceMemory(files_still=False).files_untouched(session, counted)
    for name in ("instances", "handles"):  # a file performance_schema does not count
        facts = ServerFacts(status={**counted.status, lost.format(name): "3"})
        assert not memory.files_untouched(session, facts)
    assert not memory.files_untouched(session, ServerFacts())  # (status not known)
    for off in (SetupTables(instrument="NO"), SetupTables(consumer="NO")):
        assert not SourceMemory(files_still=True).files_untouched(off, counted)
    settings.PARTDASH_FULL_READ_SECONDS = 0  # the check is due again: the instrument is off
    assert not memory.files_untouched(SetupTables(instrument="NO"), counted)


class SetupAndWitness(SetupTables):
    """SetupTables that also answers the data files' witness, with `totals`."""

    def __init__(self, totals=(5, 9)):
        super().__init__()
        self.totals, self.witnessed = totals, 0

    def rows(self, sql, args=()):
        if sql == SHAPES[FILE_IO.key].witness:
            self.witnessed += 1
            return [self.totals]
        return super().rows(sql, args)


def test_a_data_file_certainly_touched_is_known_before_file_io_is_read():
    """`files_touched` (a second session is worth opening): the witness moved, a file is
    not counted, or nothing is remembered to compare with. The witness is read first in
    every case, before the tablespace list is read beside: it is the one file I/O then
    remembers (a witness read after the list could already count a file the list does
    not have, and the next poll would find both unchanged)."""
    from partdash.mysql.incremental import Buckets
    from partdash.mysql.sources.server_facts import ServerFacts

    lost = "performance_schema_file_{}_lost"
    counted = ServerFacts(status={lost.format("instances"): "0", lost.format("handles"): "0"})
    memory, session = SourceMemory(), SetupAndWitness()
    assert memory.files_touched(session, counted)  # nothing remembered
    assert session.witnessed == 1 and memory.looked == ((5, 9),)
    memory.sources[FILE_IO.key] = Buckets(4, {}, {}, time.monotonic(), "", (5, 9))
    memory.looked = None
    assert not memory.files_touched(session, counted) and session.witnessed == 2
    memory.looked = None
    moved = SetupAndWitness(totals=(5, 10))
    assert memory.files_touched(moved, counted) and moved.witnessed == 1
    memory.looked = None
    handles = ServerFacts(status={**counted.status, lost.format("handles"): "1"})
    session = SetupAndWitness()
    assert memory.files_touched(session, handles) and session.witnessed == 1


def test_a_process_forgets_the_least_recently_polled_servers_past_its_bound(settings):
    """What one worker child remembers is bounded (PARTDASH_REMEMBERED_PARTITIONS): past
    it, the servers it polled longest ago are forgotten, both their wide sources and
    their figures; the one just polled is kept even alone over the bound."""
    from partdash.servers.models import Server

    settings.PARTDASH_REMEMBERED_PARTITIONS = 100
    settings.PARTDASH_SHARE_POLL_MEMORY = False  # (in process only: nothing in Redis)
    memories = PollMemories()

    def polled(pk: int, partitions: int) -> set[int]:
        """A stored poll of server `pk`, which saw `partitions`: the servers remembered
        when it began, and after it."""
        server = Server(pk=pk, name=f"s{pk}", host="db", port=3306, partitions=partitions)
        memory = memories.load(server, None)
        memory.figures = object()  # (its stored figures, forgotten with it)
        began = memories.servers()
        memories.save(server, StoredPoll(memory, f"poll-{pk}", pk, partitions, None))
        assert memories.servers() == began  # (already made room for its size)
        return began

    assert polled(1, 60) == {1} and polled(2, 30) == {1, 2}
    assert polled(3, 30) == {2, 3}  # 120 partitions: the oldest goes
    assert polled(2, 30) == {2, 3}  # polled again: now the most recent
    assert polled(4, 20) == {2, 3, 4}
    assert polled(5, 30) == {2, 4, 5}  # 110: 3 is now the oldest
    assert polled(4, 90) == {4}  # the others go, the least recently polled first
    assert polled(4, 500) == {4}  # alone over the bound, kept
    assert memories.held(4) is not None and memories.held(4).figures is not None


def sessions_spied(monkeypatch) -> list:
    """(connection, thread name, SQL) of every query any session runs from now on."""
    import threading

    from partdash.mysql.connection import Session

    asked, rows = [], Session.rows

    def spy(self, sql, args=()):
        asked.append((id(self.conn), threading.current_thread().name, sql))
        return rows(self, sql, args)

    monkeypatch.setattr(Session, "rows", spy)
    return asked


def one_session_only(server, asked: list) -> bool:
    """Whether one of a few quiet polls uses a single session (the server is shared and
    has background work of its own: some polls see a file touched)."""
    for _ in range(8):
        if len({conn for conn, _, _ in asked}) == 1:
            return True
        asked.clear()
        time.sleep(0.5)
        assert poll_server(server).ok
    return False


def test_after_writes_the_tablespace_list_is_read_beside_file_io_on_a_second_session(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings
):
    """Once the server's totals of data file operations moved, the tablespace list is
    read whatever file I/O says: a poll reads it on a second session, in a thread, while
    its own reads file I/O (the two longest reads after writes). What it stores is what
    a read of every row says; a quiet poll opens no second session."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "beside")
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
    assert poll_server(server).ok
    asked = sessions_spied(monkeypatch)
    for what, statements, touched in CHANGES:
        asked.clear()
        if statements:
            run(mariadb_ps, schema, *statements)
        for table in touched:
            flush_to_disk(mariadb_ps, schema, table)
        assert poll_server(server).ok, what
        if not statements:  # nothing written: a second session would be wasted
            assert one_session_only(server, asked), what
        else:
            lists = {(conn, thread) for conn, thread, sql in asked if "TABLESPACES" in sql}
            files = {conn for conn, _, sql in asked if "file_summary_by_instance" in sql}
            (beside,) = lists
            assert beside[1].startswith("partdash-beside"), what
            assert beside[0] not in files, what
        assert_stored_is_the_truth(server, schema, settings, what)


def test_a_second_session_refused_reads_the_tablespace_list_on_the_polls_own(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings
):
    """An account allowed one connection (MAX_USER_CONNECTIONS 1) is refused the second
    session: the poll reads the list on its own session and stores the truth, and the
    next polls do not ask for a second session again before PARTDASH_FULL_READ_SECONDS."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "one-session")
    user, password = f"one_{server.pk}_{int(time.time()) % 100000}", "one-pw"
    mariadb_ps.execute(
        f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}' WITH MAX_USER_CONNECTIONS 1"
    )
    try:
        for grant in ("SELECT, PROCESS ON *.*", "SELECT ON performance_schema.*"):
            mariadb_ps.execute(f"GRANT {grant} TO '{user}'@'%'")
        server.user = user
        server.set_password(password)
        server.save()
        monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
        opened = []
        real_open = collect_module._Beside.__init__

        def counting(self, open_beside, memory, read):
            opened.append(True)
            real_open(self, open_beside, memory, read)

        monkeypatch.setattr(collect_module._Beside, "__init__", counting)
        assert poll_server(server).ok  # a first poll: every source, beside included
        assert_stored_is_the_truth(server, schema, settings, "first poll")
        for number in range(3):
            run(mariadb_ps, schema, f"INSERT INTO h VALUES ({3000 + number}, 'w')")
            flush_to_disk(mariadb_ps, schema, "h")
            report = poll_server(server)
            assert report.ok and not report.warnings, report
            assert_stored_is_the_truth(server, schema, settings, f"write {number}")
        assert opened == [True]  # tried once, refused, not again within the bound
    finally:
        mariadb_ps.execute(f"DROP USER IF EXISTS '{user}'@'%'")


def test_a_poll_waits_for_a_read_beside_that_a_failed_poll_left_running():
    """A poll that failed while its read beside was under way leaves that thread to end
    on its own; the server's next poll in the process waits for it before reading, as
    both write to the same memory."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    memory, release = SourceMemory(), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as executor:
        memory.in_flight = executor.submit(release.wait, 10)
        threading.Timer(0.3, release.set).start()
        started = time.monotonic()
        memory.begin()
        assert time.monotonic() - started >= 0.25
        assert memory.in_flight is None


def test_a_second_session_refused_falls_back_but_one_lost_fails_the_poll():
    """Refused on opening: the list is read on the poll's own session (and no second
    session is tried again for a while). Lost or timed out once open: the poll fails, as
    with its own session, rather than reading the list a second time."""
    from contextlib import contextmanager

    from partdash.mysql.connection import ConnectionFailure

    @contextmanager
    def refused():
        raise ConnectionFailure("too_many_connections", "127.0.0.1:3306: too many")
        yield

    @contextmanager
    def opened():
        yield "beside"

    def read(session):
        if session == "beside":
            raise ConnectionFailure("timeout", "127.0.0.1:3306: timed out")
        return [session]

    memory = SourceMemory()
    assert collect_module._Beside(refused, memory, read).rows("own") == ["own"]
    assert not memory.beside_allowed()
    memory = SourceMemory()
    with pytest.raises(ConnectionFailure, match="timed out"):
        collect_module._Beside(opened, memory, read).rows("own")
    assert memory.beside_allowed()


def speculations_spied(monkeypatch) -> list:
    """The outcome of every speculation from now on: "confirmed" or "refuted"."""
    from partdash.polling import service

    outcomes, store = [], service._store_analyse_evaluate

    def spy(server, collection, poll_id, seconds, memory=None):
        speculative = collection.speculation is not None
        try:
            result = store(server, collection, poll_id, seconds, memory)
        except collect_module.Refuted:
            outcomes.append("refuted")
            raise
        if speculative:
            outcomes.append("confirmed")
        return result

    monkeypatch.setattr(service, "_store_analyse_evaluate", spy)
    return outcomes


def samples_per_snapshot(server) -> dict:
    from django.db.models import Count

    from partdash.metrics.models import PartitionSample

    rows = PartitionSample.objects.filter(partition__table__server=server)
    by_pair = rows.values("snapshot_id", "partition_id").annotate(n=Count("id"))
    return {(r["snapshot_id"], r["partition_id"]): r["n"] for r in by_pair}


# Writes that grow a file (a tablespace row changes) without changing any partition.
GROW = "INSERT INTO h SELECT 24 * seq + 24000, REPEAT('g', 180) FROM seq_1_to_3000"


# The store's undo past which it confirms first: the default, and at once.
UNDO_LIMITS = pytest.mark.parametrize("undo_limit", [None, 1])


def speculating_server(instance, new_schema, monkeypatch, name: str, undo_limit):
    """A schema of TABLES and a server polled twice (its figures known), with the store's
    undo limit set and every speculation's outcome spied from now on: (schema, server,
    outcomes)."""
    if undo_limit:
        monkeypatch.setattr("partdash.metrics.store.UNDO_LIMIT", undo_limit)
    # A file to a bucket: with 8 (the default) the few files of a test server fill a few
    # buckets, and two written partitions can change half of them, which reads every row
    # and compares every partition (right, and cheap at that size) where these tests
    # check that only the partitions that may have changed are compared.
    monkeypatch.setattr("partdash.mysql.incremental.FILE_IO_ROWS_PER_BUCKET", 1)
    schema, server = tables_and_server(instance, new_schema, f"{name}-{undo_limit}")
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
    assert poll_server(server).ok and poll_server(server).ok
    return schema, server, speculations_spied(monkeypatch)


@UNDO_LIMITS
def test_after_writes_a_poll_stores_while_the_tablespace_list_is_read_and_loses_nothing(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings, undo_limit
):
    """A poll after writes stores, analyses and evaluates while its second session still
    reads the tablespace list, as if the list had not changed. Where it had (a file grown,
    a partition truncated, added, dropped, coalesced, a table renamed or dropped), the
    transaction rolls back and the poll stores it again: one snapshot per poll, one
    sample per partition and poll, and what is stored is what a read of every row says.
    A write that changes no tablespace row is confirmed and committed as it was stored;
    so too when the store, about to replace more figures than it keeps to put back,
    waits for the list first. After an ALTER TABLE the poll does not speculate: it waits
    for the list, which decides whose definitions are read (`mysql.ddl`)."""
    from partdash.metrics.models import ServerSnapshot

    schema, server, outcomes = speculating_server(
        mariadb_ps, new_schema, monkeypatch, "speculate", undo_limit
    )
    changes = [CHANGES[0], ("a file grown", [GROW], ["h"]), *CHANGES[1:-1]]
    for what, statements, touched in changes:
        outcomes.clear()
        snapshots = ServerSnapshot.objects.filter(server=server).count()
        run(mariadb_ps, schema, *statements)
        for table in touched:
            flush_to_disk(mariadb_ps, schema, table)
        assert poll_server(server).ok, what
        assert ServerSnapshot.objects.filter(server=server).count() == snapshots + 1, what
        assert set(samples_per_snapshot(server).values()) <= {1}, what
        assert_stored_is_the_truth(server, schema, settings, what)
        print(what, outcomes)
        if what.endswith("written"):
            assert outcomes == ["confirmed"], what  # no file grew: nothing to store again
        elif statements[0].startswith("ALTER TABLE"):
            assert outcomes == [], what  # after an ALTER, the poll waits for the list
        elif what != "a table dropped":  # (its files' list may be read before the drop)
            assert outcomes[:1] == ["refuted"], what


@UNDO_LIMITS
def test_a_refuted_speculation_leaves_the_memory_of_the_figures_as_it_was(
    transactional_db, mariadb_ps, new_schema, monkeypatch, settings, undo_limit
):
    """The store rolled back puts back what it changed in the process's memory of the
    server's figures: the poll stored again, and the polls after it, still compare only
    the partitions that may have changed, and store the truth."""
    from partdash.metrics.models import PartitionSample, ServerSnapshot

    schema, server, outcomes = speculating_server(
        mariadb_ps, new_schema, monkeypatch, "refuted", undo_limit
    )
    compared, members = [], PollStore._members

    def spy(self, visit):
        # This schema's partitions only: the server is shared with the tests before this
        # one, whose tables InnoDB may still be flushing or purging (their files' counters
        # move, so a poll rightly compares them; issue 44 saw 22 compared).
        compared.append(None if visit is None else len([k for k in visit if k.schema == schema]))
        return members(self, visit)

    monkeypatch.setattr(PollStore, "_members", spy)
    # p0's file grows; p13 is written within its file: stored by the rolled-back store.
    run(mariadb_ps, schema, GROW, "INSERT INTO h VALUES (99013, 'w')")
    flush_to_disk(mariadb_ps, schema, "h")
    assert poll_server(server).ok
    assert outcomes[:1] == ["refuted"], outcomes
    assert compared[0] is not None and compared[1] is not None, compared  # not every one
    assert_stored_is_the_truth(server, schema, settings, "a file grown")
    # Both written partitions were sampled by the poll that committed, with their rates
    # over the interval since the previous poll (not since the rolled-back store).
    latest = ServerSnapshot.objects.filter(server=server).latest("taken_at")
    for key in ("p0#", "p13#"):
        partition = Partition.objects.get(table__server=server, table__name="h", key=key)
        assert partition.write_bytes_per_s, key
        assert PartitionSample.objects.filter(partition=partition, snapshot=latest).exists(), key
    run(mariadb_ps, schema, "INSERT INTO h VALUES (99001, 'z')")
    flush_to_disk(mariadb_ps, schema, "h")
    compared.clear()
    assert poll_server(server).ok
    assert compared and None not in compared, compared
    assert_stored_is_the_truth(server, schema, settings, "a write after")


def test_a_speculation_is_refuted_by_a_changed_or_unreadable_list_and_waits_for_it():
    """`confirm` returns while the read beside is under way (unless told to wait), and
    once it ended raises `Refuted` when a tablespace row changed or the read failed."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from partdash.collector.collect import Refuted, Speculation

    class Beside(collect_module._Beside):
        def __init__(self, future):
            self.future, self.outcome, self.opened = future, None, True

    memory, release = SourceMemory(), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as executor:
        future = executor.submit(lambda: release.wait(10) and ["row"])
        speculation = Speculation(Beside(future), "session", memory, None)
        speculation.confirm(wait=False)  # still reading: nothing known yet
        memory.touched[TABLESPACES.key] = []
        threading.Timer(0.2, release.set).start()
        speculation.confirm()  # waited, and nothing changed
        assert future.done()
    for touched in (["a changed row"], None):
        memory.touched[TABLESPACES.key] = touched
        with pytest.raises(Refuted):
            speculation.confirm(wait=False)
    with ThreadPoolExecutor(max_workers=1) as executor:
        failing = executor.submit(lambda: 1 / 0)
        memory.touched[TABLESPACES.key] = []
        with pytest.raises(Refuted):
            Speculation(Beside(failing), "session", memory, None).confirm()


def test_file_rows_read_again_name_only_the_files_whose_hashed_figures_moved(settings):
    """A bucket of file I/O read again holds files whose reads moved below the quantum
    beside the one that moved: only the latter (and files added or gone) are touched,
    as the store keeps such reads unsampled; file I/O's buckets hold about 8 files, at
    most FILE_IO_MAX_BUCKETS of them."""
    from partdash.mysql.incremental import (
        FILE_IO_MAX_BUCKETS,
        _differing,
        _path_buckets,
        file_io_same,
    )
    from partdash.mysql.sources.file_io import PartitionIO

    settings.PARTDASH_MIN_SAMPLED_READS = 16
    before = {
        7: [
            PartitionIO("a", 17, 1, 100, 10, 50, 0),
            PartitionIO("b", 3, 0, 30, 0, 9, 0),
            PartitionIO("d", 40, 0, 400, 0, 90, 10),
        ]
    }
    after = {
        7: [
            PartitionIO("a", 20, 1, 160, 10, 80, 0),  # 3 more reads (and their wait), same quantum
            PartitionIO("b", 16, 0, 260, 0, 40, 0),  # into the next quantum
            PartitionIO("c", 0, 0, 0, 0, 0, 0),  # a new file
            PartitionIO("d", 45, 0, 450, 0, 99, 20),  # its table reopened 5 times
        ]
    }
    same = file_io_same(FILE_IO_COLUMNS)
    touched = _differing(before, after, [7], same)
    assert sorted((row.path_key, row.read_ops) for row in touched) == [
        ("b", 3),
        ("b", 16),
        ("c", 0),
    ]
    assert len(_differing(before, after, [7])) == 7  # whole rows: "a" and "d" count as moved
    assert file_io_same("FILE_NAME, COUNT_READ") is None  # a query not hashed by quantum
    assert _path_buckets(64_000) == 8_192 and _path_buckets(3) == 1
    assert _path_buckets(10**6) == FILE_IO_MAX_BUCKETS
