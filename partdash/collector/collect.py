"""Collecting one server's partition figures from the cheap sources, plus definitions for
the tables that are new or changed. Returns plain data; storing is `store.py`'s job."""

import hashlib
import logging
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import cast

from django.conf import settings

from partdash.collector import comparing
from partdash.mysql import catalogue, ddl
from partdash.mysql.catalogue import (
    DEFERRED,
    DROPPED,
    ERROR,
    FILE_IO,
    INNODB_TABLE_STATS,
    OTHER_ENGINES,
    PRIVILEGE,
    SETTING,
    STATEMENTS,
    TABLESPACES,
    Shortfall,
    grouped,
    hidden_shortfall,
    setting_shortfall,
    tables_shortfall,
)
from partdash.mysql.connection import ConnectionFailure, Session
from partdash.mysql.dialects import Dialect, dialect_for
from partdash.mysql.incremental import SourceMemory
from partdash.mysql.names import (
    NAME_CHARS,
    PartitionKey,
    PartitionName,
    clipped,
    fold,
    identity,
)
from partdash.mysql.sources import (
    SourceUnavailable,
    compression,
    definitions,
    file_io,
    innodb_stats,
    other_engines,
    server_facts,
    setting_off,
    statements,
    tablespaces,
    tablestats,
)
from partdash.mysql.sources.definitions import TableDefinition, TableGone
from partdash.mysql.sources.explain import PlanRead, explain, history_samples
from partdash.mysql.sources.statements import Digest

log = logging.getLogger(__name__)
TableKey = tuple[str, str]


def table_key(schema: str, table: str) -> TableKey:
    """A table's key from its names (a stored table's, a warning's), matched as the
    sources' names are."""
    return PartitionName(schema, table, "").key.table_key


# The signature of a table whose definitions were read while DDL changed it: no set of
# partitions has it, so the next poll reads them again.
RACED = "raced"
# The signature stored for a table whose definitions are due again though its partitions
# did not move (`ddl`), when the poll that found them due had no budget left for it.
RECHECK = "recheck"


@dataclass(slots=True)
class PartitionFigures:
    """Everything the cheap sources said about one partition this poll (None: unknown):
    a field per figure `partdash.mysql.figures` declares, of the figure's name."""

    name: PartitionName
    key: PartitionKey
    slot: str  # `partition#subpartition`, lower-cased: the partition within its table
    rows: int | None = None
    clustered_pages: int | None = None
    other_pages: int | None = None
    data_bytes: int | None = None  # pages x the partition's physical (zip) page size
    index_bytes: int | None = None
    stats_updated_at: datetime | None = None
    space_id: int | None = None
    file_bytes: int | None = None
    allocated_bytes: int | None = None
    page_size: int | None = None
    row_format: str = ""
    read_ops: int | None = None
    write_ops: int | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    read_wait_us: int | None = None
    misc_ops: int | None = None
    modified_counter: int | None = None
    autoinc: int | None = None
    compress_ops: int | None = None
    compress_ops_ok: int | None = None
    compress_time: int | None = None
    uncompress_ops: int | None = None
    uncompress_time: int | None = None


