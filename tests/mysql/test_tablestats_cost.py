"""The tablestats counters (rows changed per partition) are read by default, at no cost to
the monitored server: InnoDB fills INNODB_SYS_TABLESTATS by loading every table missing
from its dictionary cache (pages of their files), so a poll reads it only after rows
changed and, by default, only where that cache holds every InnoDB table. Proven on real
MariaDB servers, the server's counters read from a session that is not the poll's."""

import time
from contextlib import closing

import pytest

from partdash.metrics.models import Partition, PartitionSample
from partdash.mysql.catalogue import DICTIONARY_TABLES_SQL
from partdash.mysql.connection import Session
from partdash.mysql.dialects import MARIADB
from partdash.polling.service import poll_server
from tests.sql import run

COSTS = ("Opened_tables", "Innodb_pages_read")
COUNT = DICTIONARY_TABLES_SQL.format(dictionary=MARIADB.dictionary_table)
# More InnoDB tables (partitions) than this server's dictionary cache holds: InnoDB's
# master thread evicts some, and a TABLESTATS read would load them again.
EVICTING = {"table_definition_cache": 400, "table_open_cache": 10}
ROOMY = {"table_definition_cache": 2000}
# p3 of HASH(id) over 8 partitions holds the ids equal to 3 modulo 8. No automatic
# statistics refresh: one landing in the background between two polls would make the
# second read the counters (a refresh resets them), and the test depend on timing.
QUIET = "ENGINE=InnoDB STATS_AUTO_RECALC=0"
HOT = (
    f"CREATE TABLE hot (id INT NOT NULL PRIMARY KEY, v INT NOT NULL) {QUIET} "
    "PARTITION BY HASH(id) PARTITIONS 8",
    "INSERT INTO hot SELECT seq, seq FROM seq_1_to_200",
)
UPDATE_P3 = "UPDATE hot SET v = v + 1 WHERE id IN (3, 11, 19, 27)"


def status(instance) -> dict[str, int]:
    with closing(instance.connect()) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS WHERE Variable_name IN %s", (COSTS,))
        return {name: int(value) for name, value in cursor.fetchall()}


@pytest.fixture
def queries(monkeypatch) -> list[str]:
    """Every statement polls send, in order. (Statistics refreshed in the seconds before
    the previous poll are read again by the next, which then reads the counters again
    too, a refresh resetting them: the tables here were just filled, so no margin.)"""
    monkeypatch.setattr("partdash.collector.collect.STATS_MARGIN_SECONDS", 0)
    sent: list[str] = []
    rows = Session.rows

    def spy(self, sql, args=()):
        sent.append(sql)
        return rows(self, sql, args)

    monkeypatch.setattr(Session, "rows", spy)
    return sent


def counters(server, schema: str) -> dict[tuple[str, str], int | None]:
    partitions = Partition.objects.filter(table__server=server, table__schema=schema)
    return {
        (table, key): counter
        for table, key, counter in partitions.values_list("table__name", "key", "modified_counter")
    }


def assert_a_quiet_poll_costs_nothing(instance, server, queries: list[str]) -> None:
    time.sleep(1.1)  # statistics' times have whole seconds: a refresh in the last is read
    assert poll_server(server).ok
    before = status(instance)
    queries.clear()
    assert poll_server(server).ok
    assert status(instance) == before
    assert not [sql for sql in queries if "TABLESTATS" in sql or sql == COUNT]


def assert_updates_move_their_partition_alone(instance, server, schema: str) -> None:
    before = counters(server, schema)
    for _ in range(3):  # the same 4 rows of p3, three times: 12 rows changed
        run(instance, schema, UPDATE_P3)
    assert poll_server(server).ok
    after = counters(server, schema)
    moved = {key: after[key] - (before[key] or 0) for key in after if after[key] != before[key]}
    assert moved == {("hot", "p3#"): 12}
    [p3] = Partition.objects.filter(
        table__server=server, table__schema=schema, table__name="hot", key="p3#"
    )
    sample = PartitionSample.objects.filter(partition=p3).latest("snapshot_id")
    assert sample.modified_counter == after[("hot", "p3#")]


