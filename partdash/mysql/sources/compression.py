"""Compression counters: server-wide per page size (INNODB_CMP) and per partition index
(INNODB_CMP_PER_INDEX, when innodb_cmp_per_index_enabled is ON). Never the `_RESET`
tables: reading those clears the counters for everyone."""

from collections.abc import Container
from typing import NamedTuple

import pymysql

from partdash.mysql import figures
from partdash.mysql.catalogue import CMP_PER_INDEX, INNODB_CMP
from partdash.mysql.connection import Session
from partdash.mysql.names import PartitionKey, PartitionName, split_partition
from partdash.mysql.sources import setting_off, unavailable

CMP_SQL = INNODB_CMP.sql
PER_INDEX_SQL = CMP_PER_INDEX.sql
# INNODB_CMP's counters; INNODB_CMP_PER_INDEX's are the partition figures declared for it,
# the same five (`partdash.mysql.figures`).
COUNTERS = ("compress_ops", "compress_ops_ok", "compress_time", "uncompress_ops", "uncompress_time")
PER_INDEX = figures.of_source(figures.CMP_PER_INDEX)


class PartitionCompression(NamedTuple):
    """Counters summed over the partition's indexes."""

    name: PartitionName
    compress_ops: int
    compress_ops_ok: int
    compress_time: int
    uncompress_ops: int
    uncompress_time: int


def parse_cmp(rows) -> list[dict]:
    return [dict(zip(("page_size", *COUNTERS), map(int, row), strict=True)) for row in rows]


def parse_per_index(rows, known: Container[PartitionKey] = ()) -> list[PartitionCompression]:
    """`known`: partitions the tablespace list named, to read names that hold `#P#`."""
    totals: dict[PartitionName, list[int]] = {}
    for schema, table, *counters in rows:
        name = split_partition(schema, table, known)
        if name is not None:
            total = totals.setdefault(name, [0] * len(PER_INDEX))
            for i, value in enumerate(counters):
                total[i] += int(value)
    return [PartitionCompression(name, *values) for name, values in totals.items()]


def read_cmp(session: Session) -> list[dict]:
    try:
        return parse_cmp(session.rows(CMP_SQL))
    except pymysql.MySQLError as exc:
        raise unavailable(INNODB_CMP, exc) from None


def read_per_index(
    session: Session, enabled: bool, known: Container[PartitionKey] = ()
) -> list[PartitionCompression]:
    if not enabled:
        raise setting_off(CMP_PER_INDEX)
    try:
        return parse_per_index(session.rows(PER_INDEX_SQL), known)
    except pymysql.MySQLError as exc:
        raise unavailable(CMP_PER_INDEX, exc) from None