@dataclass
class Collection:
    """What one poll collected from one server."""

    flavor: str
    version: str
    dialect: Dialect
    facts: server_facts.ServerFacts
    partitions: dict[PartitionKey, PartitionFigures] = field(default_factory=dict)
    signatures: dict[TableKey, str] = field(default_factory=dict)
    definitions: dict[TableKey, TableDefinition] = field(default_factory=dict)
    gone: set[TableKey] = field(default_factory=set)
    deferred: int = 0
    # Statistics: the server clock (epoch seconds) as of which every refresh was read,
    # and whether only rows refreshed since the previous poll were read.
    stats_watermark: int | None = None
    stats_incremental: bool = False
    # Every partition has its own tablespace file, so the tablespace list alone tells
    # which partitions exist (what makes an incremental statistics read safe).
    files_cover_partitions: bool = False
    by_path: dict[str, PartitionFigures] = field(default_factory=dict)  # names.path_key
    innodb_cmp: list[dict] = field(default_factory=list)
    sources: dict[str, bool] = field(default_factory=dict)  # catalogue key -> was read
    # Read through a `SourceMemory`: the poll this collection continues (`basis`, the
    # previous poll of this process, stored) and the partitions whose figures may differ
    # from that poll's (`dirty`; None: any may). The store compares only those.
    basis: str | None = None
    dirty: set[PartitionKey] | None = None
    merged: set[PartitionKey] = field(default_factory=set)  # statistics, counters, compression
    # Why each partition of `dirty` may differ: reason (`comparing`'s names: the source
    # whose bucket or statistics time moved) -> its partitions; with `evidence`, the rows
    # of the buckets read again that name it. Gathered only where `comparing` logs at
    # DEBUG (None otherwise): a 64,000-partition poll spends nothing on it.
    reasons: dict[str, set[PartitionKey]] | None = None
    evidence: dict[PartitionKey, list] = field(default_factory=dict)
    # Partitions a read of every statistics row found no row for: their rows and sizes
    # are unknown now, not what they were (the store forgets them). EXCHANGE PARTITION
    # leaves the emptied partition without one until InnoDB recalculates it, which with
    # STATS_AUTO_RECALC=0 is never (measured on 10.11).
    unstated: set[PartitionKey] = field(default_factory=set)
    # What the poll did about the tablestats counters: read, kept (no row changed since
    # they were read), uncached (reading would load tables), off; "" before deciding.
    tablestats_plan: str = ""
    # InnoDB's dictionary tables (a partition is one), where counted to decide that plan.
    dictionary_tables: int | None = None
    # Assembled before the tablespace list read beside came back (see `Speculation`).
    speculation: "Speculation | None" = None
    # The partitions this collection built, for the next poll to reuse once this one is
    # stored (`Kept`); None where an unchanged tablespace list would not prove them
    # unchanged, or the poll read without a `SourceMemory`.
    reusable: "Kept | None" = None
    # What could not be read: per source as it happens, per table below, and all of it
    # grouped by fix in `warnings` once the poll is done (`finish`).
    shortfalls: list[Shortfall] = field(default_factory=list)
    hidden: set[TableKey] = field(default_factory=set)  # listed, but not in information_schema
    raced: set[TableKey] = field(default_factory=set)  # definitions read while DDL changed them
    # Tables whose definitions are due though their signature did not change (`ddl`), left
    # for the next polls (stored with the signature RECHECK).
    recheck: set[TableKey] = field(default_factory=set)
    # Partitioned tables of other engines (MyISAM, Aria, MEMORY...), listed but not
    # monitored; None when not read this poll (only after DDL: see `ddl`).
    other_tables: list[other_engines.OtherTable] | None = None
    unreadable: dict[str, list[TableKey]] = field(default_factory=dict)  # reason -> tables
    # Statement digests seen since the last read (None: not read this poll), the server
    # clock before the read (the next read's `since`), and per digest the tables its
    # plan reads where EXPLAIN was run (`explain_statements`). No sample text is kept.
    statements: list[Digest] | None = None
    statements_due: bool = False
    statements_watermark: int | None = None
    plans: dict[str, list[PlanRead]] = field(default_factory=dict)
    warnings: list[Shortfall] = field(default_factory=list)
    # Partitions are only ever added during a poll, so their count tells whether the
    # grouping and signatures computed earlier in the poll still hold.
    _grouped: tuple[int, dict] = (-1, {})
    _signed: int = -1

    def tables(self) -> dict[TableKey, list[PartitionFigures]]:
        count, grouped = self._grouped
        if count != len(self.partitions):
            grouped = defaultdict(list)
            for key, figures in self.partitions.items():
                grouped[key.table_key].append(figures)
            self._grouped = (len(self.partitions), grouped)
        return grouped

    def sign(self) -> dict[TableKey, str]:
        """Every table's signature (see `signature`; `RACED` for the tables in `raced`)."""
        if self._signed != len(self.partitions):
            self.signatures = {key: signature(m) for key, m in self.tables().items()}
            self.signatures |= dict.fromkeys(self.raced & self.signatures.keys(), RACED)
            self._signed = len(self.partitions)
        return self.signatures

    @property
    def listed(self) -> bool:
        """Whether a source that lists every partition was read: only then does the
        absence of a table mean something."""
        return self.sources.get(TABLESPACES.key, False) or self.sources.get(
            INNODB_TABLE_STATS.key, False
        )

    @property
    def lines(self) -> list[str]:
        return [warning.line for warning in self.warnings]

    def spelt(self, key: TableKey) -> tuple[str, str]:
        """A table's schema and name as the server spells them."""
        name = self.tables()[key][0].name
        return (name.schema, name.table)

    def finish(self) -> None:
        """Group what could not be read into `warnings`: one per distinct fix."""
        warnings = grouped(self.shortfalls)
        if self.hidden:
            hidden = [self.spelt(key) for key in self.hidden]
            warnings.append(hidden_shortfall(hidden, len(self.sign()), self.facts.account))
        for reason, keys in self.unreadable.items():
            warnings.append(tables_shortfall(ERROR, [self.spelt(key) for key in keys], reason))
        if self.gone:
            warnings.append(tables_shortfall(DROPPED, [self.spelt(key) for key in self.gone]))
        if self.deferred:
            warnings.append(
                Shortfall(
                    DEFERRED,
                    (catalogue.DEFINITIONS.key,),
                    f"read the definitions of {len(self.definitions)} new or changed tables; "
                    f"{self.deferred} more follow in the next polls",
                    count=self.deferred,
                )
            )
        self.warnings = warnings


def _figures(collection: Collection, name: PartitionName) -> PartitionFigures:
    key, path, slot = identity(name)
    figures = collection.partitions.get(key)
    if figures is None:
        if len(path) > NAME_CHARS and max(map(len, name)) > NAME_CHARS:  # (only hostile)
            return _figures(collection, clipped(name))
        figures = collection.partitions[key] = PartitionFigures(name, key, slot)
        collection.by_path[path] = figures
    return figures


def _merge_stats(collection: Collection, rows: list[innodb_stats.PartitionStats]) -> None:
    """After the tablespaces, whose page size (the zip size if compressed) turns the
    statistics' page counts into bytes."""
    server_page = collection.facts.page_size
    why = comparing.gathered(collection, comparing.STATISTICS)
    for row in rows:
        figures = _figures(collection, row.name)
        collection.merged.add(figures.key)
        if why is not None:
            why.add(figures.key)
        figures.rows, figures.clustered_pages, figures.other_pages = row[1:4]
        figures.stats_updated_at = row.updated_at
        page = figures.page_size or server_page
        figures.data_bytes = row.clustered_pages * page
        figures.index_bytes = row.other_pages * page


def _merge_files(collection: Collection, rows: list[tablespaces.PartitionFile]) -> None:
    for row in rows:
        figures = _figures(collection, row.name)
        figures.space_id, figures.file_bytes, figures.allocated_bytes = row[1:4]
        figures.page_size, figures.row_format = row.page_size, row.row_format