@pytest.mark.parametrize("mode", ["on", "auto"])
def test_a_quiet_poll_moves_nothing_on_a_server_whose_cache_evicts_partitions(
    transactional_db, mariadb_factory, new_schema, make_server, settings, queries, mode
):
    """440 partitions and a dictionary cache of 400: even read whenever rows changed
    (`on`), a quiet poll does not read the counters; by default (`auto`) a poll after
    UPDATEs does not either, as that read would load evicted partitions again."""
    settings.PARTDASH_READ_TABLESTATS = mode
    instance = mariadb_factory.get(EVICTING)
    schema = new_schema(instance)
    wide = [
        f"CREATE TABLE w{n} (id INT NOT NULL PRIMARY KEY) {QUIET} "
        "PARTITION BY HASH(id) PARTITIONS 110"
        for n in range(4)
    ]
    run(instance, schema, *wide, *HOT)
    server = make_server(instance, name=f"evicting-{mode}")
    assert poll_server(server).ok and poll_server(server).ok
    assert_a_quiet_poll_costs_nothing(instance, server, queries)
    if mode == "on":
        assert_updates_move_their_partition_alone(instance, server, schema)
        return
    run(instance, schema, UPDATE_P3)
    before = status(instance)
    queries.clear()
    assert poll_server(server).ok
    assert status(instance) == before
    assert not [sql for sql in queries if "TABLESTATS" in sql]
    assert set(counters(server, schema).values()) == {None}


def test_by_default_the_counters_are_read_where_the_cache_holds_every_table(
    transactional_db, mariadb_factory, new_schema, make_server, settings, queries
):
    """The default (`auto`): read after rows changed, kept while none did; UPDATEs of p3
    move p3's stored counter by the rows they changed, and no other partition's."""
    assert settings.PARTDASH_READ_TABLESTATS == "auto"
    instance = mariadb_factory.get(ROOMY)
    schema = new_schema(instance)
    run(instance, schema, *HOT)
    server = make_server(instance, name="roomy")
    assert poll_server(server).ok and poll_server(server).ok
    assert_a_quiet_poll_costs_nothing(instance, server, queries)
    assert_updates_move_their_partition_alone(instance, server, schema)
    assert any("TABLESTATS" in sql for sql in queries)
    assert_a_quiet_poll_costs_nothing(instance, server, queries)
    ((truth,),) = run(
        instance,
        schema,
        "SELECT MODIFIED_COUNTER FROM information_schema.INNODB_SYS_TABLESTATS "
        f"WHERE NAME = '{schema}/hot#P#p3'",
    )
    assert counters(server, schema)[("hot", "p3#")] == truth == 25 + 12  # inserted, updated


def dictionary_truth(instance) -> int:
    with closing(instance.connect()) as conn, conn.cursor() as cursor:
        cursor.execute(COUNT)
        return int(cursor.fetchone()[0])


def stored_count(server) -> int:
    from partdash.metrics.models import ServerSnapshot

    return ServerSnapshot.objects.filter(server=server).latest("pk").sources["dictionary_tables"]


def test_the_dictionary_is_counted_again_only_after_ddl(
    transactional_db, mariadb_factory, new_schema, make_server, queries
):
    """The count (a fill of InnoDB's whole table list in the server: 0.14 s on 64,000
    partitions) decides whether the counters may be read, and was taken at every poll
    after rows changed. It is kept while no statement that adds or drops a dictionary
    table ran (CREATE, ALTER, DROP, RENAME TABLE, CREATE and DROP INDEX: FULLTEXT brings
    tables of its own) and the partitions listed are as many; stored as counted."""
    instance = mariadb_factory.get(ROOMY)
    schema = new_schema(instance)
    run(instance, schema, *HOT, f"CREATE TABLE plain (id INT PRIMARY KEY, t TEXT) {QUIET}")
    server = make_server(instance, name="counted")
    assert poll_server(server).ok and poll_server(server).ok

    def poll_after_writes(*statements: str) -> list[str]:
        run(instance, schema, *statements, UPDATE_P3)
        queries.clear()
        assert poll_server(server).ok
        assert any("TABLESTATS" in sql for sql in queries)  # rows changed: read
        assert stored_count(server) == dictionary_truth(instance)
        return [sql for sql in queries if sql == COUNT]

    assert poll_after_writes() == []  # no DDL since the first poll counted
    assert poll_after_writes(
        "CREATE TABLE more (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 4"
    ) == [COUNT]
    assert poll_after_writes() == []
    assert poll_after_writes("CREATE FULLTEXT INDEX words ON plain (t)") == [COUNT]
    assert poll_after_writes() == []
    assert poll_after_writes("DROP TABLE more") == [COUNT]
