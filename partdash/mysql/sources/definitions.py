"""Partition definitions from information_schema.PARTITIONS, one table at a time.

This is the expensive source: every read opens the table through the table cache. The
collector reads a table's definitions only when the table is new or its set of
partitions changed, and always with constant schema and table names, the only filter
that narrows the scan.
"""

from dataclasses import dataclass, field

import pymysql

from partdash.mysql.catalogue import DEFINITIONS, TABLE_OPTIONS_SQL
from partdash.mysql.connection import Session
from partdash.mysql.names import NAME_CHARS
from partdash.mysql.sources import MISSING, unavailable

PARTITIONS_SQL = DEFINITIONS.sql
OPTIONS_SQL = TABLE_OPTIONS_SQL


@dataclass(frozen=True)
class PartitionDefinition:
    name: str
    subpartition: str
    ordinal: int
    subpartition_ordinal: int | None
    description: str | None


@dataclass
class TableDefinition:
    """How one table is partitioned."""

    schema: str
    table: str
    method: str
    expression: str
    subpartition_method: str = ""
    subpartition_expression: str = ""
    create_options: str = ""
    partitions: list[PartitionDefinition] = field(default_factory=list)


class TableGone(Exception):
    """information_schema shows no such table: it was dropped (or renamed) since the
    cheap sources listed it, or the account has no privilege on it (the collector tells
    which)."""


def parse(schema: str, table: str, rows, create_options: str = "") -> TableDefinition:
    if not rows:
        raise TableGone(f"{schema}.{table}")
    first = rows[0]
    definition = TableDefinition(
        schema=schema,
        table=table,
        method=first[4] or "",
        expression=first[6] or "",
        subpartition_method=first[5] or "",
        subpartition_expression=first[7] or "",
        create_options=create_options or "",
    )
    # Names cut as the cheap sources' are (`names.clipped`): only a hostile server
    # sends one longer than an identifier may be.
    definition.partitions = [
        PartitionDefinition(
            name[:NAME_CHARS], (sub or "")[:NAME_CHARS], ordinal, sub_ordinal, description
        )
        for name, sub, ordinal, sub_ordinal, _, _, _, _, description in rows
    ]
    return definition


def read(session: Session, schema: str, table: str) -> TableDefinition:
    try:
        rows = session.rows(PARTITIONS_SQL, (schema, table))
        options = session.scalar(OPTIONS_SQL, (schema, table)) if rows else ""
    except pymysql.MySQLError as exc:
        if exc.args and exc.args[0] in MISSING:
            raise TableGone(f"{schema}.{table}") from None
        raise unavailable(DEFINITIONS, exc) from None
    return parse(schema, table, rows, options)