def _assigner(names: tuple[str, ...]) -> Callable[[PartitionFigures, tuple], None]:
    """Sets the figures `names` on a partition from a row's values, in one unpacking, as
    the hand-written assignment this replaces did: a loop of `setattr` made merging
    64,000 partitions' file I/O 4.6 times slower (0.080 s against 0.017 s, measured).
    Generated as dataclasses generate their `__init__`."""
    targets = "".join(f"figures.{name}, " for name in names)
    namespace: dict = {}
    exec(f"def assign(figures, values):\n    {targets}= values", namespace)  # noqa: S102
    return namespace["assign"]


# What file I/O gives each partition, in the order of its rows (`figures.FILE_IO`).
_IO_FIGURES = file_io.FIGURES
_assign_io = _assigner(_IO_FIGURES)
_NO_IO = (0,) * len(_IO_FIGURES)
_assign_compression = _assigner(compression.PER_INDEX)


def _merge_io(collection: Collection, rows: list[file_io.PartitionIO], only=None) -> None:
    """Every partition's file I/O from `rows`; or, given `only` (path keys), only those
    partitions', the others keeping what they hold (reused partitions, see `Kept`)."""
    targets: Iterable[PartitionFigures]
    figures: PartitionFigures | None
    if only is None:
        targets = collection.partitions.values()
    else:
        targets = [f for f in map(collection.by_path.get, only) if f is not None]
    for figures in targets:
        _assign_io(figures, _NO_IO)
    for row in rows:
        if only is not None and row.path_key not in only:
            continue
        figures = collection.by_path.get(row.path_key)
        if figures is not None:  # a file without statistics or tablespace is ignored
            _assign_io(figures, row[1:])


def _merge_changes(collection: Collection, changes: tablestats.Changes, adopted: bool) -> None:
    """Every partition's counters (0 where absent); only the changed ones' where the
    partitions are the previous poll's (`adopted`), which hold the others already. The
    changed ones are the store's to compare (`merged`)."""
    partitions = collection.partitions
    changed = partitions.keys() if changes.changed is None else changes.changed & partitions.keys()
    for key in changed if adopted else partitions.keys():
        figures = partitions[key]
        figures.modified_counter, autoinc = changes.counters.get(key, (0, 0))
        figures.autoinc = autoinc or None
    collection.merged |= changed
    if (why := comparing.gathered(collection, comparing.COUNTERS)) is not None:
        why |= changed


def _merge_compression(
    collection: Collection, rows: list[compression.PartitionCompression]
) -> None:
    why = comparing.gathered(collection, comparing.COMPRESSION)
    for row in rows:
        figures = collection.partitions.get(row.name.key)
        if figures is not None:
            collection.merged.add(figures.key)
            if why is not None:
                why.add(figures.key)
            _assign_compression(figures, row[1:])


def _read_now(reader):
    """Read a source now and hand its rows (or its shortfall) to `_read` later."""
    try:
        rows = reader()
    except SourceUnavailable as exc:
        failure = exc

        def fail():
            raise failure

        return fail
    return lambda: rows


class _Beside:
    """A source read on a second session, in a thread, while the poll's own session reads
    another. `rows(session)` waits for its rows; should the second session fail to open
    (refused, too many connections), they are read on `session` instead, and no second
    session is tried for a while (`SourceMemory.beside_allowed`). Once open, its failures
    are the poll's, as the poll's own session's are (a timed-out read is not read again
    on the other session). Should the poll fail first, the thread ends
    on its own (within the statement cap); the server's next poll in this process waits
    for it before reading (`SourceMemory.begin`), as it writes to the same memory."""

    def __init__(self, open_beside, memory: SourceMemory, read):
        self.memory, self.read, self.opened = memory, read, False
        # `rows`' result, once had: (rows, None) or (None, failure)
        self.outcome: tuple[list | None, Exception | None] | None = None

        def run():
            with open_beside() as session:
                self.opened = True
                return read(session)

        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="partdash-beside")
        self.future = memory.in_flight = executor.submit(run)
        executor.shutdown(wait=False)

    def rows(self, session: Session) -> list:
        """The rows (or the failure) of the read, the same every time it is asked: a
        speculative poll asks once to confirm and again to redo (`Speculation`)."""
        if self.outcome is None:
            try:
                self.outcome = (self._rows(session), None)
            except Exception as error:
                self.outcome = (None, error)
        rows, failure = self.outcome
        if failure is not None:
            raise failure
        return cast(list, rows)  # (None only beside a failure)

    def done(self) -> bool:
        """Whether the read has ended (its rows can be had without waiting for the
        server). A second session refused is read on the poll's own, when asked."""
        return self.outcome is not None or self.future.done()

    def _rows(self, session: Session) -> list:
        try:
            return self.future.result()
        except ConnectionFailure as failure:
            if self.opened:
                raise
            self.memory.beside_failed()
            log.info("a second session failed (%s): read on the poll's own session", failure)
            return self.read(session)


def _read(collection: Collection, source: str, reader, merge=None):
    """Read one source; a missing privilege or setting becomes a shortfall (both, where
    both are missing: Test connection names both too)."""
    try:
        rows = reader()
    except SourceUnavailable as exc:
        collection.sources[source] = False
        if exc.repeat:
            return None
        collection.shortfalls.append(exc.shortfall(collection.facts.account, collection.dialect))
        needed = exc.source.setting_required and exc.source.setting in collection.facts.variables
        if exc.cause == PRIVILEGE and needed and not collection.facts.is_on(exc.source.setting):
            collection.shortfalls.append(setting_shortfall(exc.source))
        return None
    collection.sources[source] = True
    if merge is not None:
        merge(collection, rows)
    return rows


def _check_settings(collection: Collection) -> None:
    """Sources that read fine but give less with a setting OFF (no file per partition,
    statistics that do not persist) say so, as Test connection and the panel do. (The
    others were not read at all with theirs OFF, and said so.)"""
    variables = collection.facts.variables
    for source in catalogue.SOURCES:
        if (
            source.setting in variables
            and not source.setting_required
            and collection.sources.get(source.key)
            and not collection.facts.is_on(source.setting)
        ):
            collection.shortfalls.append(setting_shortfall(source))


