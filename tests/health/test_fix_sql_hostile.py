"""A fix is exactly what it says, whatever the server sent: hostile bound descriptions,
names and expressions (quotes, backslashes, `;`, comments, newlines, NUL, multi-byte,
backticks) go through every fix builder, and each statement produced is ONE statement of
the expected kind, as the server and the command-line client split it
(tests/mysql_tokens.py); what cannot be written safely is advice without SQL.
tests/health/test_fix_sql_on_mariadb.py runs such statements on a real server."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from partdash.health.compression import Compression
from partdash.health.fix_values import Unsafe, bound_values, expression_sql, name_problem
from partdash.health.fixes import (
    Fix,
    TableFacts,
    limit_fix,
    stored_fix,
    table_fix,
    working_set_fix,
)
from partdash.health.partitions import PartitionState
from partdash.health.pressure import limit_pressure, written_against_pool
from partdash.health.runway import table_runway
from tests.mysql_tokens import NotOneStatement, one_statement, tokens

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)
HOSTILE = [
    "'",
    "''",
    "\\",
    "\\'",
    ";",
    "--",
    "-- ",
    "#",
    "/*",
    "*/",
    "/*!",
    "\n",
    "\r",
    "\0",
    "`",
    "``",
    '"',
    ",",
    "(",
    ")",
    " ",
    "MAXVALUE",
    "NULL",
    "_utf8mb4",
    "é",
    "表",
    "\U0001f600",
    "\u2028",
    "\x1a",
    "0",
    "2026-03-01",
    "'2026-03-01'",
    " GRANT ALL ON *.* TO 'evil'@'%' WITH GRANT OPTION",
    " DROP DATABASE shop",
]
hostile = st.lists(st.sampled_from(HOSTILE) | st.text(max_size=3), min_size=1, max_size=8).map(
    "".join
)
names = hostile.filter(lambda name: 0 < len(name) <= 64)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# What each table fix's statement begins with, after ALTER TABLE `schema`.`table`.
KINDS = {
    "runway": [("REORGANIZE", "PARTITION"), ("ADD", "PARTITION")],
    "fragmentation": [("REBUILD", "PARTITION")],
    "staleness": [("ANALYZE", "PARTITION")],
    "compression": [("KEY_BLOCK_SIZE",), ("ROW_FORMAT",)],
    "skew": [("ADD", "PARTITION"), ("PARTITION", "BY")],
    "hotspot": [],
}


def checked(kind: str, facts: TableFacts):
    """The fix of this kind; asserts it is advice alone or one statement of its kind."""
    fix = table_fix(kind, facts, 28)
    if fix is None or fix.sql is None:
        assert fix is None or (fix.safety, fix.rows, fix.bytes) == (None, None, None)
        return fix
    assert fix.safety in ("instant", "copies", "blocks", "destroys")
    for words in KINDS[kind]:
        try:
            one_statement(fix.sql, (facts.schema, facts.name), *words)
            return fix
        except NotOneStatement as wrong:
            error = wrong
    raise error


def server_string(text: str, doubled: bool) -> str:
    """A string literal as the server may spell it in PARTITION_DESCRIPTION: quotes
    doubled or backslash-escaped, backslashes escaped."""
    escaped = text.replace("\\", "\\\\")
    return "'" + escaped.replace("'", "''" if doubled else "\\'") + "'"


def columns_table(last_rest: str, catchall: str | None, partition_names, schema, name):
    """RANGE COLUMNS (d, s), daily, ended yesterday: the last bound's other values and
    the catch-all's description as the server (or a proxy) sent them."""
    days = [NOW.date() - timedelta(days=n) for n in (3, 2, 1)]
    parts = [
        PartitionState(
            partition_names[i],
            ordinal=i,
            description=f"'{day:%Y-%m-%d}'{last_rest}",
            rows=10,
            data_bytes=16384,
            index_bytes=0,
        )
        for i, day in enumerate(days)
    ]
    if catchall is not None:
        parts.append(PartitionState(partition_names[3], ordinal=3, description=catchall, rows=5))
    expression = "`d`,`s`"
    runway = table_runway("RANGE COLUMNS", expression, parts, NOW)
    return TableFacts(
        schema=schema,
        name=name,
        method="RANGE COLUMNS",
        expression=expression,
        partitions=parts,
        now=NOW,
        runway=runway,
        compression=Compression("row", 2.0, 0.5, "failing", True, True, zip_page_size=4096),
        fragmented=[p.name for p in parts[:2]],
        fragmented_bytes=1 << 30,
        stale=[parts[0].name],
    )


