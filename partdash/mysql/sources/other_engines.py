"""Partitioned tables of the engines partdash does not monitor (MyISAM, Aria, MEMORY and
the like): which exist, their partitions, rows and sizes, from information_schema.

partdash watches InnoDB partitions through InnoDB's own cheap sources; the other engines
have none. Their tables are found in two steps. information_schema.TABLES lists every
table that is not InnoDB from its definition alone (ENGINE and TABLE_TYPE need no table
open: measured on MariaDB 10.11, 200 tables after FLUSH TABLES, 0.05 s, Opened_tables
unchanged; selecting CREATE_OPTIONS, which says `partitioned`, instead opened every
table on the server, InnoDB's too). Then each of those is looked up in
information_schema.PARTITIONS by name, which opens that table only: exact rows and sizes
for MyISAM and Aria (their own counters), rows and memory for MEMORY. A table without
partitions gives no row there. So the cost is one open per table of another engine,
and the collector reads this only after DDL (`partdash.mysql.ddl`).
"""

from typing import NamedTuple

import pymysql

from partdash.mysql.catalogue import OTHER_ENGINE_TOTALS_SQL, OTHER_ENGINES
from partdash.mysql.connection import Session
from partdash.mysql.sources import MISSING, unavailable


class OtherTable(NamedTuple):
    """A partitioned table of an engine partdash does not monitor."""

    schema: str
    table: str
    engine: str
    partitions: int  # subpartitions counted one by one, as for InnoDB
    rows: int | None
    data_bytes: int | None
    index_bytes: int | None


# Engines whose every partition holds files of its own (data and index): what counts
# against open_files_limit.
FILES_PER_PARTITION = {"myisam": 2, "aria": 2}


def files(table: OtherTable) -> int:
    return FILES_PER_PARTITION.get(table.engine.lower(), 0) * table.partitions


def _number(value) -> int | None:
    return int(value) if value is not None else None


def read(session: Session) -> list[OtherTable]:
    try:
        candidates = session.rows(OTHER_ENGINES.sql)
        found = []
        for schema, table, engine in candidates:
            try:
                count, rows, data, index = session.rows(OTHER_ENGINE_TOTALS_SQL, (schema, table))[0]
            except pymysql.MySQLError as exc:
                if exc.args and exc.args[0] in MISSING:
                    continue  # dropped since it was listed
                raise
            if count:
                found.append(
                    OtherTable(
                        schema, table, engine, count, _number(rows), _number(data), _number(index)
                    )
                )
        return found
    except pymysql.MySQLError as exc:
        raise unavailable(OTHER_ENGINES, exc) from None
