"""Faults injected into real processes for tests/polling/test_faults.py: a monitored MariaDB
stopped (SIGSTOP) or killed (SIGKILL), DDL racing the poll, and what a poll stored set
against what information_schema says."""

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager

from partdash.metrics.models import PartitionedTable, ServerSnapshot
from tests.services import MariaDB


@contextmanager
def resumed_at_exit(instance: MariaDB) -> Iterator[None]:
    """SIGCONT the server when the block ends, whatever happened in it."""
    pid = instance.pid
    assert pid is not None, "the server is not running"
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def stopped(instance: MariaDB) -> Iterator[float]:
    """The server frozen with SIGSTOP (it accepts TCP connections and never answers) until
    the block ends. Yields when it was stopped."""
    with resumed_at_exit(instance):
        os.kill(instance.pid, signal.SIGSTOP)
        yield time.monotonic()


def stopping_after(instance: MariaDB, reader):
    """`reader` that stops the server once it has read: a SIGSTOP landing mid-poll, with
    the connection open and the poll's first queries answered."""

    def read(*args, **kwargs):
        result = reader(*args, **kwargs)
        os.kill(instance.pid, signal.SIGSTOP)
        return result

    return read


def snapshot_count(server) -> int:
    return ServerSnapshot.objects.filter(server=server).count()


# -- DDL racing the poll ------------------------------------------------------------------

RANGE_TABLE = (
    "CREATE TABLE r (id INT NOT NULL, v VARCHAR(40)) PARTITION BY RANGE (id) ("
    "PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200), "
    "PARTITION pmax VALUES LESS THAN MAXVALUE)"
)
HASH_TABLE = (
    "CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(40)) PARTITION BY HASH(id) PARTITIONS {n}"
)
LIST_TABLE = (
    "CREATE TABLE l (id INT NOT NULL, k INT NOT NULL) PARTITION BY LIST (k) ("
    "PARTITION a VALUES IN (1, 2), PARTITION b VALUES IN (3, 4))"
)


class DdlRacer(threading.Thread):
    """Partition and table DDL in a loop on `schema` until stopped: ADD, DROP, REORGANIZE
    and TRUNCATE PARTITION on a RANGE table, DROP TABLE and CREATE again, RENAME TABLE
    and back. Counts what it ran; an unexpected error stops it and is kept in `error`."""

    def __init__(self, instance: MariaDB, schema: str, seed: int = 13):
        super().__init__(name="ddl-racer", daemon=True)
        self.instance, self.schema = instance, schema
        self.random = random.Random(seed)
        self.halt = threading.Event()
        self.statements = 0
        self.error: BaseException | None = None
        self.next_bound = 300
        self.list_has_c = False

    def setup(self) -> None:
        with self._connection() as cursor:
            for statement in (RANGE_TABLE, HASH_TABLE.format(name="h", n=4), LIST_TABLE):
                cursor.execute(statement)
            cursor.execute("INSERT INTO r SELECT seq, 'x' FROM seq_1_to_250")
            cursor.execute("INSERT INTO h SELECT seq, 'y' FROM seq_1_to_200")

    @contextmanager
    def _connection(self):
        with closing(self.instance.connect(database=self.schema)) as conn:
            with conn.cursor() as cursor:
                yield cursor

    def run(self) -> None:
        try:
            with self._connection() as cursor:
                while not self.halt.is_set():
                    for statement in self._round():
                        cursor.execute(statement)
                        self.statements += 1
                    time.sleep(self.random.uniform(0.0, 0.05))
        except BaseException as exc:  # the test reports it
            self.error = exc

    def _round(self) -> list[str]:
        """One change, picked at random, leaving the tables in a state the next can use."""
        rounds = (
            self._range_extended,
            lambda: ["ALTER TABLE r TRUNCATE PARTITION p1"],
            lambda: ["ALTER TABLE r DROP PARTITION p0", self._range_again()],
            lambda: ["DROP TABLE h", HASH_TABLE.format(name="h", n=self.random.choice((2, 3)))],
            lambda: ["RENAME TABLE h TO h_renamed", "RENAME TABLE h_renamed TO h"],
            lambda: [self._list_toggled()],
            lambda: [
                "ALTER TABLE h ADD PARTITION PARTITIONS 2",
                "ALTER TABLE h COALESCE PARTITION 1",
            ],
        )
        return self.random.choice(rounds)()

    def _range_extended(self) -> list[str]:
        """A new partition split off the MAXVALUE catch-all (REORGANIZE)."""
        bound, self.next_bound = self.next_bound, self.next_bound + 100
        return [
            f"ALTER TABLE r REORGANIZE PARTITION pmax INTO (PARTITION p{bound} VALUES "
            f"LESS THAN ({bound}), PARTITION pmax VALUES LESS THAN MAXVALUE)"
        ]

    def _list_toggled(self) -> str:
        """ADD partition c to the LIST table, or DROP it where the last round added it."""
        self.list_has_c = not self.list_has_c
        if self.list_has_c:
            return "ALTER TABLE l ADD PARTITION (PARTITION c VALUES IN (5, 6))"
        return "ALTER TABLE l DROP PARTITION c"

    def _range_again(self) -> str:
        """Put p0 back at the bottom of r after it was dropped (REORGANIZE the lowest)."""
        return (
            "ALTER TABLE r REORGANIZE PARTITION p1 INTO (PARTITION p0 VALUES LESS THAN (100), "
            "PARTITION p1 VALUES LESS THAN (200))"
        )

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)


# -- stored definitions against information_schema ---------------------------------------

DEFINITIONS_SQL = (
    "SELECT TABLE_NAME, PARTITION_METHOD, PARTITION_NAME, PARTITION_ORDINAL_POSITION, "
    "PARTITION_DESCRIPTION FROM information_schema.PARTITIONS "
    "WHERE TABLE_SCHEMA = %s AND PARTITION_NAME IS NOT NULL "
    "AND SUBPARTITION_NAME IS NULL ORDER BY TABLE_NAME, PARTITION_ORDINAL_POSITION"
)


def server_definitions(instance: MariaDB, schema: str) -> dict[str, tuple]:
    """table -> (method, [(partition, ordinal, description)]) as the server says."""
    tables: dict[str, tuple[str, list]] = {}
    with closing(instance.connect()) as conn, conn.cursor() as cursor:
        cursor.execute(DEFINITIONS_SQL, (schema,))
        for table, method, name, ordinal, description in cursor.fetchall():
            tables.setdefault(table, (method, []))[1].append((name, ordinal, description or ""))
    return {table: (method, partitions) for table, (method, partitions) in tables.items()}


def stored_definitions(server, schema: str) -> dict[str, tuple]:
    """The same, as the polls stored it: live tables, live partitions."""
    stored = {}
    for table in PartitionedTable.objects.filter(server=server, schema=schema, dropped_at=None):
        partitions = table.partitions.filter(dropped_at=None).order_by("ordinal")
        stored[table.name] = (
            table.method,
            [(p.name, p.ordinal, p.description or "") for p in partitions],
        )
        assert table.partition_count == len(stored[table.name][1]), table.name
    return stored


def dropped_tables(server, schema: str) -> set[str]:
    return set(
        PartitionedTable.objects.filter(server=server, schema=schema)
        .exclude(dropped_at=None)
        .values_list("name", flat=True)
    )
