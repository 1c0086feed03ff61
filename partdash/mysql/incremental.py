"""Reading the two wide sources, the tablespace list and file I/O, by what changed.

Both list one row per partition: 64,000 rows each on a large server, although on a
quiet one almost none changed since the last poll. So the server is first asked for one
small aggregate per bucket of about 8 rows: how many rows, and the XOR of the first 64
bits of each row's SHA-1 over every column the collector reads (`CONCAT_WS` of them;
SHA-1 rather than MD5 because MariaDB computes it in about half the time: 33 against
62 ms over 64,000 file rows, measured).
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

File read counters are hashed by their quanta (`file_io.read_quanta`): the net reads,
2 x COUNT_READ - COUNT_MISC, by twice PARTDASH_MIN_SAMPLED_READS, and COUNT_READ by
COARSE_QUANTA of it (read bytes, the time waited and the other operations not on their
own). Opening a table reads the first page of every partition file, which is no
partition being read, and a reopen leaves the net reads where they were; the store
keeps a file's reads as stored until a quantum moves up (`metrics.store._few_reads`).
So a remembered row may hold a few reads and other operations fewer than the server,
never different quanta, and what the store keeps is what a read of every row would have
made it keep. That holds while the memory continues the last stored poll: a memory
that does not (another process polled since) reads file I/O in full (`begin`).
"""

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, cast

import pymysql
from django.conf import settings

from partdash.mysql import figures
from partdash.mysql.catalogue import FILE_IO, PRIVILEGE, TABLESPACES, Source
from partdash.mysql.connection import Session, TooManyRows
from partdash.mysql.dialects import Dialect
from partdash.mysql.sources import (
    SourceUnavailable,
    file_io,
    session_lost,
    tablespaces,
    unavailable,
)

if TYPE_CHECKING:
    from partdash.mysql.sources.tablestats import LastRead

log = logging.getLogger(__name__)

ROWS_PER_BUCKET = 8  # on average: what one changed row costs to read again
# File I/O's files are bucketed by path, about 8 to a bucket as well. They were 2 while
# the header-page reads of a table cache that reopens tables moved thousands of file
# rows after writes; those no longer move what is hashed (`file_io.read_quanta`), and
# after one row written into 1% of 64,000 partitions about 650 files change: then 8,192
# buckets beat 32,768 (the aggregate 56 against 78 ms of the server's, a quarter of the
# string to parse; measured side by side, 12 polls each, twice: written polls 0.48-0.49 s
# against 0.50-0.52 s, quiet ones 0.16 against 0.18-0.19 s; 4 or 16 files no better).
# The aggregate's string grows with the buckets, up to FILE_IO_MAX_BUCKETS (about
# 800 KB, within the default group_concat_max_len of 1 MB).
FILE_IO_ROWS_PER_BUCKET = 8
FILE_IO_MAX_BUCKETS = 1 << 15
# Past this share of buckets changed, reading every row is cheaper than picking them.
MOST = 0.5
# The server's clock and uptime are read a moment apart: a start time moving by more is a
# restart.
RESTART_SLACK_SECONDS = 2


@dataclass
class Buckets:
    """One source's rows as of the last read, by bucket, with each bucket's aggregate."""

    modulus: int  # how many buckets file I/O hashes paths into (tablespaces: unused)
    aggregates: dict[int, tuple[int, int]]  # bucket -> (rows, XOR of the rows' SHA-1s)
    rows: dict[int, list]  # bucket -> its parsed rows
    read_all_at: float  # time.monotonic() of the last read of every row
    digest: str | None = None  # the aggregates as the server sent them (see `_aggregates`)
    witness: tuple | None = None  # the source's `Shape.witness`, read before its aggregates


