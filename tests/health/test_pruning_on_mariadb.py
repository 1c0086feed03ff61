"""The pruning verdict against its ground truth (issue 40's proof): on a real MariaDB with
performance_schema ON, a workload of statement shapes each run many times with different
literals; each digest performance_schema folded them into is judged by
`health.pruning.judge` and held against `EXPLAIN PARTITIONS` of an instance of it:
`all` exactly where EXPLAIN lists every partition, `partitions_read` equal to EXPLAIN's
count wherever the verdict gives one, and never `unknown` for these plain shapes."""

from contextlib import closing
from datetime import UTC, date, datetime, timedelta

import pytest

from partdash.health.fixes import TableFacts
from partdash.health.kinds import Observed
from partdash.health.pruning import Layout, StatementVerdict, Verdict, judge
from partdash.health.unpruned import pruning_finding
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


def layout(instance: MariaDB, schema: str, table: str) -> Layout:
    """The table as partdash reads it from information_schema.PARTITIONS."""
    rows = run(
        instance,
        schema,
        "SELECT PARTITION_METHOD, PARTITION_EXPRESSION, PARTITION_NAME,"
        " PARTITION_DESCRIPTION FROM information_schema.PARTITIONS"
        f" WHERE TABLE_SCHEMA = '{schema}' AND TABLE_NAME = '{table}'"
        " ORDER BY PARTITION_ORDINAL_POSITION",
    )
    return Layout(schema, table, rows[0][0], rows[0][1], tuple((r[2], r[3]) for r in rows))


def explained(instance: MariaDB, schema: str, table: str, statement: str) -> int:
    """How many partitions EXPLAIN PARTITIONS lists for the table's access (by its name
    or, in the join, its alias)."""
    with closing(instance.connect(database=schema)) as conn, conn.cursor() as cursor:
        cursor.execute(f"EXPLAIN PARTITIONS {statement}")
        columns = [column[0] for column in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    listed = [row["partitions"] for row in rows if row["table"] in (table, ALIASES[table])]
    assert len(listed) == 1 and listed[0], rows
    return len(listed[0].split(","))


def digests(instance: MariaDB, schema: str) -> dict[str, str]:
    """The digests of the statements run in `schema` (read from outside it)."""
    return dict(
        instance.execute(
            "SELECT DIGEST, DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest"
            f" WHERE SCHEMA_NAME = '{schema}'"
        )
    )


@pytest.fixture
def workload(mariadb_ps: MariaDB, new_schema):
    """The tables, and per shape the one digest its runs were folded into."""
    schema = new_schema(mariadb_ps)
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
    return schema, folded


def test_verdicts_agree_with_explain_partitions(mariadb_ps, workload):
    schema, folded = workload
    layouts = {table: layout(mariadb_ps, schema, table) for table in TABLE_NAMES}
    checks = [(name, table, expected) for name, (table, _, expected) in SHAPES.items()]
    for name, table, expected in [*checks, JOINED]:
        instance = SHAPES[name][1]
        found: Verdict = judge(folded[name], layouts[table], default_schema=schema)
        listed = explained(mariadb_ps, schema, table, instance(RUNS // 2))
        total = len(layouts[table].partitions)
        assert found.partitions_total == total, name
        assert (found.prunes, found.partitions_read) == expected, (name, folded[name], found)
        assert (found.prunes == "all") == (listed == total), (name, folded[name], listed)
        if found.partitions_read is not None:
            assert found.partitions_read == listed, (name, folded[name], listed)


def test_the_digests_hide_the_literals(workload):
    _, folded = workload
    for text in folded.values():
        assert "2026" not in text
        assert "?" in text or "(...)" in text


def verdicts(instance: MariaDB, schema: str, table: Layout) -> list[StatementVerdict]:
    """The table's statements as the finding reads them: performance_schema's counters and
    the verdict on each digest that reads the table."""
    rows = instance.execute(
        "SELECT DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_ROWS_EXAMINED, SUM_TIMER_WAIT / 1e12"
        " FROM performance_schema.events_statements_summary_by_digest"
        f" WHERE SCHEMA_NAME = '{schema}'"
    )
    judged = [(row, judge(row[1], table, default_schema=schema)) for row in rows]
    return [
        StatementVerdict(digest, text, calls, examined, float(seconds), verdict)
        for (digest, text, calls, examined, seconds), verdict in judged
        if not verdict.why.startswith("not a read")
    ]


def test_the_tables_read_without_pruning_get_a_finding_naming_those_statements(
    mariadb_ps, workload
):
    schema, folded = workload
    findings = {}
    for name in TABLE_NAMES:
        table = layout(mariadb_ps, schema, name)
        facts = TableFacts(schema, name, table.method, table.expression, [], FIRST_AT)
        findings[name] = pruning_finding(
            Observed(facts, [], statements=verdicts(mariadb_ps, schema, table))
        )
    assert findings["visits"] is None  # read only by day
    for name in ("orders", "carts"):
        unpruned = [
            folded[s] for s, (table, _, v) in SHAPES.items() if table == name and v[0] == "all"
        ]
        advice = findings[name].fix.advice
        assert findings[name].message.startswith(f"{len(unpruned)} statement(s) read all")
        for text in unpruned:
            assert " ".join(text.split()) in advice
        pruned = [
            folded[s] for s, (table, _, v) in SHAPES.items() if table == name and v[0] != "all"
        ]
        for text in pruned:
            assert " ".join(text.split()) not in advice
