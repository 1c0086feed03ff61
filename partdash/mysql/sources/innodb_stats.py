"""Rows and index sizes per partition from the persistent statistics,
`mysql.innodb_table_stats`: one row per partition, read without opening any table.

These are optimizer estimates, refreshed by InnoDB after about 10% of a table changes
or by ANALYZE TABLE; `last_update` says how old they are.
"""

from collections.abc import Container
from datetime import UTC, datetime
from typing import NamedTuple

import pymysql

from partdash.mysql.catalogue import INNODB_TABLE_STATS
from partdash.mysql.connection import Session
from partdash.mysql.names import PartitionKey, PartitionName, split_partition
from partdash.mysql.sources import unavailable

SQL = INNODB_TABLE_STATS.sql
# Only rows refreshed since a moment: statistics change rarely, so most polls read few rows.
SINCE = " AND last_update >= FROM_UNIXTIME(%s)"


class PartitionStats(NamedTuple):
    name: PartitionName
    rows: int
    clustered_pages: int
    other_pages: int
    updated_at: datetime | None


def parse(rows, known: Container[PartitionKey] = ()) -> list[PartitionStats]:
    """`known`: partitions the tablespace list named, to read names that hold `#P#`."""
    stats = []
    for schema, table, n_rows, clustered, other, updated in rows:
        name = split_partition(schema, table, known)
        if name is not None:
            # Epoch seconds: parsing an integer is far cheaper than a DATETIME string.
            when = datetime.fromtimestamp(int(updated), UTC) if updated is not None else None
            stats.append(PartitionStats(name, n_rows, clustered, other, when))
    return stats


def read(
    session: Session, since: int | None = None, known: Container[PartitionKey] = ()
) -> list[PartitionStats]:
    """Every partition's statistics, or (with `since`, epoch seconds) those refreshed since."""
    try:
        if since is None:
            return parse(session.rows(SQL), known)
        return parse(session.rows(SQL + SINCE, (since,)), known)
    except pymysql.MySQLError as exc:
        raise unavailable(INNODB_TABLE_STATS, exc) from None