@dataclass
class SourceMemory:
    """What one process remembers of one server's wide sources between polls, and what
    the latest poll read (`fetched`, `changed`: for the benchmark and the tests)."""

    sources: dict[str, Buckets] = field(default_factory=dict)
    fetched: dict[str, int] = field(default_factory=dict)  # source -> rows read
    changed: dict[str, int] = field(default_factory=dict)  # source -> buckets read again
    # The rows, before and after, that differ in the buckets read again this poll, per
    # source (None: every row was read): only their partitions can differ from the
    # previous poll's.
    touched: dict[str, list | None] = field(default_factory=dict)
    # The poll whose collection this memory's rows continue, once it was stored (set by
    # `stored`); None while a poll is under way or after one failed. (The partitions a
    # stored poll built, which the next one may reuse, are the collector's: `collect.Kept`,
    # which the poll's conductor keeps beside this memory.)
    basis: str | None = None
    started: int | None = None  # when the server started (epoch s), as of the last poll
    # This poll's file I/O matched the previous poll's, and so did the server's totals
    # of data file operations (`Shape.witness`): no data file was touched since.
    files_still: bool = False
    counted_at: float | None = None  # when performance_schema was last seen counting files
    # When a second session to the server last failed to open (`collect`'s read beside):
    # none is tried again for PARTDASH_FULL_READ_SECONDS.
    beside_failed_at: float | None = None
    # This poll's `Shape.witness` row, once read and until its source is (in a 1-tuple:
    # the row may be None).
    looked: tuple | None = None
    # The last read of the tablestats counters (`tablestats.LastRead`): kept while no
    # row changed since.
    tablestats: "LastRead | None" = None
    # A read of this memory under way in another thread (`collect`'s read beside), which
    # may outlive a failed poll: the next one waits for it.
    in_flight: Future | None = None

    def begin(self, last_poll: str | None = None) -> str | None:
        """A poll starts reading, the server's last stored poll being `last_poll`. Returns
        the poll this memory continues (None: none known; then neither are the partitions
        that poll built reused). Remembered file reads may lag by less than a quantum,
        which only the store of the poll they were read for knows of: if another poll
        was stored since, file I/O is read in full."""
        if self.in_flight is not None:
            wait([self.in_flight])
            self.in_flight = None
        basis, self.basis = self.basis, None
        self.files_still, self.looked = False, None
        if basis is None or basis != last_poll:
            self.sources.pop(FILE_IO.key, None)
            basis = None
        self.touched = {}
        return basis

    def restarted(self, facts) -> bool:
        """Whether the server restarted since the last poll read through this memory
        (from its clock less its uptime). Its file counters then start again from zero,
        which a remembered quantum could hide: file I/O is read in full."""
        uptime, clock = facts.status.get("uptime", ""), facts.clock
        if not str(uptime).isdigit() or clock is None:
            return False
        before, self.started = self.started, clock - int(uptime)
        if before is None or abs(self.started - before) <= RESTART_SLACK_SECONDS:
            return False
        self.sources.pop(FILE_IO.key, None)
        return True

    def stored(self, poll_id: str) -> None:
        """The poll read through this memory was stored: the next one continues it."""
        self.basis = poll_id

    def read(
        self, session: Session, dialect: Dialect, source: Source, unchanged: bool = False
    ) -> list:
        """Every row of `source`, read where its bucket changed. Should the server refuse
        the bucketed queries for another reason than a lost session or a missing
        privilege, every row is read as without a memory. `unchanged`: the caller knows
        no row changed since the last read (the tablespace list, when no data file was
        touched: `files_untouched`); the remembered rows are returned without a query,
        unless they are due to be read in full."""
        shape = SHAPES[source.key]
        before = self.sources.get(shape.key)
        if unchanged and before is not None and self._fresh(before):
            self.touched[shape.key], self.fetched[shape.key], self.changed[shape.key] = [], 0, 0
            return _every_row(before.rows)
        try:
            return self._read(session, shape, source.query(dialect))
        except pymysql.MySQLError as exc:
            failure = unavailable(source, exc)
            if not isinstance(failure, SourceUnavailable) or failure.cause == PRIVILEGE:
                raise failure from None
            if isinstance(exc, TooManyRows):  # the session is closed: not read again
                self.sources.pop(shape.key, None)
                raise failure from None
            log.warning("reading %s by buckets failed (%s): every row is read", source.key, exc)
            self.sources.pop(shape.key, None)
            self.touched[shape.key] = None
            return shape.read_all(session, dialect)

    def remembered(self, source: Source) -> list | None:
        """The source's rows as remembered, while they may still be trusted unread (what
        `read` returns when no bucket changed); None otherwise."""
        before = self.sources.get(SHAPES[source.key].key)
        return _every_row(before.rows) if before is not None and self._fresh(before) else None

    @staticmethod
    def _fresh(before: Buckets) -> bool:
        """Whether remembered rows may still be trusted, rather than read in full."""
        return time.monotonic() - before.read_all_at < settings.PARTDASH_FULL_READ_SECONDS

    def files_touched(self, session: Session, facts) -> bool:
        """Whether a data file was certainly touched since the previous poll, known before
        file I/O is read: the server's totals of data file operations (`Shape.witness`)
        moved, or nothing could prove otherwise (no file I/O remembered, a file not
        counted: see `files_untouched`). The tablespace list is then read whatever file
        I/O says, so `collect` reads it beside file I/O, on a second session.

        The witness is read here in every case, before that read starts, and is the one
        file I/O remembers (`_read`): what the next poll compares must be older than the
        tablespace rows remembered with it, or a file created between the two reads
        would leave both the list and the witness unchanged at the next poll."""
        witness = self._witness(session, SHAPES[FILE_IO.key])
        before = self.sources.get(FILE_IO.key)
        if before is None or before.witness is None:
            return True
        return not self._every_file_counted(session, facts) or witness != before.witness

    def _witness(self, session: Session, shape: "Shape") -> tuple | None:
        """The row `shape.witness` selects, read once a poll (None without one, or when
        it cannot be read)."""
        if shape.witness is None:
            return None
        if self.looked is None:
            found = _rows_or_none(session, shape.witness)
            self.looked = (tuple(found[0]) if found else None,)
        return self.looked[0]

    def beside_allowed(self) -> bool:
        """Whether to try a second session (none since one failed to open, for a while)."""
        failed = self.beside_failed_at
        return failed is None or time.monotonic() - failed >= settings.PARTDASH_FULL_READ_SECONDS

    def beside_failed(self) -> None:
        self.beside_failed_at = time.monotonic()

    def files_untouched(self, session: Session, facts) -> bool:
        """Whether this poll's file I/O proves that no data file was created, dropped,
        renamed, written, extended or truncated since the previous poll: its aggregates
        matched, the server's totals of writes and of other operations on data files
        (creating, deleting, renaming, opening, closing and extending one: a file InnoDB
        extends without writing yet shows there; kept when a file is deleted, unlike its
        own row, which a file created again under its name can match exactly) did not
        move, and performance_schema counts every file: no file instance or handle lost
        (an uncounted file could grow unseen), the instrument and its consumer on
        (`_counting`). Then the tablespace list cannot have changed either, and is not
        read (its table fill is most of a quiet poll)."""
        counted = self._every_file_counted(session, facts)  # (checked on a first poll too)
        return self.files_still and counted

    def _every_file_counted(self, session: Session, facts) -> bool:
        """performance_schema counts every data file: the instrument and its consumer on
        (`_counting`), no file instance or handle lost (an uncounted file could grow
        unseen)."""
        if not self._counting(session):
            return False
        return all(facts.number(name, default=1) == 0 for name in FILES_LOST)

    def _counting(self, session: Session) -> bool:
        """Whether the data files' instrument and the global_instrumentation consumer are
        on. Checked once per PARTDASH_FULL_READ_SECONDS, like the full reads: reading the
        setup tables every poll would open two more tables on the server whenever its
        table cache let them go. An instrument switched off at run time is noticed within
        that time (the file I/O figures themselves stop with it)."""
        now = time.monotonic()
        if (
            self.counted_at is not None
            and now - self.counted_at < settings.PARTDASH_FULL_READ_SECONDS
        ):
            return True
        found = _rows_or_none(session, FILE_IO_COUNTED_SQL)
        self.counted_at = now if found and tuple(found[0]) == ("YES", "YES") else None
        return self.counted_at is not None

    def _read(self, session: Session, shape: "Shape", sql: str) -> list:
        select, condition = sql.split(" WHERE ", 1)
        columns, table = select.removeprefix("SELECT ").split(" FROM ", 1)
        hashed = shape.hashed(columns)
        before = self.sources.get(shape.key)
        fresh = before is not None and self._fresh(before)
        modulus = before.modulus if before is not None else 0
        if before is None and shape.sized:  # a first read: size the buckets by a count
            count = session.rows(f"SELECT COUNT(*) FROM {table} WHERE ({condition})")[0][0]
            modulus = shape.modulus_for(count)
        # `before` as read below: only where `fresh`, or `quiet` (the digest equal to a
        # fresh one's), says there is one, which mypy cannot follow.
        known = cast(Buckets, before)

        def aggregates_by(modulus: int) -> tuple[str | None, dict[int, tuple[int, int]] | None]:
            checksum = (
                f"BIT_XOR(CAST(CONV(LEFT(SHA1(CONCAT_WS(',', {hashed})), 16), 16, 10) AS UNSIGNED))"
            )
            inner = (
                f"SELECT {shape.bucket(modulus)} AS b, COUNT(*) AS n, {checksum} AS x "
                f"FROM {table} WHERE ({condition}) GROUP BY b"
            )
            return _aggregates(session, inner, known.digest if fresh else None)

        witness = self._witness(session, shape)  # (before the aggregates it vouches for)
        if shape.witness is not None:  # (used: the next poll looks again; the other
            self.looked = None  # source, read beside, has none and leaves it alone)
        digest, aggregates = aggregates_by(modulus)
        quiet = aggregates is None  # the same string as the previous poll's: nothing changed
        if shape.witness is not None:
            self.files_still = quiet and witness is not None and witness == known.witness
        if aggregates is None:  # quiet
            aggregates = known.aggregates
        else:
            wanted = shape.modulus_for(sum(count for count, _ in aggregates.values()))
            if wanted != modulus:  # the first read, or the partition count moved on
                modulus, fresh = wanted, False
                digest, aggregates = aggregates_by(modulus)
                assert aggregates is not None  # not fresh: no digest to be the same as
        changed = [
            bucket
            for bucket, aggregate in ({} if quiet else aggregates).items()
            if not fresh or known.aggregates.get(bucket) != aggregate
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
        count = len(fetched)
        by_bucket: dict[int, list] = {bucket: [] for bucket in changed}
        for row in fetched:
            by_bucket.setdefault(row[0], []).append(row)
        del fetched  # each bucket's rows are freed as it is parsed: one copy at a time
        parsed = {}
        for bucket in list(by_bucket):
            parsed[bucket] = shape.parse([row[1:] for row in by_bucket.pop(bucket)])
        if every:
            rows, read_all_at = parsed, time.monotonic()
            self.touched[shape.key] = None
        elif quiet:
            rows, read_all_at = known.rows, known.read_all_at
            self.touched[shape.key] = []
        else:
            rows = {b: parsed[b] if b in parsed else known.rows.get(b, []) for b in aggregates}
            read_all_at = known.read_all_at
            gone = [b for b in known.aggregates if b not in aggregates]
            same = shape.same(columns)
            self.touched[shape.key] = _differing(known.rows, parsed, (*changed, *gone), same)
        self.sources[shape.key] = Buckets(modulus, aggregates, rows, read_all_at, digest, witness)
        self.fetched[shape.key] = count
        self.changed[shape.key] = len(changed)
        log.debug(
            "%s: %d of %d buckets moved, %d rows read%s",
            shape.key,
            len(changed),
            len(aggregates),
            count,
            " (every row)" if every else "",
        )
        return _every_row(rows)


def _differing(before: dict[int, list], after: dict[int, list], buckets, same=None) -> list:
    """The rows of `buckets` not both remembered and read again: the added, the dropped
    and the changed ones, before and after. A bucket is read again for the sake of its
    changed rows; the others in it hash as they did and name no partition that moved.
    `same`: what a row is as the aggregate hashes it (None: the whole row)."""
    rows: list = []
    for bucket in buckets:
        old, new = before.get(bucket, ()), after.get(bucket, ())
        if not (old and new):
            rows += old
            rows += new
        elif same is None:
            kept = set(old).intersection(new)
            rows += [row for row in old if row not in kept]
            rows += [row for row in new if row not in kept]
        else:
            olds, news = set(map(same, old)), set(map(same, new))
            rows += [row for row in old if same(row) not in news]
            rows += [row for row in new if same(row) not in olds]
    return rows


def _rows_or_none(session: Session, sql: str) -> list | None:
    """The rows of a check the poll can do without: None when the server refuses it (a
    missing privilege, a table it lacks); a lost session fails the poll, as any source."""
    try:
        return session.rows(sql)
    except pymysql.MySQLError as exc:
        if session_lost(exc):
            raise
        return None


def _every_row(rows: dict[int, list]) -> list:
    return [row for bucket in rows.values() for row in bucket]


def _aggregates(
    session: Session, inner: str, same_as: str | None
) -> tuple[str | None, dict[int, tuple[int, int]] | None]:
    """The bucket aggregates `inner` selects (b, n, x), fetched as one string, `b n x`
    joined by commas in bucket order: comparing it with the previous poll's tells a
    quiet source without parsing thousands of rows. Returns (that string, bucket ->
    (n, x)), the aggregates being `None` when the string equals `same_as`. A string
    that does not hold every bucket (cut short by group_concat_max_len, or NULL past
    max_allowed_packet) is not used: one row per bucket then."""
    text, buckets, limit = session.rows(
        f"SELECT GROUP_CONCAT(b, ' ', n, ' ', x ORDER BY b SEPARATOR ','), COUNT(*), "
        f"@@group_concat_max_len FROM ({inner}) AS a"
    )[0]
    if isinstance(text, bytes):
        text = text.decode("ascii")
    text = text or ""
    # Cut short by group_concat_max_len, or emptied by max_allowed_packet: count them.
    if len(text) >= int(limit) or (text.count(",") + 1 if text else 0) != buckets:
        rows = session.rows(inner)
        return None, {bucket: (count, xor) for bucket, count, xor in rows}
    if text == same_as:
        return text, None
    return text, _aggregates_of(text)


def _aggregates_of(text: str) -> dict[int, tuple[int, int]]:
    """The aggregates in the string `_aggregates` fetches (bucket -> (rows, XOR))."""
    aggregates = {}
    for item in text.split(",") if text else ():
        bucket, count, xor = item.split(" ")
        aggregates[int(bucket)] = (int(count), int(xor))
    return aggregates


@dataclass(frozen=True)
class Shape:
    """How one source is bucketed and parsed."""

    key: str
    bucket: Callable[[int], str]  # the bucket's SQL expression, given the modulus
    parse: Callable[[list], list]
    modulus_for: Callable[[int], int]  # the modulus for a number of rows
    read_all: Callable[[Session, Dialect], list]  # every row, as without a memory
    # What the aggregate hashes, given the columns read: all of them, but for file I/O.
    hashed: Callable[[str], str] = lambda columns: columns
    sized: bool = False  # whether the modulus depends on the row count
    # A query whose row, unchanged since the last read, proves more than the aggregates
    # (see `SourceMemory.files_untouched`).
    witness: str | None = None
    # Given the columns read: what a parsed row is as the aggregate hashes it, where that
    # is not the whole row (None: the whole row); see `_differing`.
    same: Callable[[str], Callable | None] = lambda columns: None


FILE_IO_COLUMNS = f"FILE_NAME, {figures.columns(figures.FILE_IO)}"
# The file I/O figures the aggregate hashes: those that move with another are left out.
_FILE_IO_HASHED = tuple(
    name for name in figures.of_source(figures.FILE_IO) if not figures.figure(name).follows
)


def file_io_hashed(columns: str) -> str:
    """File I/O's columns with the read counter by quantum and the figures that move with
    another (read bytes, with reads) left out: see the module's docstring."""
    if columns != FILE_IO_COLUMNS:  # the catalogue's query changed: hash what is read
        return columns
    quantum = settings.PARTDASH_MIN_SAMPLED_READS
    hashed = [figures.figure(name).column for name in _FILE_IO_HASHED]
    if quantum > 1:  # (else every read is sampled: the counter hashed as it is)
        hashed[_FILE_IO_HASHED.index("read_ops")] = file_io.read_quanta_sql(quantum)
    return ", ".join(("FILE_NAME", *hashed))


def _path_buckets(rows: int) -> int:
    """A power of two near `rows` / FILE_IO_ROWS_PER_BUCKET (at least 1, at most
    FILE_IO_MAX_BUCKETS)."""
    wanted = max(1, rows // FILE_IO_ROWS_PER_BUCKET)
    return min(1 << (wanted - 1).bit_length(), FILE_IO_MAX_BUCKETS)


def file_io_same(columns: str) -> Callable | None:
    """What a parsed file I/O row is as its bucket's aggregate hashes it (`file_io_hashed`),
    as a key compared with other rows' keys: its reads by their quanta (`read_quanta`),
    what moves with them left out. A row read again that differs from the remembered one
    within its quanta names no partition that moved, as the store keeps such reads
    unsampled (`metrics.store._few_reads`)."""
    if file_io_hashed(columns) == columns:
        return None
    quantum = settings.PARTDASH_MIN_SAMPLED_READS
    others = [name for name in _FILE_IO_HASHED if name != "read_ops"]
    if quantum <= 1:
        return attrgetter("path_key", "read_ops", *others)
    kept, quanta = attrgetter("path_key", *others), file_io.read_quanta
    return lambda row: (*quanta(row.read_ops, row.misc_ops, quantum), *kept(row))


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
    # Paths hashed. A first read counts the rows to pick the modulus; should the count
    # move on before the aggregate is read, the aggregate's row count picks it again.
    # (With a modulus of 0, MOD(x, 0) is NULL, hence the IFNULL: every row in bucket 0.)
    FILE_IO.key: Shape(
        FILE_IO.key,
        lambda modulus: f"IFNULL(MOD(CRC32(FILE_NAME), {modulus}), 0)",
        file_io.parse,
        _path_buckets,
        lambda session, dialect: file_io.read(session, True),
        file_io_hashed,
        sized=True,
        witness=(
            "SELECT COUNT_MISC, COUNT_WRITE FROM performance_schema.file_summary_by_event_name "
            "WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_data_file'"
        ),
        same=file_io_same,
    ),
}
# Files performance_schema could not count (see `files_untouched`): server status.
FILES_LOST = ("performance_schema_file_instances_lost", "performance_schema_file_handles_lost")
# Whether performance_schema counts the data files' I/O (see `files_untouched`).
FILE_IO_COUNTED_SQL = (
    "SELECT (SELECT ENABLED FROM performance_schema.setup_instruments "
    "WHERE NAME = 'wait/io/file/innodb/innodb_data_file'), "
    "(SELECT ENABLED FROM performance_schema.setup_consumers "
    "WHERE NAME = 'global_instrumentation')"
)
