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
    misc_ops: int  # COUNT_MISC: opens, closes, flushes


# How the reads a table's reopens cost are told from a partition being read. Opening a
# table reads the first page of each of its partitions' files, and a table cache smaller
# than the tables reopens them over and over: measured on 64,000 partitions in 500
# tables with table_open_cache=400, one row written into 1% of the partitions reopened
# 11,000-13,000 files, each 1 read and 2 other operations (its close and its open),
# where the rows' own files were 1 read, 1 write and 5 other operations. So 2 x reads -
# misc (the net reads) stands still through a reopen, moves by 1 at half of one (a
# close, or an open since the last look) and by 2 with each page read. The store keeps
# a file's reads as stored while its net reads stay within their quantum (twice
# PARTDASH_MIN_SAMPLED_READS) and its reads within COARSE_QUANTA quanta: the reads no
# reopen explains are seen as soon as before, the header reads go unsampled for a while
# and are then stored without being called activity (`metrics.store`). The incremental
# read hashes exactly that, in SQL (`mysql.incremental`).
COARSE_QUANTA = 8
WRITE_MISC = 3  # the other operations one write may cost (see `header_reads`)
# The same in SQL. DIV truncates towards zero, and the net reads of a file written more
# than read are negative (its flushes are other operations): a quotient about 0 twice as
# wide would hide a quantum of page reads. So the server divides the net reads shifted
# by a multiple of the divisor (2^40 of them: every file with fewer than 2^41 other
# operations than reads stays non-negative), which moves where Python's floor division
# moves; taken in that order, the unsigned counters never go below zero.
_SHIFT = 1 << 40
_QUANTA_SQL = "(2 * COUNT_READ + {shift} - COUNT_MISC) DIV {net}, COUNT_READ DIV {coarse}"


def read_quanta(read_ops: int, misc_ops: int, quantum: int) -> tuple[int, int]:
    """A file's net reads by twice the quantum and its reads by COARSE_QUANTA quanta:
    what the store compares, and what the incremental read hashes of its reads (the
    server's quotients are these, the first shifted by _SHIFT)."""
    return (2 * read_ops - misc_ops) // (2 * quantum), read_ops // (COARSE_QUANTA * quantum)


def read_quanta_sql(quantum: int) -> str:
    """`read_quanta` as the server computes it from file_summary_by_instance's columns."""
    net = 2 * quantum
    return _QUANTA_SQL.format(shift=_SHIFT * net, net=net, coarse=COARSE_QUANTA * quantum)


def header_reads(reads: int, misc: int, writes: int) -> int:
    """Of `reads` more reads of a file (with `misc` more other operations and `writes`
    more writes since), how many its table's reopens explain: half the other operations
    no write accounts for, rounded up, at most all of them. A write accounts for up to
    WRITE_MISC (measured: a page flushed alone costs 1 write and 3 other operations;
    pages flushed together share them), so a file written and read (a working set
    outgrowing the buffer pool) has fewer of its reads put down to reopens, never its
    reads hidden behind its flushes."""
    return min(reads, (max(0, misc - WRITE_MISC * writes) + 1) // 2)


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
