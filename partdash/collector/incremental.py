"""Reading the two wide sources, the tablespace list and file I/O, by what changed.

Both list one row per partition: 64,000 rows each on a large server, although on a
quiet one almost none changed since the last poll. So the server is first asked for one
small aggregate per bucket of about 8 rows: how many rows, and the XOR of the first 64
bits of each row's MD5 over every column the collector reads (`CONCAT_WS` of them).
Only buckets whose aggregate differs from the previous poll's are read row by row; the
others keep the rows (already parsed) this process remembers. The aggregation runs in
the server, in C: partdash parses a few thousand short rows instead of 128,000.

Can a change hide? Only if it leaves its bucket's row count and XOR equal: a changed
row whose hash collides with its old one, or changes in one bucket cancelling out
exactly, each about 2^-64 for a change. (Not CRC32: it is linear, so two rows changed
the same way, say both files read once more, cancel out in the XOR, and a bucket of
a table's partitions renamed together XORs to what it was.) To bound how long such a
change could go unseen, every row is read again once the remembered rows are older
than PARTDASH_FULL_READ_SECONDS (an hour by default).

The aggregate is always read before the rows it vouches for, so remembered rows are
never older than the aggregate stored with them: a change between the two reads shows
as a differing aggregate at the next poll, and that bucket is read again then.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pymysql
from django.conf import settings

from partdash.collector.catalogue import FILE_IO, PRIVILEGE, TABLESPACES, Source
from partdash.collector.dialects import Dialect
from partdash.collector.sources import SourceUnavailable, file_io, tablespaces, unavailable
from partdash.servers.connection import Session

log = logging.getLogger(__name__)

ROWS_PER_BUCKET = 8  # on average: what one changed row costs to read again
# Past this share of buckets changed, reading every row is cheaper than picking them.
MOST = 0.5


@dataclass
class Buckets:
    """One source's rows as of the last read, by bucket, with each bucket's aggregate."""

    modulus: int  # how many buckets file I/O hashes paths into (tablespaces: unused)
    aggregates: dict[int, tuple[int, int]]  # bucket -> (rows, XOR of the rows' MD5s)
    rows: dict[int, list]  # bucket -> its parsed rows
    read_all_at: float  # time.monotonic() of the last read of every row


@dataclass
class SourceMemory:
    """What one process remembers of one server's wide sources between polls, and what
    the latest poll read (`fetched`, `changed`: for the benchmark and the tests)."""

    sources: dict[str, Buckets] = field(default_factory=dict)
    fetched: dict[str, int] = field(default_factory=dict)  # source -> rows read
    changed: dict[str, int] = field(default_factory=dict)  # source -> buckets read again
    # The rows, before and after, of the buckets read again this poll, per source (None:
    # every row was read): only their partitions can differ from the previous poll's.
    touched: dict[str, list | None] = field(default_factory=dict)
    # The poll whose collection this memory's rows continue, once it was stored (set by
    # the poll service); None while a poll is under way or after one failed.
    basis: str | None = None

    def begin(self) -> str | None:
        """A poll starts reading: returns the poll it continues (None: none known)."""
        basis, self.basis = self.basis, None
        self.touched = {}
        return basis

    def read(self, session: Session, dialect: Dialect, source: Source) -> list:
        """Every row of `source`, read where its bucket changed. Should the server refuse
        the bucketed queries for another reason than a lost session or a missing
        privilege, every row is read as without a memory."""
        shape = SHAPES[source.key]
        try:
            return self._read(session, shape, source.query(dialect))
        except pymysql.MySQLError as exc:
            failure = unavailable(source, exc)
            if not isinstance(failure, SourceUnavailable) or failure.cause == PRIVILEGE:
                raise failure from None
            log.warning("reading %s by buckets failed (%s): every row is read", source.key, exc)
            self.sources.pop(shape.key, None)
            self.touched[shape.key] = None
            return shape.read_all(session, dialect)

    def _read(self, session: Session, shape: "Shape", sql: str) -> list:
        select, condition = sql.split(" WHERE ", 1)
        columns, table = select.removeprefix("SELECT ").split(" FROM ", 1)
        before = self.sources.get(shape.key)
        fresh = before is not None and (
            time.monotonic() - before.read_all_at < settings.PARTDASH_FULL_READ_SECONDS
        )
        modulus = before.modulus if before is not None else 0

        def aggregates_by(modulus: int) -> dict[int, tuple[int, int]]:
            checksum = (
                f"BIT_XOR(CAST(CONV(LEFT(MD5(CONCAT_WS(',', {columns})), 16), 16, 10) AS UNSIGNED))"
            )
            rows = session.rows(
                f"SELECT {shape.bucket(modulus)} AS b, COUNT(*), {checksum} "
                f"FROM {table} WHERE ({condition}) GROUP BY b"
            )
            return {bucket: (count, xor) for bucket, count, xor in rows}

        aggregates = aggregates_by(modulus)
        wanted = shape.modulus_for(sum(count for count, _ in aggregates.values()))
        if wanted != modulus:  # the first read, or the partition count moved on
            modulus, fresh = wanted, False
            aggregates = aggregates_by(modulus)
        changed = [
            bucket
            for bucket, aggregate in aggregates.items()
            if not fresh or before.aggregates.get(bucket) != aggregate
        ]
        every = not fresh or len(changed) > MOST * len(aggregates)
        key = shape.bucket(modulus)
        select = f"SELECT {key}, {columns} FROM {table} WHERE ({condition})"
        if every:
            fetched = session.rows(select)
        elif changed:
            fetched = session.rows(f"{select} AND {key} IN ({', '.join(map(str, changed))})")
        else:
            fetched = []
        by_bucket: dict[int, list] = {bucket: [] for bucket in changed}
        for row in fetched:
            by_bucket.setdefault(row[0], []).append(row[1:])
        parsed = {bucket: shape.parse(rows) for bucket, rows in by_bucket.items()}
        if every:
            rows, read_all_at = parsed, time.monotonic()
            self.touched[shape.key] = None
        else:
            rows = {b: parsed[b] if b in parsed else before.rows.get(b, []) for b in aggregates}
            read_all_at = before.read_all_at
            gone = [b for b in before.aggregates if b not in aggregates]
            self.touched[shape.key] = [
                row
                for bucket in (*changed, *gone)
                for row in (*before.rows.get(bucket, ()), *parsed.get(bucket, ()))
            ]
        self.sources[shape.key] = Buckets(modulus, aggregates, rows, read_all_at)
        self.fetched[shape.key] = len(fetched)
        self.changed[shape.key] = len(changed)
        return [row for bucket in rows.values() for row in bucket]


@dataclass(frozen=True)
class Shape:
    """How one source is bucketed and parsed."""

    key: str
    bucket: Callable[[int], str]  # the bucket's SQL expression, given the modulus
    parse: Callable[[list], list]
    modulus_for: Callable[[int], int]  # the modulus for a number of rows
    read_all: Callable[[Session, Dialect], list]  # every row, as without a memory


def _path_buckets(rows: int) -> int:
    """A power of two near `rows` / ROWS_PER_BUCKET (at least 1)."""
    wanted = max(1, rows // ROWS_PER_BUCKET)
    return 1 << (wanted - 1).bit_length()


SHAPES = {
    # Space ids are handed out in order, so a table's partitions sit in neighbouring
    # buckets; the modulus is not needed.
    TABLESPACES.key: Shape(
        TABLESPACES.key,
        lambda modulus: f"SPACE DIV {ROWS_PER_BUCKET}",
        tablespaces.parse,
        lambda rows: 0,
        tablespaces.read,
    ),
    # Paths hashed. Before any read the modulus is 0 and every row falls in bucket 0
    # (MOD(x, 0) is NULL, hence the IFNULL); that aggregate's row count sets the modulus.
    FILE_IO.key: Shape(
        FILE_IO.key,
        lambda modulus: f"IFNULL(MOD(CRC32(FILE_NAME), {modulus}), 0)",
        file_io.parse,
        _path_buckets,
        lambda session, dialect: file_io.read(session, True),
    ),
}
