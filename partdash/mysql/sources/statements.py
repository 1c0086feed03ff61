"""Statements per digest from performance_schema.events_statements_summary_by_digest:
what partdash holds against each partitioned table's layout to tell which statements
prune (`partdash.health.pruning`).

Not a per-partition source: one row per normalised statement, server-wide, its counters
cumulative since the server started (or the table was truncated). Read at most every
PARTDASH_STATEMENTS_EVERY_SECONDS, only the digests seen since the last read, the
costliest first, at most PARTDASH_STATEMENTS_MAX_ROWS of them. The table lives in
performance_schema's memory: reading it opens no table (`make bench` measures it).

The digest text has its literals replaced by `?`. MySQL 8's QUERY_SAMPLE_TEXT is one run
with its literals: it is kept on the row in memory only (`sample`, left out of `repr`),
to EXPLAIN where an operator opted the server in (`explain`), and never stored or logged.
"""

import re
from dataclasses import dataclass, field

import pymysql

from partdash.mysql.catalogue import (
    DIGEST_CONSUMER_SQL,
    HISTORY_CONSUMER_SQL,
    SETTING,
    STATEMENTS,
    consumer_shortfall,
)
from partdash.mysql.connection import Session
from partdash.mysql.dialects import Dialect
from partdash.mysql.names import fold
from partdash.mysql.sources import SourceUnavailable, setting_off, unavailable


@dataclass(frozen=True, slots=True)
class Digest:
    """One digest's row: its counters since the server began counting it."""

    digest: str
    text: str  # DIGEST_TEXT: `?` for literals, possibly truncated (ends with `...`)
    schema: str | None  # the default schema it ran under
    calls: int
    rows_examined: int
    micros: int  # SUM_TIMER_WAIT, in microseconds
    no_index_used: int
    first_seen: int  # epoch seconds
    last_seen: int
    sample: str | None = field(default=None, repr=False)  # literals: memory only


class ConsumerOff(SourceUnavailable):
    """performance_schema is ON but its statements_digest consumer is not."""

    def shortfall(self, account, dialect):
        return consumer_shortfall()


QUOTED = re.compile(r"`((?:[^`]|``)+)`")


def quoted_names(text: str) -> set[str]:
    """The names a digest text quotes (tables, columns, schemas), folded."""
    return {fold(name.replace("``", "`")) for name in QUOTED.findall(text)}


def _int(value) -> int:
    return int(value or 0)


def parse(rows) -> list[Digest]:
    return [
        Digest(
            str(digest),
            str(text or ""),
            schema,
            _int(calls),
            _int(examined),
            _int(micros),
            _int(no_index),
            _int(first),
            _int(last),
            sample,
        )
        for digest, text, schema, calls, examined, micros, no_index, first, last, sample in rows
        if digest is not None
    ]


def consumer_on(session: Session, sql: str = DIGEST_CONSUMER_SQL) -> bool:
    """Whether a performance_schema consumer is ON (False where it cannot be read)."""
    try:
        rows = session.rows(sql)
    except pymysql.MySQLError:
        return False
    return bool(rows) and str(rows[0][0]).upper() == "YES"


def history_on(session: Session) -> bool:
    """Whether MariaDB keeps recent statements' text (`explain` samples it there)."""
    return consumer_on(session, HISTORY_CONSUMER_SQL)


def read(
    session: Session, dialect: Dialect, performance_schema_on: bool, since: int, cap: int
) -> list[Digest]:
    """The digests last seen at or after `since` (server epoch seconds; 0: all), the
    costliest `cap` of them. With performance_schema OFF the table is empty but guarded,
    as file I/O's: read, so that a missing SELECT is reported beside the setting."""
    try:
        rows = session.rows(STATEMENTS.query(dialect), (since, cap))
    except pymysql.MySQLError as exc:
        raise unavailable(STATEMENTS, exc) from None
    if not performance_schema_on:  # (read all the same: a missing SELECT is said first)
        raise setting_off(STATEMENTS)
    if not rows and not consumer_on(session):
        raise ConsumerOff(STATEMENTS, SETTING)
    return parse(rows)
