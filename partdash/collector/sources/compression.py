"""Compression counters: server-wide per page size (INNODB_CMP) and per partition index
(INNODB_CMP_PER_INDEX, when innodb_cmp_per_index_enabled is ON). Never the `_RESET`
tables: reading those clears the counters for everyone."""

from typing import NamedTuple

import pymysql

from partdash.collector.names import PartitionName, split_partition
from partdash.collector.sources import SourceUnavailable, unavailable
from partdash.collector.sources.tablespaces import FIX
from partdash.servers.connection import Session

CMP_SQL = (
    "SELECT page_size, compress_ops, compress_ops_ok, compress_time, uncompress_ops, "
    "uncompress_time FROM information_schema.INNODB_CMP"
)
PER_INDEX_SQL = (
    "SELECT database_name, table_name, compress_ops, compress_ops_ok, compress_time, "
    "uncompress_ops, uncompress_time FROM information_schema.INNODB_CMP_PER_INDEX "
    "WHERE table_name LIKE '%%#P#%%' OR table_name LIKE '%%#p#%%'"
)
PER_INDEX_OFF = (
    "innodb_cmp_per_index_enabled is OFF: no per-partition compression failure rates; "
    "SET GLOBAL innodb_cmp_per_index_enabled=ON (costs some CPU)"
)
COUNTERS = ("compress_ops", "compress_ops_ok", "compress_time", "uncompress_ops", "uncompress_time")


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


def parse_per_index(rows) -> list[PartitionCompression]:
    totals: dict[PartitionName, list[int]] = {}
    for schema, table, *counters in rows:
        name = split_partition(schema, table)
        if name is not None:
            total = totals.setdefault(name, [0] * len(COUNTERS))
            for i, value in enumerate(counters):
                total[i] += int(value)
    return [PartitionCompression(name, *values) for name, values in totals.items()]


def read_cmp(session: Session) -> list[dict]:
    try:
        return parse_cmp(session.rows(CMP_SQL))
    except pymysql.MySQLError as exc:
        raise unavailable("information_schema.INNODB_CMP", exc, FIX) from None


def read_per_index(session: Session, enabled: bool) -> list[PartitionCompression]:
    if not enabled:
        raise SourceUnavailable(PER_INDEX_OFF)
    try:
        return parse_per_index(session.rows(PER_INDEX_SQL))
    except pymysql.MySQLError as exc:
        raise unavailable("information_schema.INNODB_CMP_PER_INDEX", exc, FIX) from None