def _has_compressed(collection: Collection) -> bool:
    """Per-index compression counters matter only where ROW_FORMAT=COMPRESSED is used."""
    formats = {f.row_format for f in collection.partitions.values()}
    return any(row_format.lower() == "compressed" for row_format in formats)


def signature(partitions: list[PartitionFigures]) -> str:
    """Changes when a partition is added, dropped, renamed or rebuilt (new tablespace)."""
    parts = sorted(f"{f.key.partition}#{f.key.subpartition}@{f.space_id}" for f in partitions)
    return hashlib.sha1("|".join(parts).encode(), usedforsecurity=False).hexdigest()


def _listed_again(session: Session, collection: Collection) -> set[TableKey] | None:
    """The tables a cheap source lists now (None: it cannot be read again)."""
    rows: list[tablespaces.PartitionFile] | list[innodb_stats.PartitionStats]
    try:
        if collection.sources.get(TABLESPACES.key):
            rows = tablespaces.read(session, collection.dialect)
        elif collection.sources.get(INNODB_TABLE_STATS.key):
            rows = innodb_stats.read(session, None, collection.partitions)
        else:
            return None
    except SourceUnavailable:
        return None
    return {row.name.key.table_key for row in rows}


def _explain_vanished(session: Session, collection: Collection, vanished: list[TableKey]) -> None:
    """PARTITIONS shows nothing both for a table dropped since the cheap sources were
    read and for one the account has no privilege on; the cheap source that listed it
    still lists the latter. One read for all of them, and only in a poll that met new
    such tables: the hidden ones are remembered. Where that cannot be told, the table is
    taken as hidden, not dropped."""
    listed = _listed_again(session, collection)
    for table_key in vanished:
        if listed is None or table_key in listed:
            collection.hidden.add(table_key)
        else:
            collection.gone.add(table_key)


def _agrees(definition: TableDefinition, listed: list[PartitionFigures]) -> bool:
    """Whether the definitions name the partitions the cheap sources listed a moment
    before: DDL in between makes them differ."""
    named = {f"{fold(p.name)}#{fold(p.subpartition)}" for p in definition.partitions}
    return named == {figures.slot for figures in listed}


def _read_one(session: Session, collection: Collection, table_key: TableKey) -> bool:
    """Read one table's definitions; False when information_schema does not show it.
    Definitions that disagree with the partitions listed (DDL raced the poll) are
    stored, and read again by the next poll: a partition added in between and dropped
    before the next poll would otherwise stay, the signature being the one before."""
    schema, table = collection.spelt(table_key)
    try:
        definition = definitions.read(session, schema, table)
    except TableGone:
        return False
    except SourceUnavailable as exc:  # it exists: keep what is known, retry next poll
        collection.unreadable.setdefault(exc.reason or exc.cause, []).append(table_key)
        return True
    collection.definitions[table_key] = definition
    if not _agrees(definition, collection.tables()[table_key]):
        collection.raced.add(table_key)
        collection.sign()[table_key] = RACED
    return True


def _still_hidden(
    session: Session, collection: Collection, carried: list[TableKey]
) -> tuple[set[TableKey], set[TableKey]]:
    """Tables hidden at the previous poll stay hidden without a read each, except one
    per schema, picked at random so a GRANT on a single table is noticed too: where it
    shows, the rest of its schema is read again. Returns (still hidden, looked at)."""
    by_schema: dict[str, list[TableKey]] = defaultdict(list)
    for table_key in carried:
        by_schema[table_key[0]].append(table_key)
    hidden: set[TableKey] = set()
    looked: set[TableKey] = set()
    for keys in by_schema.values():
        sentinel = random.choice(keys)
        looked.add(sentinel)
        if not _read_one(session, collection, sentinel):
            hidden.update(keys)
    return hidden, looked


def _due(
    collection: Collection, known: dict[TableKey, str], status_before: dict | None
) -> tuple[list[TableKey], set[TableKey]]:
    """The tables whose definitions are read: those new or with a changed signature, and
    the others too where DDL may have changed definitions without moving a file (`ddl`).
    Returns them, changed ones first, and the set of the others."""
    signatures = collection.sign()
    changed = [key for key in collection.tables() if known.get(key) != signatures[key]]
    altered = sum(1 for key in changed if known.get(key) not in (None, RECHECK))
    if not ddl.definitions_may_have_moved(status_before, collection.facts.status, altered):
        return changed, set()
    unchanged = [key for key in collection.tables() if known.get(key) == signatures[key]]
    return changed + unchanged, set(unchanged)


def _read_definitions(
    session: Session,
    collection: Collection,
    known: dict[TableKey, str],
    hidden_before: set[TableKey],
    status_before: dict | None = None,
    until: float | None = None,
) -> None:
    if getattr(session, "capped", False):  # closed: read when a poll gets this far
        return
    budget = settings.PARTDASH_DEFINITIONS_PER_POLL
    until = math.inf if until is None else until
    wanted, unchanged = _due(collection, known, status_before)
    carried = [key for key in wanted if key in hidden_before]
    hidden, looked = _still_hidden(session, collection, carried)
    collection.hidden |= hidden
    vanished: list[TableKey] = []
    for table_key in wanted:
        if table_key in hidden or table_key in looked:
            continue
        if len(collection.definitions) >= budget or (
            collection.definitions and time.monotonic() >= until
        ):
            collection.deferred += 1
            if table_key in unchanged:
                collection.recheck.add(table_key)
        elif not _read_one(session, collection, table_key):
            vanished.append(table_key)
    if vanished:
        _explain_vanished(session, collection, vanished)


