"""Physical I/O per partition file from performance_schema.file_summary_by_instance.

Counts reads and writes that reach the file (buffer-pool hits never show; writes are
mostly page flushes). Counters restart on TRUNCATE, server restart and vanish on DROP, so
rates are derived with resets in mind.
"""

from typing import NamedTuple

import pymysql

from partdash.collector.names import file_path_key
from partdash.collector.sources import SourceUnavailable, unavailable
from partdash.servers.connection import Session

SQL = (
    "SELECT FILE_NAME, COUNT_READ, COUNT_WRITE, SUM_NUMBER_OF_BYTES_READ, "
    "SUM_NUMBER_OF_BYTES_WRITE FROM performance_schema.file_summary_by_instance "
    "WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_data_file' "
    "AND (FILE_NAME LIKE '%%#P#%%' OR FILE_NAME LIKE '%%#p#%%')"
)
FIX = "GRANT SELECT ON performance_schema.* TO the monitoring account"
OFF = (
    "performance_schema is OFF: no per-partition I/O (hotspots fall back to row growth); "
    "set performance_schema=ON under [mysqld] in my.cnf and restart"
)


class PartitionIO(NamedTuple):
    path_key: str  # names.file_path_key: matched to a partition, never parsed
    read_ops: int
    write_ops: int
    read_bytes: int
    write_bytes: int


def parse(rows) -> list[PartitionIO]:
    io = []
    for path, reads, writes, read_bytes, write_bytes in rows:
        key = file_path_key(path)
        if key is not None and "#p#" in key:
            io.append(PartitionIO(key, reads, writes, read_bytes, write_bytes))
    return io


def read(session: Session, performance_schema_on: bool) -> list[PartitionIO]:
    if not performance_schema_on:
        raise SourceUnavailable(OFF)
    try:
        return parse(session.rows(SQL))
    except pymysql.MySQLError as exc:
        raise unavailable("performance_schema.file_summary_by_instance", exc, FIX) from None
