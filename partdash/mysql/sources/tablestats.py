"""Rows changed since the last statistics refresh (MODIFIED_COUNTER, a write signal that
needs no performance_schema) and AUTO_INCREMENT per partition, from InnoDB's in-memory
table statistics. Only partitions with changes are fetched, so an absent partition has a
counter of 0: one evicted from the dictionary cache has lost its counter (0 once
loaded again), which the rate code reads as a reset, never as rows changed.

What a read costs, from the server's source (storage/innobase/handler/i_s.cc,
`i_s_sys_tables_fill_table_stats`, the 10.6+ code that 10.11 runs): the fill ignores the
WHERE clause, walks every record of SYS_TABLES and, for each, calls
`dict_sys.load_table`, which loads the table into the dictionary cache when it is not
there (`dict_load_table_one`: SYS_COLUMNS/SYS_INDEXES/SYS_FIELDS, the tablespace, then
`buf_page_get` of the clustered index root and `btr_cur_instant_init`: pages of the
partition's own file). InnoDB's master thread evicts unused tables again once the cache
holds more than `table_definition_cache`, so on a server with more InnoDB tables than
that, every read loads again what was evicted since: measured on MariaDB 10.11, 12,800
partitions, table_definition_cache=400, a 32 MB buffer pool: 1.3 to 18 s and 3,600 to
13,000 pages read per read. Where the cache holds every table, a read after the first
loads none (26 buffer pool requests for SYS_TABLES' own pages, no page read).

So a poll reads it only when it can have changed and costs nothing (`plan`): rows were
written since its last read (the server's Handler_write/update/delete moved), statistics were
refreshed (a refresh resets counters) or tables changed, and, by default (`auto`), the
dictionary cache holds every InnoDB table (counted in SYS_TABLES without loading any).
Otherwise the counters read last still hold and are kept.
"""

from dataclasses import dataclass
from typing import NamedTuple

import pymysql

from partdash.mysql.catalogue import DICTIONARY_TABLES_SQL, TABLESTATS
from partdash.mysql.connection import Session
from partdash.mysql.dialects import Dialect
from partdash.mysql.names import PartitionKey, PartitionName, split_tablespace
from partdash.mysql.sources import unavailable

# MariaDB's INNODB_SYS_TABLESTATS.NAME is VARCHAR(64): a longer (encoded) name is cut, so
# `t#P#p10` can show as `t#P#p1`, another partition's name.
NAME_WIDTH = 64

# What a poll does about the counters (`plan`).
OFF = "off"  # PARTDASH_READ_TABLESTATS=off
READ = "read"  # read them
KEPT = "kept"  # no row changed since the last read: its counters still hold
UNCACHED = "uncached"  # reading would load tables the dictionary cache cannot keep


class PartitionChanges(NamedTuple):
    name: PartitionName
    modified_counter: int
    autoinc: int


Counters = dict[PartitionKey, tuple[int, int]]  # partition -> (MODIFIED_COUNTER, AUTOINC)


@dataclass(frozen=True)
class LastRead:
    """The counters of the last read, with InnoDB's row counters as of it (what the poll
    memory keeps between polls)."""

    row_writes: tuple[str, ...]
    counters: Counters
    read: bool = True  # False: not read, the dictionary cache being too small (UNCACHED)
    tables: int | None = None  # InnoDB's dictionary tables, as last counted
    partitions: int | None = None  # the partitions the poll listed when they were counted


@dataclass(frozen=True)
class Changes:
    """This poll's counters, and the partitions whose counters differ from the previous
    poll's (None: not known, any may)."""

    counters: Counters
    changed: set[PartitionKey] | None


def sql(dialect: Dialect) -> str:
    return TABLESTATS.query(dialect)


def parse(rows) -> list[PartitionChanges]:
    changes = []
    for name, modified, autoinc in rows:
        if len(name) == NAME_WIDTH:
            continue  # maybe cut short, and then maybe another partition's name
        parsed = split_tablespace(name)
        if parsed is not None:
            changes.append(PartitionChanges(parsed, modified or 0, autoinc or 0))
    return changes


def read(session: Session, dialect: Dialect) -> list[PartitionChanges]:
    try:
        return parse(session.rows(sql(dialect)))
    except pymysql.MySQLError as exc:
        raise unavailable(TABLESTATS, exc) from None


def plan(
    mode: str,
    last: LastRead | None,
    row_writes: tuple[str, ...] | None,
    *,
    continues: bool,
    refreshed: bool,
) -> str:
    """`KEPT` when the last read's counters still hold: this process read them for the
    poll stored last (`continues`), no row was inserted, updated or deleted since (the
    server's totals are those of that read) and no statistics were refreshed nor tables
    changed since (`refreshed`: a refresh resets a counter without a row written). Else
    `READ` (`OFF` when switched off; `UNCACHED` again where the last poll found the
    dictionary cache too small and nothing changed since). A counter InnoDB reset
    unseen is read at the next read, lower, which the rates count as a reset."""
    if mode == OFF:
        return OFF
    if (
        last is not None
        and continues
        and not refreshed
        and row_writes is not None
        and row_writes == last.row_writes
    ):
        return KEPT if last.read else UNCACHED
    return READ


def dictionary_tables(session: Session, dialect: Dialect) -> int:
    """How many tables InnoDB's dictionary has (a partition is one), counted in its table
    list, which loads no table (its fill builds each row from its SYS_TABLES record: 26
    buffer pool requests, no page read, on 2,567 tables). A TABLESTATS read is free only
    where `table_definition_cache` holds them all; the count also sizes the cache that
    would (`partdash.health.coverage.cache_needed`)."""
    try:
        ((count,),) = session.rows(
            DICTIONARY_TABLES_SQL.format(dictionary=dialect.dictionary_table)
        )
    except pymysql.MySQLError as exc:
        raise unavailable(TABLESTATS, exc) from None
    return int(count)


def changes(rows: list[PartitionChanges], last: LastRead | None) -> Changes:
    """This poll's counters from a read, and which partitions' differ from `last`'s."""
    counters = {row.name.key: (row.modified_counter, row.autoinc) for row in rows}
    if last is None or not last.read:
        return Changes(counters, None)
    before = last.counters
    changed = {key for key, value in counters.items() if before.get(key) != value}
    changed |= before.keys() - counters.keys()
    return Changes(counters, changed)