STATS_MARGIN_SECONDS = 10  # re-read recent rows: a refresh may commit after we looked


def _read_statistics(session: Session, collection: Collection, since: int | None) -> None:
    """All statistics rows, or only those refreshed since `since` when the tablespace list
    (read first) already names every partition; unchanged ones keep their stored figures."""
    incremental = since is not None and collection.sources.get("tablespaces", False)
    after = cast(int, since) - STATS_MARGIN_SECONDS if incremental else None
    rows = _read(
        collection,
        "innodb_table_stats",
        lambda: innodb_stats.read(session, after, collection.partitions),
        _merge_stats,
    )
    collection.stats_incremental = bool(incremental and rows is not None)
    if rows is not None and not incremental:  # (an incremental read names changes only)
        collection.unstated = collection.partitions.keys() - collection.merged
        for key in collection.unstated:  # (reused partitions hold the last poll's)
            figures = collection.partitions[key]
            figures.rows = figures.clustered_pages = figures.other_pages = None
            figures.data_bytes = figures.index_bytes = figures.stats_updated_at = None
    # The server's clock before the read, not the newest refresh seen: on a quiet server
    # the next poll then reads only the last few seconds' refreshes, usually none.
    collection.stats_watermark = collection.facts.clock if rows is not None else None
    collection.files_cover_partitions = collection.sources.get("tablespaces", False) and all(
        figures.space_id is not None for figures in collection.partitions.values()
    )


def _tables_changed(collection: Collection, known: dict[TableKey, str]) -> bool:
    return collection.sign() != known


@dataclass(frozen=True)
class CollectRequest:
    """What one poll asks `collect` for, from what the previous poll of the server left.

    - `known`: each stored table's signature; definitions are read only for tables whose
      signature changed.
    - `stats_since`: the previous poll's statistics watermark, which allows reading only
      the statistics rows refreshed since.
    - `hidden`: the tables the previous poll found hidden from the account (see
      `_still_hidden`).
    - `memory`: what the poll memory holds of the wide sources
      (`partdash.mysql.incremental`): with it, the tablespace list and file I/O are
      read where they changed, `last_poll` being the server's last stored poll.
    - `open_beside`: opens a second session to the server (a context manager), on which
      the tablespace list is read beside file I/O when a data file was certainly touched
      (the two are the longest reads of a poll after writes).
    - `speculate`: a poll whose tablespace list is being read beside does not wait for
      it: the collection is assembled as if the list had not changed, which is what that
      read finds after most writes (not after an ALTER TABLE), and carries a
      `Speculation` that says, once the read ends, whether it did not (the poll service
      stores meanwhile, and assembles the collection again with the list read when it
      did).
    - `status_before`: the server status stored with the previous poll, which tells
      whether DDL may have changed definitions without moving a file (`ddl`).
    - `definitions_until`: a `time.monotonic()` past which no more definitions are
      read this poll, the rest deferred to the next polls as past
      PARTDASH_DEFINITIONS_PER_POLL: a server answering each read in seconds then has
      its first poll store what it read, where reading every table's would run out of
      the poll's time and store nothing, poll after poll.
    """

    known: dict[TableKey, str] = field(default_factory=dict)
    stats_since: int | None = None
    hidden: frozenset[TableKey] = frozenset()
    memory: SourceMemory | None = None
    last_poll: str | None = None
    open_beside: Callable | None = None
    speculate: bool = False
    status_before: dict | None = None
    statements_since: int | None = None
    statements_consumer_off: bool = False
    explain: bool = False
    definitions_until: float | None = None


def collect(session: Session, request: CollectRequest, kept: "Kept | None" = None) -> Collection:
    """Read every source once, as `request` asks (see `CollectRequest`). `kept`: the
    partitions the server's last stored poll built (its collection's `reusable`), reused
    where the memory continues that poll and the tablespace list did not change; given
    apart from the request so that it is released once a build needs the memory."""
    known, stats_since, memory = request.known, request.stats_since, request.memory
    last_poll, open_beside, status_before = (
        request.last_poll,
        request.open_beside,
        request.status_before,
    )
    basis, kept = _begin(memory, last_poll, kept)
    facts = server_facts.read(session)
    if memory is not None and memory.restarted(facts):
        kept = None
    dialect = dialect_for(session.flavor, session.version)
    ps_on = facts.is_on("performance_schema")
    kept = kept if ps_on else None
    # File I/O first (merged after the partitions are built): where it proves no data
    # file was touched, the tablespace list is not read (`files_untouched`). Where a file
    # certainly was, the list is read beside it, on a second session.
    beside = None
    # The list as remembered, taken before a read beside replaces it.
    remembered = memory.remembered(TABLESPACES) if memory is not None and kept else None
    if memory is not None and ps_on and open_beside is not None and memory.beside_allowed():
        if memory.files_touched(session, facts):
            read_beside = lambda on: memory.read(on, dialect, TABLESPACES)  # noqa: E731
            beside = _Beside(open_beside, memory, read_beside)
    if memory is not None and ps_on:
        read_io = _read_now(lambda: memory.read(session, dialect, FILE_IO))
    else:
        read_io = _read_now(lambda: file_io.read(session, ps_on))
    if beside is not None:
        read_files = lambda: beside.rows(session)  # noqa: E731
    elif memory is not None:
        untouched = ps_on and memory.files_untouched(session, facts)
        read_files = lambda: memory.read(session, dialect, TABLESPACES, untouched)  # noqa: E731
    else:
        read_files = lambda: tablespaces.read(session, dialect)  # noqa: E731
    hidden = frozenset(request.hidden)
    reads = _Reads(
        session=session,
        dialect=dialect,
        facts=facts,
        known=known,
        stats_since=stats_since,
        hidden_before=hidden,
        memory=memory,
        basis=basis,
        read_io=read_io,
        status_before=status_before,
        statements_since=request.statements_since,
        statements_consumer_off=request.statements_consumer_off,
        explain=request.explain,
        definitions_until=request.definitions_until,
    )
    reads.kept, kept = kept, None  # `assemble` releases it: a build then needs the memory
    # Not after an ALTER: whether it moved files decides which definitions are read.
    altered = ddl.altered_since(status_before, facts.status)
    if request.speculate and beside is not None and remembered is not None and not altered:
        collection = reads.assemble(lambda: remembered, assumed_unchanged=True)
        redo = lambda: reads.assemble(read_files)  # noqa: E731
        assert memory is not None  # a read beside is made through the memory
        collection.speculation = Speculation(beside, session, memory, redo)
        return collection
    return reads.assemble(read_files)


