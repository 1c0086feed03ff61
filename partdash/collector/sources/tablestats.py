"""Rows changed since the last statistics refresh (MODIFIED_COUNTER, a write signal that
needs no performance_schema) and AUTO_INCREMENT per partition, from InnoDB's in-memory
table statistics. Only tables in the dictionary cache appear; only partitions with
changes are fetched, so an absent partition has a counter of 0.

Off by default (PARTDASH_READ_TABLESTATS): measured on MariaDB 10.11 with 64,000
partitions, each read of this table made InnoDB read pages of about 14,000 partition
files, a real cost on the monitored server and noise in the I/O counters.
"""

from typing import NamedTuple

import pymysql

from partdash.collector.catalogue import TABLESTATS
from partdash.collector.dialects import Dialect
from partdash.collector.names import PartitionName, split_tablespace
from partdash.collector.sources import unavailable
from partdash.servers.connection import Session

# MariaDB's INNODB_SYS_TABLESTATS.NAME is VARCHAR(64): a longer (encoded) name is cut, so
# `t#P#p10` can show as `t#P#p1`, another partition's name.
NAME_WIDTH = 64


class PartitionChanges(NamedTuple):
    name: PartitionName
    modified_counter: int
    autoinc: int


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