@PROPERTY
@given(
    last_rest=hostile,
    catchall=hostile | st.none(),
    partition_names=st.lists(names, min_size=4, max_size=4, unique_by=str.casefold),
    schema=names,
    name=names,
)
# Found by this test: a catch-all sent as `0` after date bounds gave a number to add a
# day to (a TypeError where advice is due).
@example(
    last_rest="'", catchall="0", partition_names=["'", "'''", "\\", "''"], schema="'", name="'"
)
def test_every_table_fix_is_one_statement_whatever_the_server_sent(
    last_rest, catchall, partition_names, schema, name
):
    facts = columns_table(last_rest, catchall, partition_names, schema, name)
    for kind in KINDS:
        checked(kind, facts)


@PROPERTY
@given(
    value=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20),
    doubled=st.booleans(),
    catchall_value=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=8),
)
def test_a_string_bound_keeps_its_value_and_is_refused_only_with_a_backslash(
    value, doubled, catchall_value
):
    rest = "," + server_string(value, doubled)
    catchall = "MAXVALUE," + server_string(catchall_value, not doubled)
    facts = columns_table(rest, catchall, ["p1", "p2", "p3", "pmax"], "shop", "orders")
    fix = checked("runway", facts)
    if "\\" in value + catchall_value:
        assert fix.sql is None and "re-quote" in fix.advice
        return
    strings = [t.value for t in tokens(fix.sql) if t.kind == "string"]
    # Each new partition: its day, then the other column's value; the catch-all's last.
    assert strings[1::2] == [value] * (len(strings) // 2)
    assert strings[-1] == catchall_value
    assert fix.safety == "copies" and fix.rows == 5


@PROPERTY
@given(
    method=st.sampled_from(["HASH", "LINEAR HASH", "KEY", "LINEAR KEY", "LIST", "LIST COLUMNS"]),
    expression=hostile | st.sampled_from(["`id`", "to_days(`d`)", "`a`,`b`", ""]),
    partition_names=st.lists(names, min_size=8, max_size=8, unique_by=str.casefold),
    schema=names,
    name=names,
)
def test_every_skew_fix_is_one_statement_whatever_the_expression_and_names(
    method, expression, partition_names, schema, name
):
    # A stride of 4 over 8 partitions: HASH, KEY and the LINEAR ones get a statement.
    rows = [400, 1, 1, 1, 400, 1, 1, 1]
    parts = [
        PartitionState(n, ordinal=i, rows=r, description=str(i), data_bytes=r * 100)
        for i, (n, r) in enumerate(zip(partition_names, rows, strict=True))
    ]
    facts = TableFacts(schema, name, method, expression, parts, NOW)
    for kind in ("skew", "hotspot", "staleness"):
        checked(kind, facts)


# Each parser of what the server sent, and the statement its output goes into.
PARSERS = {
    "expression": (expression_sql, "ALTER TABLE `s`.`t` PARTITION BY HASH ({})", "PARTITION"),
    "bound": (
        lambda text: ",".join(bound_values(text)),
        "ALTER TABLE `s`.`t` ADD PARTITION (PARTITION `p` VALUES LESS THAN ({}))",
        "ADD",
    ),
}


@given(parser=st.sampled_from(sorted(PARSERS)), text=hostile)
@PROPERTY
def test_an_expression_or_a_bound_is_rewritten_from_its_tokens_or_refused(parser, text):
    parse, statement, kind = PARSERS[parser]
    try:
        written = parse(text)
    except Unsafe:
        return
    one_statement(statement.format(written), ("s", "t"), kind)


def test_the_proxys_grant_and_drop_database_never_reach_a_statement():
    """What the hostile review saw: bounds rewritten in flight, the fix carrying them."""
    attack = (
        "MAXVALUE,MAXVALUE)\n);\nGRANT ALL ON *.* TO 'evil'@'%' WITH GRANT OPTION;\n"
        "DROP DATABASE shop;\n-- "
    )
    facts = columns_table(",0", attack, ["p1", "p2", "p3", "pmax"], "shop", "orders")
    fix = checked("runway", facts)
    assert fix.sql is None and "GRANT" not in fix.advice
    assert "partdash cannot write it for this table" in fix.advice

    facts = columns_table(",0", "MAXVALUE,MAXVALUE", ["p1", "p2", "p3", "pmax"], "shop", "orders")
    fix = checked("runway", facts)  # the same table, as the server sent it: a statement
    assert fix.sql.endswith("PARTITION `pmax` VALUES LESS THAN (MAXVALUE,MAXVALUE)\n)")


def test_odd_but_legal_names_and_strings_are_written_not_refused():
    names = ["p`1", "p;2 -- x", "p#3 /* y */", "表 día"]
    rest = ",'O''Brien; DROP DATABASE shop; -- #'"
    facts = columns_table(rest, "MAXVALUE,MAXVALUE", names, "sh`op;", "or`ders\\")
    fix = checked("runway", facts)
    assert "'O''Brien; DROP DATABASE shop; -- #'" in fix.sql
    assert "PARTITION `表 día` VALUES LESS THAN (MAXVALUE,MAXVALUE)" in fix.sql


def test_server_fixes_are_one_set_global():
    for setting in ("table_open_cache", "table_definition_cache"):
        fix = limit_fix(limit_pressure(setting, 4321, 4000))
        one_statement(fix.sql, None, setting.upper())
        assert fix.safety == "instant"
    fix = working_set_fix(written_against_pool(900 << 20, 40, 1 << 30))
    one_statement(fix.sql, None, "INNODB_BUFFER_POOL_SIZE")
    assert fix.safety == "instant"


def test_a_table_whose_name_mariadb_mishandles_gets_no_statement():
    """A name holding `/`: MariaDB 10.11 deletes the table's definition on REORGANIZE,
    REBUILD and ADD PARTITION (measured on a private server: the table was gone). One
    beginning #mysql50#: MariaDB reads it as a file name."""
    parts = ["p1", "p2", "p3", "pm"]
    plain = columns_table(",0", "MAXVALUE,MAXVALUE", parts, "shop", "orders")
    with_sql = [kind for kind in KINDS if (table_fix(kind, plain, 28) or Fix("")).sql]
    assert with_sql == ["runway", "fragmentation", "staleness", "compression"]
    for schema, name in (("shop", "orders/2026"), ("sh/op", "orders"), ("#mysql50#s", "t")):
        facts = columns_table(",0", "MAXVALUE,MAXVALUE", parts, schema, name)
        for kind in with_sql:
            fix = table_fix(kind, facts, 28)
            assert fix.sql is None and fix.safety is None, kind
            bug = "#mysql50#" if schema.startswith("#") else "Unknown database"
            assert bug in fix.advice and "ALTER TABLE" not in fix.advice, kind


def test_names_the_server_would_refuse_get_no_statement():
    for bad in ("p\0", "p\n1", "trailing ", "x" * 65, "p\U0001f600"):
        facts = columns_table(",0", "MAXVALUE,MAXVALUE", ["p1", "p2", "p3", bad], "s", "t")
        assert table_fix("runway", facts, 28).sql is None, repr(bad)
        assert table_fix("staleness", replace(facts, stale=[bad]), 28).sql is None, repr(bad)


def test_names_a_cjk_client_charset_reads_across_their_quote_get_no_statement():
    """U+5F0C ends in 8C, which sjis, cp932 and gbk read with the backtick after it;
    U+8868 (表) ends in A8, which gbk and big5 read so. Both closed the name early."""
    for name, charset in (("\u5f0c", "sjis"), ("表", "gbk"), ("día 表", "gbk")):
        problem = name_problem(name)
        assert problem is not None and charset in problem, name
    for name in ("表 día", "café", "été", "日本語テーブル_1"):
        assert name_problem(name) is None, name


def test_names_with_bidi_or_format_characters_get_no_statement():
    for name in ("p\u202e1", "evt\u2066x\u2069", "zero\u200bwidth", "bom\ufeff", "a\u2028b"):
        problem = name_problem(name)
        assert problem is not None and "invisible" in problem, name


def test_a_stored_statement_a_client_would_misread_is_withheld():
    for sql in (
        "ALTER TABLE `s`.`t` DROP PARTITION `\u5f0c``;DROP DATABASE s;#`",
        "ALTER TABLE `s`.`t\u202e` ANALYZE PARTITION ALL",
        "ALTER TABLE `s`.`t\x1b[2K` ANALYZE PARTITION ALL",  # ASCII: a terminal's escape
    ):
        stored = stored_fix({"advice": "Drop.", "sql": sql, "safety": "destroys"})
        assert stored is not None and stored["sql"] is None and stored["safety"] is None
        assert stored["advice"].startswith("Drop. (partdash withholds its statement: ")
    kept = "ALTER TABLE `s`.`caf\u00e9` ANALYZE PARTITION ALL"
    assert stored_fix({"advice": "", "sql": kept, "safety": "instant"})["sql"] == kept