def _begin(
    memory: SourceMemory | None, last_poll: str | None, kept: "Kept | None"
) -> tuple[str | None, "Kept | None"]:
    """The poll `memory` continues (None: none), the server's last stored poll being
    `last_poll`, and the partitions reused from it: `kept`, the ones that poll built,
    only where the memory continues it."""
    basis = memory.begin(last_poll) if memory is not None else None
    return basis, kept if basis is not None else None


@dataclass(kw_only=True)
class _Reads:
    """What one poll read before the tablespace list, and how to assemble a collection
    from it with the list's rows (`assemble`): once, or twice when a speculation was
    refuted (file I/O is not read again: its memory moved on with the first read)."""

    session: Session
    dialect: Dialect
    facts: server_facts.ServerFacts
    known: dict[TableKey, str]
    stats_since: int | None
    hidden_before: frozenset
    memory: SourceMemory | None
    basis: str | None  # the stored poll `memory` continues (None: none)
    read_io: Callable[[], list]  # file I/O's rows, read already
    kept: "Kept | None" = None  # the previous poll's partitions, for the first assembly
    status_before: dict | None = None  # the previous poll's server status (see `ddl`)
    other_tables: list | None = None  # read once, for a collection assembled again
    statements_since: int | None = None  # None: not due this poll
    statements_consumer_off: bool = False  # the last read found the digest consumer OFF
    explain: bool = False
    definitions_until: float | None = None  # (`CollectRequest`)
    # Read once (a collection assembled again does not read them again): the digests,
    # or None where they could not be, and the plans.
    statements_read: "tuple[list | None, dict] | None" = None
    # What this poll did about the tablestats counters (`tablestats.plan`) and what it
    # got, once decided: an assembly again (a refuted speculation) does not read again.
    tablestats_plan: str = ""
    tablestats_changes: "tablestats.Changes | None" = None
    dictionary_tables: int | None = None  # counted to decide the plan, or as last counted

    def changes(self, collection: Collection) -> "tablestats.Changes | None":
        """The tablestats counters for this poll, read only where they can have changed
        and the read loads no table into InnoDB's dictionary cache (see `tablestats`);
        None where they are not known (switched off, or the cache is too small)."""
        if not self.tablestats_plan:
            self.tablestats_plan, self.tablestats_changes = self._plan_changes(collection)
        collection.tablestats_plan = self.tablestats_plan
        collection.dictionary_tables = self.dictionary_tables
        return self.tablestats_changes

    def _plan_changes(self, collection: Collection) -> tuple[str, "tablestats.Changes | None"]:
        memory, mode = self.memory, settings.PARTDASH_READ_TABLESTATS
        last = memory.tablestats if memory is not None else None
        refreshed = (
            not collection.stats_incremental
            or bool(collection.merged)
            or _tables_changed(collection, self.known)
        )
        row_writes = self.facts.row_writes
        plan = tablestats.plan(
            mode, last, row_writes, continues=self.basis is not None, refreshed=refreshed
        )
        if plan == tablestats.KEPT:
            assert last is not None  # kept: the last read's counters
            return plan, tablestats.Changes(last.counters, set())
        cache = self.facts.number("table_definition_cache")
        if plan == tablestats.UNCACHED and last is not None:
            self.dictionary_tables = last.tables  # counted when it was decided
            if last.tables is not None and last.tables <= cache:
                plan = tablestats.READ  # the cache was raised since (SET GLOBAL): read
        if plan == tablestats.READ and mode == "auto":
            # Counted even where the partitions alone outnumber the cache: the count
            # sizes the cache the pages tell the DBA to set (`health.coverage`).
            tables = self._dictionary_tables(last, collection)
            self.dictionary_tables = tables
            if tables > cache:
                plan = tablestats.UNCACHED
        if plan != tablestats.READ:
            if memory is not None:  # a later read compares every partition
                uncached = plan == tablestats.UNCACHED and row_writes is not None
                memory.tablestats = (
                    tablestats.LastRead(
                        cast("tuple[str, ...]", row_writes),
                        {},
                        False,
                        self.dictionary_tables,
                        len(collection.partitions),
                    )
                    if uncached
                    else None
                )
            return plan, None
        rows = tablestats.read(self.session, self.dialect)
        changes = tablestats.changes(rows, last if self.basis is not None else None)
        if memory is not None and row_writes is not None:
            counted = self.dictionary_tables, len(collection.partitions)
            memory.tablestats = tablestats.LastRead(row_writes, changes.counters, True, *counted)
        return plan, changes

    def _dictionary_tables(self, last: "tablestats.LastRead | None", collection: Collection) -> int:
        """InnoDB's dictionary tables: as the last read counted them where this poll
        continues it, no table was created, dropped, renamed or altered since (the status
        counters the poll reads anyway) and the poll lists as many partitions; else
        counted again. The count filled a 64,000-row list in the server on every poll
        after rows changed: 0.14 s of a 0.9 s poll."""
        if (
            last is not None
            and last.tables is not None
            and self.basis is not None
            and last.partitions == len(collection.partitions)
            and not ddl.tables_may_have_changed(
                self.status_before, self.facts.status, ddl.DICTIONARY_DDL
            )
        ):
            return last.tables
        return tablestats.dictionary_tables(self.session, self.dialect)

    def assemble(self, read_files, assumed_unchanged: bool = False) -> Collection:
        """The collection, the tablespace list's rows being `read_files()`. The previous
        poll's partitions (`kept`, released here) are reused if no tablespace row
        changed, which `assumed_unchanged` takes for granted rather than asking the
        memory."""
        session, dialect, facts, memory = self.session, self.dialect, self.facts, self.memory
        collection = Collection(session.flavor, session.version, dialect, facts)
        collection.reasons = {} if comparing.explained() else None
        reuse, self.kept = Reuse(self.kept), None

        def files_touched() -> list | None:
            if assumed_unchanged:
                return []
            return memory.touched.get(TABLESPACES.key) if memory is not None else None

        def merge_files(collection: Collection, rows: list) -> None:
            if not reuse.adopt(collection, files_touched()):
                _merge_files(collection, rows)

        _read(collection, "tablespaces", read_files, merge_files)
        stats_since = self.stats_since
        if stats_since is not None and _tables_changed(collection, self.known):
            stats_since = None  # new or changed tables need every statistics row once
        _read_statistics(session, collection, stats_since)

        def merge_io(collection: Collection, rows: list) -> None:
            touched = memory.touched.get(FILE_IO.key) if memory else None
            _merge_io(collection, rows, reuse.io_only(collection, touched))

        _read(collection, "file_io", self.read_io, merge_io)
        adopted = reuse.adopted == len(collection.partitions)
        changes = _read(collection, "tablestats", lambda: self.changes(collection))
        if changes is not None:
            _merge_changes(collection, changes, adopted)
        elif collection.tablestats_plan in (tablestats.OFF, tablestats.UNCACHED):
            del collection.sources["tablestats"]  # not read: says nothing of the source
        collection.innodb_cmp = _read(
            collection, "innodb_cmp", lambda: compression.read_cmp(session)
        )
        collection.innodb_cmp = collection.innodb_cmp or []
        if facts.is_on("innodb_cmp_per_index_enabled") or _has_compressed(collection):
            per_index_on = facts.is_on("innodb_cmp_per_index_enabled")
            _read(
                collection,
                "cmp_per_index",
                lambda: compression.read_per_index(session, per_index_on, collection.partitions),
                _merge_compression,
            )
        _check_settings(collection)
        hidden_before = set(self.hidden_before)
        _read_definitions(
            session,
            collection,
            self.known,
            hidden_before,
            self.status_before,
            self.definitions_until,
        )
        self._read_other_engines(collection)
        self._read_statements(collection)
        if self.basis is not None:
            assert memory is not None  # the basis is the memory's
            collection.basis = self.basis
            collection.dirty = _dirty(collection, memory, files_touched())
        collection.finish()
        # Kept only where every partition has a tablespace of its own: then an unchanged
        # tablespace list proves the partitions unchanged (a partition in the system
        # tablespace is listed by its statistics alone, and its table may be dropped).
        if memory is not None and not collection.raced and collection.files_cover_partitions:
            collection.reusable = Kept.of(collection)
        return collection

    def _read_other_engines(self, collection: Collection) -> None:
        """The partitioned tables of other engines, after DDL (once per poll)."""
        if self.other_tables is None and ddl.tables_may_have_changed(
            self.status_before, self.facts.status
        ):
            read = lambda: other_engines.read(self.session)  # noqa: E731
            self.other_tables = _read(collection, OTHER_ENGINES.key, read)
        elif self.other_tables is not None:
            collection.sources[OTHER_ENGINES.key] = True
        collection.other_tables = self.other_tables

    def _read_statements(self, collection: Collection) -> None:
        """The statement digests, when due (once per poll), and their plans where the
        server is opted in. A poll that does not read them says what the last read met
        (`_statements_as_before`), so the warnings do not change from poll to poll."""
        if getattr(self.session, "capped", False):
            return
        if self.statements_since is None:
            _read(collection, STATEMENTS.key, self._statements_as_before(collection))
            return
        if self.statements_read is None:
            since, cap = self.statements_since, settings.PARTDASH_STATEMENTS_MAX_ROWS
            ps_on = self.facts.is_on("performance_schema")
            read = lambda: statements.read(self.session, self.dialect, ps_on, since, cap)  # noqa: E731
            digests = _read(collection, STATEMENTS.key, read)
            plans = self._plans(collection, digests) if digests and self.explain else {}
            if digests is not None:  # the sample texts go now
                digests = [replace(digest, sample=None) for digest in digests]
            self.statements_read = (digests, plans)
        elif self.statements_read[0] is not None:
            collection.sources[STATEMENTS.key] = True
        collection.statements, collection.plans = self.statements_read
        collection.statements_due = True
        if collection.statements is not None:
            collection.statements_watermark = self.facts.clock

    def _statements_as_before(self, collection: Collection) -> Callable[[], None]:
        """A read not made: what stops it now (performance_schema OFF, SELECT on it
        refused to file I/O) or stopped the last read (the digest consumer OFF)."""
        denied = any(
            FILE_IO.key in s.sources and s.cause == PRIVILEGE for s in collection.shortfalls
        )

        def as_before() -> None:
            if denied:  # (with performance_schema OFF, `_read` adds the setting)
                raise SourceUnavailable(STATEMENTS, PRIVILEGE)
            if not self.facts.is_on("performance_schema"):
                raise setting_off(STATEMENTS)
            if self.statements_consumer_off:
                raise statements.ConsumerOff(STATEMENTS, SETTING)

        return as_before

    def _plans(self, collection: Collection, digests: list) -> dict[str, list[PlanRead]]:
        """EXPLAIN the costliest digests that name a partitioned table, on a sample of
        each: MySQL 8's, or a recent run's in MariaDB's statement history."""
        names = {fold(table) for _, table in map(collection.spelt, collection.tables())}
        wanted = [d for d in digests if not names.isdisjoint(statements.quoted_names(d.text))]
        wanted = wanted[: settings.PARTDASH_STATEMENTS_EXPLAINS]
        samples = {d.digest: d.sample for d in wanted if d.sample}
        if not self.dialect.has_sample_text and wanted and statements.history_on(self.session):
            samples = history_samples(self.session, (d.digest for d in wanted))
        ms = settings.PARTDASH_STATEMENTS_EXPLAIN_MS
        plans = {}
        for digest in wanted:
            sample = samples.pop(digest.digest, None)
            plan = sample and explain(self.session, self.dialect, sample, digest.schema, ms)
            if plan:
                plans[digest.digest] = plan
        return plans


