"""Building the benchmark's monitored server: a private MariaDB with many HASH partitions."""

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pymysql  # noqa: E402

from tests.services import MariaDB  # noqa: E402

SCHEMA = "bench"
SERVER_OPTIONS = {
    "table_open_cache": 400,
    "performance_schema": "ON",
    "innodb_buffer_pool_size": "256M",
}


def start_server() -> MariaDB:
    return MariaDB(SERVER_OPTIONS, startup_timeout=120, shutdown_timeout=120).start()


def connect(port: int) -> pymysql.connections.Connection:
    return pymysql.connect(
        host="127.0.0.1", port=port, user="root", autocommit=True, ssl_disabled=True
    )


def create_tables(port: int, tables: int, partitions: int, rows_per_table: int) -> float:
    """Create `tables` x `partitions` HASH partitions with a few rows each; return seconds."""
    started = time.monotonic()
    conn = connect(port)
    with conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {SCHEMA}")
        cursor.execute(f"USE {SCHEMA}")
        for number in range(tables):
            cursor.execute(
                f"CREATE TABLE {SCHEMA}.t{number:03d} (id BIGINT NOT NULL PRIMARY KEY, "
                f"v INT NOT NULL) ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS {partitions}"
            )
            cursor.execute(
                f"INSERT INTO {SCHEMA}.t{number:03d} SELECT seq, seq FROM seq_1_to_{rows_per_table}"
            )
            if (number + 1) % 50 == 0:
                print(f"  created {number + 1}/{tables} tables", flush=True)
    conn.close()
    return time.monotonic() - started


def write_to_some_partitions(
    port: int, tables: int, partitions: int, share: float, round_number: int
) -> int:
    """Insert one row into `share` of all partitions (HASH(id): id % partitions picks it)."""
    rng = random.Random(round_number)
    total = tables * partitions
    chosen = rng.sample(range(total), max(1, int(total * share)))
    by_table: dict[int, list[int]] = {}
    for slot in chosen:
        by_table.setdefault(slot // partitions, []).append(slot % partitions)
    conn = connect(port)
    with conn.cursor() as cursor:
        base = partitions * (100_000 + round_number * 1_000)  # id % partitions == slot
        for table, slots in by_table.items():
            values = ", ".join(f"({base + slot}, {round_number})" for slot in slots)
            cursor.execute(f"INSERT INTO {SCHEMA}.t{table:03d} VALUES {values}")
    conn.close()
    return len(chosen)


def settle(port: int, timeout: float = 300) -> float:
    """Flush every dirty page so the freshly built tables stop changing on their own (a
    new server keeps writing pages for minutes); returns seconds waited."""
    started = time.monotonic()
    conn = connect(port)
    with conn.cursor() as cursor:
        cursor.execute("SELECT @@innodb_max_dirty_pages_pct")
        default = cursor.fetchone()[0]
        cursor.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        while time.monotonic() - started < timeout:
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
            if int(cursor.fetchone()[1]) == 0:
                break
            time.sleep(1)
        cursor.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(default)}")
    conn.close()
    time.sleep(3)  # let background statistics recalculation finish
    return time.monotonic() - started


def statistics_settled(port: int, quiet_for: float = 12, timeout: float = 180) -> float:
    """Wait until InnoDB has stopped recalculating the bench tables' persistent statistics
    (it does so in the background, at least 10 s apart per table, after rows changed):
    their newest `last_update` `quiet_for` seconds old. Returns seconds waited."""
    started = time.monotonic()
    conn = connect(port)
    with conn.cursor() as cursor:
        while time.monotonic() - started < timeout:
            cursor.execute(
                "SELECT TIMESTAMPDIFF(SECOND, MAX(last_update), NOW()) "
                "FROM mysql.innodb_table_stats WHERE database_name = %s",
                (SCHEMA,),
            )
            age = cursor.fetchone()[0]
            if age is None or age >= quiet_for:
                break
            time.sleep(1)
    conn.close()
    return time.monotonic() - started
