"""Physical I/O per partition file from performance_schema.file_summary_by_instance.

Counts reads and writes that reach the file (buffer-pool hits never show; writes are
mostly page flushes). Counters restart on TRUNCATE, server restart and vanish on DROP, so
rates are derived with resets in mind.
"""

from typing import NamedTuple

import pymysql

from partdash.mysql import figures
from partdash.mysql.catalogue import FILE_IO
from partdash.mysql.connection import Session
from partdash.mysql.names import file_path_key
from partdash.mysql.sources import setting_off, unavailable

SQL = FILE_IO.sql
FIGURES = figures.of_source(figures.FILE_IO)  # the rows' figures after the file's key


class PartitionIO(NamedTuple):
    """A file's figures, named and ordered as `partdash.mysql.figures` declares them
    (the query selects them in that order)."""

    path_key: str  # names.file_path_key: matched to a partition, never parsed
    read_ops: int
    write_ops: int
    read_bytes: int
    write_bytes: int
    read_wait_us: int  # SUM_TIMER_READ, in microseconds


def parse(rows) -> list[PartitionIO]:
    io = []
    for path, *counters in rows:
        key = file_path_key(path)
        if key is not None:  # a partition's file
            io.append(PartitionIO(key, *counters))
    return io


def read(session: Session, performance_schema_on: bool) -> list[PartitionIO]:
    """With performance_schema OFF the table is empty but still guarded, so it is read
    anyway (no rows, no cost): a missing SELECT is then reported beside the setting."""
    try:
        rows = session.rows(SQL)
    except pymysql.MySQLError as exc:
        raise unavailable(FILE_IO, exc) from None
    if not performance_schema_on:
        raise setting_off(FILE_IO)
    return parse(rows)