class Refuted(Exception):
    """A speculation's tablespace list changed: what was stored on it is rolled back."""


@dataclass
class Speculation:
    """A collection assembled as if the tablespace list, still being read beside, had not
    changed (`collect`'s `speculate`). After writes, that read (the fill of 64,000
    rows, about 0.25 s) is the longest of a poll, and it usually finds nothing changed:
    files grow or appear far less often than they are written. The poll service stores,
    analyses and evaluates meanwhile in its transaction and `confirm`s before
    committing; when the list did change (or could not be read), the transaction is
    rolled back and the collection assembled again from the list (`redo`), so what is
    stored is what waiting for it would have stored."""

    beside: _Beside
    session: Session
    memory: SourceMemory
    redo: Callable[[], Collection]

    def confirm(self, wait: bool = True) -> None:
        """Raise `Refuted` once the read beside is known to have found a change; return
        while it is still under way (unless `wait`) or found none."""
        if not wait and not self.beside.done():
            return
        try:
            self.beside.rows(self.session)
        except Exception as failure:  # the redo reads it again, and fails as usual
            raise Refuted(str(failure)) from None
        if self.memory.touched.get(TABLESPACES.key) != []:
            raise Refuted("the tablespace list changed")


@dataclass
class Kept:
    """The partitions a stored poll built, reused by the next poll of the same process
    when the tablespace list did not change (then neither did the partitions nor their
    signatures): building 64,000 of them again was most of a quiet poll's own work. The
    sources then update them in place, as they would fill new ones."""

    partitions: dict[PartitionKey, PartitionFigures]
    by_path: dict[str, PartitionFigures]
    grouped: tuple[int, dict]
    signatures: dict[TableKey, str]
    # The partitions whose figures the poll that kept these may have changed (in place,
    # when it reused the previous poll's): the collection's `dirty`; None: any.
    dirty: set | None = None

    @classmethod
    def of(cls, collection: Collection) -> "Kept":
        collection.tables(), collection.sign()
        return cls(
            collection.partitions,
            collection.by_path,
            collection._grouped,
            dict(collection.signatures),
            collection.dirty,
        )


