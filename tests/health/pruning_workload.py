"""The pruning proof's workload (issue 40): a RANGE-by-day table (60 partitions and a
catch-all), a HASH table (16) and a third table read only by day, and statement shapes
each run many times with different literals, for the verdict's ground truth
(`tests/health/test_pruning_on_mariadb.py`) and the finding after a poll
(`tests/metrics/test_pruning_after_a_poll.py`)."""

from contextlib import closing
from datetime import UTC, date, datetime, timedelta

from tests.services import MariaDB
from tests.sql import run

FIRST_DAY = date(2026, 1, 1)
FIRST_AT = datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 60
KEYS = 400
RUNS = 12  # instances of each shape, each with its own literals

DAILY = ", ".join(
    f"PARTITION p{i} VALUES LESS THAN (TO_DAYS('{FIRST_DAY + timedelta(days=i + 1)}'))"
    for i in range(DAYS)
)
TABLES = (
    "CREATE TABLE orders (id INT NOT NULL, d DATE NOT NULL, customer INT NOT NULL,"
    " total INT NOT NULL, status INT NOT NULL, PRIMARY KEY (id, d), KEY (customer))"
    f" PARTITION BY RANGE (TO_DAYS(d)) ({DAILY}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
    "CREATE TABLE carts (id INT NOT NULL PRIMARY KEY, owner INT NOT NULL, n INT NOT NULL,"
    " KEY (owner)) PARTITION BY HASH (id) PARTITIONS 16",
    "CREATE TABLE visits (d DATE NOT NULL, page INT NOT NULL, PRIMARY KEY (d, page))"
    f" PARTITION BY RANGE (TO_DAYS(d)) ({DAILY}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
    "INSERT INTO orders SELECT seq, DATE_ADD('2026-01-01', INTERVAL seq % 60 DAY),"
    " seq % 37, seq % 1000, seq % 5 FROM seq_1_to_2400",
    f"INSERT INTO carts SELECT seq, seq % 23, 0 FROM seq_1_to_{KEYS}",
    "INSERT INTO visits SELECT DATE_ADD('2026-01-01', INTERVAL seq % 60 DAY), seq"
    " FROM seq_1_to_600",
    "ANALYZE TABLE orders, carts, visits",
)


def day(i: int) -> str:
    return f"'{FIRST_DAY + timedelta(days=i % DAYS)}'"


# Each shape: its table, an instance from a run number, and the verdict expected of its
# digest (what the test asserts beside the agreement with EXPLAIN).
SHAPES = {
    "a date range": (
        "orders",
        lambda i: f"SELECT COUNT(*) FROM orders WHERE d BETWEEN {day(i)} AND {day(i + 2)}",
        ("some", None),
    ),
    "one day and the key": (
        "orders",
        lambda i: f"SELECT total FROM orders WHERE d = {day(i)} AND id = {DAYS + i}",
        ("one", 1),
    ),
    "a non-partitioning column": (
        "orders",
        lambda i: f"SELECT id FROM orders WHERE total > {900 + i}",
        ("all", DAYS + 1),
    ),
    "an indexed non-key column": (
        "orders",
        lambda i: f"SELECT id, d FROM orders WHERE customer = {i % 37}",
        ("all", DAYS + 1),
    ),
    "an aggregate over a non-partitioning column": (
        "orders",
        lambda i: (
            f"SELECT customer, SUM(total) FROM orders WHERE status = {i % 5} GROUP BY customer"
        ),
        ("all", DAYS + 1),
    ),
    "an update by day": (
        "orders",
        lambda i: f"UPDATE orders SET status = {i % 5} WHERE d = {day(i)} AND customer = {i}",
        ("one", 1),
    ),
    "the HASH key": (
        "carts",
        lambda i: f"SELECT owner FROM carts WHERE id = {i + 1}",
        ("one", 1),
    ),
    "an IN list of keys": (
        "carts",
        lambda i: f"SELECT owner FROM carts WHERE id IN ({i + 1}, {i + 2}, {i + 40})",
        ("some", None),
    ),
    "an update by key": (
        "carts",
        lambda i: f"UPDATE carts SET n = n + 1 WHERE id = {i + 7}",
        ("one", 1),
    ),
    "a HASH table's indexed non-key column": (
        "carts",
        lambda i: f"SELECT id FROM carts WHERE owner = {i % 23}",
        ("all", 16),
    ),
    "a join on the HASH key": (
        "carts",
        lambda i: (
            "SELECT c.n FROM carts AS c JOIN orders AS o ON o.customer = c.owner"
            f" WHERE c.id = {i + 3} AND o.d = {day(i)}"
        ),
        ("one", 1),
    ),
    "a third table by day": (
        "visits",
        lambda i: f"SELECT COUNT(*) FROM visits WHERE d = {day(i)}",
        ("one", 1),
    ),
    "a third table by a range of days": (
        "visits",
        lambda i: f"SELECT page FROM visits WHERE d >= {day(i)} AND d < {day(i + 7)}",
        ("some", None),
    ),
}
# The join's other table, judged on the same digest.
JOINED = ("a join on the HASH key", "orders", ("one", 1))
ALIASES = {"carts": "c", "orders": "o", "visits": "v"}
TABLE_NAMES = ("orders", "carts", "visits")


def digests(instance: MariaDB, schema: str) -> dict[str, str]:
    """The digests of the statements run in `schema` (read from outside it)."""
    return dict(
        instance.execute(
            "SELECT DIGEST, DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest"
            f" WHERE SCHEMA_NAME = '{schema}'"
        )
    )


def run_workload(mariadb_ps: MariaDB, schema: str) -> dict[str, str]:
    """The tables in `schema`, each shape run RUNS times; per shape the one digest its
    runs were folded into."""
    run(mariadb_ps, schema, *TABLES)
    folded = {}
    with closing(mariadb_ps.connect(database=schema)) as conn, conn.cursor() as cursor:
        for name, (_, instance, _) in SHAPES.items():
            before = digests(mariadb_ps, schema)
            for i in range(RUNS):
                cursor.execute(instance(i))
            new = set(digests(mariadb_ps, schema).items()) - set(before.items())
            texts = [text for _, text in new]
            assert len(texts) == 1, (name, texts)
            folded[name] = texts[0]
    return folded
