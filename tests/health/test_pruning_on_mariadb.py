"""The pruning verdict against its ground truth (issue 40's proof): on a real MariaDB with
performance_schema ON, a workload of statement shapes each run many times with different
literals; each digest performance_schema folded them into is judged by
`health.pruning.judge` and held against `EXPLAIN PARTITIONS` of an instance of it:
`all` exactly where EXPLAIN lists every partition, `partitions_read` equal to EXPLAIN's
count wherever the verdict gives one, and never `unknown` for these plain shapes."""

from contextlib import closing

import pytest

from partdash.health.fixes import TableFacts
from partdash.health.kinds import Observed
from partdash.health.pruning import Layout, StatementVerdict, Verdict, judge
from partdash.health.unpruned import pruning_finding
from tests.health.pruning_workload import (
    ALIASES,
    FIRST_AT,
    JOINED,
    RUNS,
    SHAPES,
    TABLE_NAMES,
    run_workload,
)
from tests.services import MariaDB
from tests.sql import run


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


@pytest.fixture
def workload(mariadb_ps: MariaDB, new_schema):
    schema = new_schema(mariadb_ps)
    return schema, run_workload(mariadb_ps, schema)


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