class Reuse:
    """Whether this poll reuses the previous poll's partitions (`Kept`)."""

    def __init__(self, kept: Kept | None) -> None:
        self.kept = kept
        self.adopted = -1  # the partition count when adopted (-1: built anew)

    def adopt(self, collection: Collection, touched: list | None) -> bool:
        """Adopt the kept partitions if no tablespace row changed (`touched` empty)."""
        kept, self.kept = self.kept, None  # released either way: a build needs the memory
        if kept is None or touched is None or touched:
            return False
        collection.partitions, collection.by_path = kept.partitions, kept.by_path
        collection._grouped = kept.grouped
        collection.signatures, collection._signed = kept.signatures, len(kept.partitions)
        self.adopted = len(kept.partitions)
        return True

    def io_only(self, collection: Collection, touched: list | None) -> set[str] | None:
        """The files whose I/O is merged: those of the buckets read again, where the
        partitions are reused and none was added since (None: every file)."""
        if self.adopted != len(collection.partitions) or touched is None:
            return None
        return {row.path_key for row in touched}


def _dirty(
    collection: Collection, memory: SourceMemory, files_touched: list | None
) -> set[PartitionKey] | None:
    """The partitions whose figures may differ from the previous poll's: those of the
    buckets read again (`files_touched`: the tablespace rows) and those with statistics
    or compression rows this poll. None when every row of a source was read, or
    definitions were (the tables changed)."""
    touched = memory.touched
    if (
        collection.definitions
        or not collection.stats_incremental
        or files_touched is None
        or (FILE_IO.key in touched and touched[FILE_IO.key] is None)
    ):
        return None
    dirty = {row.name.key for row in files_touched}
    files = comparing.gathered(collection, comparing.TABLESPACES)
    if files is not None:
        comparing.note(collection, files, [(row.name.key, row) for row in files_touched])
    io = comparing.gathered(collection, comparing.FILE_IO)
    io_rows = []
    for row in cast("list | tuple[()]", touched.get(FILE_IO.key, ())):  # (not None: above)
        figures = collection.by_path.get(row.path_key)
        if figures is not None:
            dirty.add(figures.key)
            if io is not None:
                io_rows.append((figures.key, row))
    if io is not None:
        comparing.note(collection, io, io_rows)
    return dirty | collection.merged
