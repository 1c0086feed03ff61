"""The partitions a statement's plan reads, from the server's own EXPLAIN: where an
operator opted a server in (`explain_statements`), the exact count beside the one
parsing the digest text gives (`partdash.health.pruning`).

A plan needs a statement with its literals: MySQL 8's QUERY_SAMPLE_TEXT or, on MariaDB,
the text of a recent run in `events_statements_history_long` (when its consumer is ON).
That text is used here, in memory, and dropped: never stored, logged or shown (errors
are reported by their code alone). Only SELECT, UPDATE and DELETE are explained (the
latter two as the SELECT of their WHERE: the session stays read-only), none
calling a function the parser does not know (a stored function could run while the
optimiser evaluates a constant), each under a time limit; EXPLAIN never executes the
statement. It needs SELECT on the tables, which the least-privilege account lacks.
"""

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass

import pymysql
import sqlglot
from django.conf import settings
from sqlglot import exp

from partdash.lib.quoting import identifier
from partdash.mysql.connection import Session
from partdash.mysql.dialects import Dialect

log = logging.getLogger(__name__)

EXPLAINED = ("select", "update", "delete")
HISTORY_SQL = (
    "SELECT DIGEST, SQL_TEXT FROM performance_schema.events_statements_history_long "
    "WHERE DIGEST IN ({digests}) AND SQL_TEXT IS NOT NULL"
)


@dataclass(frozen=True, slots=True)
class PlanRead:
    """A table the plan reads, and how many of its partitions (x subpartitions)."""

    schema: str | None  # None: the statement's default schema
    table: str
    partitions: int


def history_samples(session: Session, digests: Iterable[str]) -> dict[str, str]:
    """A recent run's text per digest, from MariaDB's statement history (memory only)."""
    wanted = list(dict.fromkeys(digests))
    if not wanted:
        return {}
    sql = HISTORY_SQL.format(digests=", ".join(["%s"] * len(wanted)))
    try:
        rows = session.rows(sql, tuple(wanted))
    except pymysql.MySQLError as exc:
        log.info("statement history not read: error %s", exc.args[0] if exc.args else "")
        return {}
    return {str(digest): str(text) for digest, text in rows if text}


def _explainable(sample: str) -> exp.Expression | None:
    """The sample parsed, if it is one SELECT, UPDATE or DELETE calling only functions
    the parser knows; else None."""
    try:
        statements = sqlglot.parse(sample, read="mysql")
    except Exception as error:  # noqa: BLE001 any: a parser's message quotes the text
        error.__traceback__ = None  # (the parser keeps it: its frames would stay in a cycle)
        return None
    if len(statements) != 1 or statements[0] is None:
        return None
    tree = statements[0]
    if not isinstance(tree, exp.Select | exp.Union | exp.Update | exp.Delete):
        return None
    if any(True for _ in tree.find_all(exp.Anonymous, exp.Into, exp.Command)):
        return None
    return tree


def _as_select(tree: exp.Expression, sample: str) -> str:
    """What is explained: a SELECT as it ran; an UPDATE or DELETE as the SELECT of its
    tables and WHERE, which prunes alike: the poll's session is READ ONLY, and MariaDB
    refuses to EXPLAIN a write there (error 1792)."""
    if not isinstance(tree, exp.Update | exp.Delete):
        return sample
    select = exp.select("*").from_(tree.this.copy())
    where = tree.args.get("where")
    if where is not None:
        select = select.where(where.this.copy())
    return select.sql(dialect="mysql")


def _aliases(tree: exp.Expression) -> dict[str, tuple[str | None, str]]:
    """What EXPLAIN names a table by (its alias, else its name), lower-cased, to the table."""
    named = {}
    for table in tree.find_all(exp.Table):
        if table.name:
            named[(table.alias_or_name or table.name).lower()] = (table.db or None, table.name)
    return named


def _count(listed) -> int:
    if listed is None:
        return 0
    if isinstance(listed, list):
        return len(listed)
    return len([name for name in str(listed).split(",") if name.strip()])


def _mariadb_plan(session: Session, sample: str, ms: int) -> list[tuple[str, int]]:
    limit = f"SET STATEMENT max_statement_time={ms / 1000:.3f} FOR"
    sql = f"{limit} EXPLAIN PARTITIONS {sample.replace('%', '%%')}"
    return [(str(row[2]), _count(row[3])) for row in session.rows(sql) if row[2] is not None]


def _json_tables(node, found: list[tuple[str, int]]) -> None:
    if isinstance(node, dict):
        if "table_name" in node:
            found.append((str(node["table_name"]), _count(node.get("partitions"))))
        for value in node.values():
            _json_tables(value, found)
    elif isinstance(node, list):
        for value in node:
            _json_tables(value, found)


def _mysql_plan(session: Session, sample: str, ms: int) -> list[tuple[str, int]]:
    """MySQL has no SET STATEMENT: the session's limit is lowered for the EXPLAIN, then
    set back to the poll's (`connection._session_settings`)."""
    session.rows("SET SESSION MAX_EXECUTION_TIME = %s", (ms,))
    try:
        ((document, *_),) = session.rows(f"EXPLAIN FORMAT=JSON {sample.replace('%', '%%')}")
    finally:
        poll_limit = int(settings.PARTDASH_STATEMENT_TIMEOUT * 1000)
        session.rows("SET SESSION MAX_EXECUTION_TIME = %s", (poll_limit,))
    found: list[tuple[str, int]] = []
    _json_tables(json.loads(document), found)
    return found


def explain(
    session: Session, dialect: Dialect, sample: str, schema: str | None, ms: int
) -> list[PlanRead] | None:
    """The tables the plan of `sample` reads and how many partitions of each (a table
    read twice counts its largest read); None where it is not explained. `schema`: the
    default schema the statement ran under (the session's is set to it)."""
    tree = _explainable(sample)
    if tree is None:
        return None
    plan = _mysql_plan if dialect.has_sample_text else _mariadb_plan
    try:
        if schema:
            session.rows(f"USE {identifier(schema)}")
        listed = plan(session, _as_select(tree, sample), ms)
    except (pymysql.MySQLError, ValueError, TypeError) as exc:
        if isinstance(exc, pymysql.err.OperationalError) and exc.args[0] >= 2000:
            raise  # the session is gone: the poll's to fail
        code = exc.args[0] if isinstance(exc, pymysql.MySQLError) and exc.args else None
        log.info("EXPLAIN refused: %s", code or type(exc).__name__)  # (never its text)
        return None
    aliases = _aliases(tree)
    reads: dict[tuple[str | None, str], int] = {}
    for shown, partitions in listed:
        table = aliases.get(shown.lower())
        if table is not None:
            reads[table] = max(reads.get(table, 0), partitions)
    return [PlanRead(schema, table, count) for (schema, table), count in reads.items()]
