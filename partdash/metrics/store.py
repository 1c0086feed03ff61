"""Storing a `Collection`: definitions for new or changed tables, the latest figures per
partition, and a sample row only where a partition's figures changed. The poll service
(`partdash.polling.service`) then analyses what changed, in the same transaction."""

import logging
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from partdash.collector import comparing
from partdash.collector.collect import RECHECK, Collection, TableKey, table_key
from partdash.health import recent
from partdash.health.counters import counter_delta
from partdash.health.drift import Layout, layout_digest
from partdash.health.partitions import PartitionState
from partdash.metrics.models import (
    RATES,
    SAMPLED_FIGURES,
    Partition,
    PartitionedTable,
    PartitionSample,
    ServerSnapshot,
    UnmonitoredTable,
    aware,
)
from partdash.mysql.figures import following, stored_unsampled
from partdash.mysql.names import fold
from partdash.mysql.sources import other_engines
from partdash.mysql.sources.definitions import TableDefinition
from partdash.mysql.sources.file_io import header_reads, read_quanta

log = logging.getLogger(__name__)

# Stored with the sampled figures, never sampled (`partdash.mysql.figures`).
OTHER = stored_unsampled()
_N_RATES = len(RATES)
# The Partition columns a poll compares and writes, in this order.
FIGURES = SAMPLED_FIGURES + OTHER
STORED = (*FIGURES, *RATES, "changed_at", "recent")
_N = len(FIGURES)
_N_SAMPLED_FIGURES = len(SAMPLED_FIGURES)


# The row types' fields are built from the model's at import, which mypy cannot read:
# to it their bases are Any (fields and constructors unchecked; their methods typed).
if TYPE_CHECKING:
    _StoredRowBase = Any
    _UpdateBase = Any
else:
    _StoredRowBase = namedtuple("StoredRow", ("partition_id", *STORED))
    _UpdateBase = namedtuple("Update", (*STORED, "partition_id"))


class StoredRow(_StoredRowBase):
    """A partition's figures as stored (its `Partition` columns STORED) with its id: what
    a poll remembers of each partition for the next."""

    __slots__ = ()

    def figures(self) -> tuple:
        """The FIGURES, in order, as a poll collects them (`figure_values`)."""
        return self[1 : _N + 1]

    def rates(self) -> tuple:
        return self[_N + 1 : _N + 1 + _N_RATES]


class Update(_UpdateBase):
    """One partition's new figures, in the order of `_write_updates`' UPDATE."""

    __slots__ = ()

    def figures(self) -> tuple:
        return self[:_N]

    def stored(self) -> StoredRow:
        return StoredRow(self[-1], *self[:-1])


# The datetimes among an Update's values, which the database adapts.
_UPDATE_TIMES = (Update._fields.index("stats_updated_at"), Update._fields.index("changed_at"))
_READ_BYTES, _WRITE_BYTES = FIGURES.index("read_bytes"), FIGURES.index("write_bytes")
_STATS_UPDATED = FIGURES.index("stats_updated_at")
_READ_OPS, _MISC_OPS = FIGURES.index("read_ops"), FIGURES.index("misc_ops")
_WRITE_OPS = FIGURES.index("write_ops")
# Kept as they were with a handful of reads (`_few_reads`): reads and what moves with them.
_WITH_READS = (_READ_OPS, *(FIGURES.index(name) for name in following("read_ops")))
# What the statistics give: unknown, not kept, for a partition they have no row for.
_STATISTICS = frozenset(
    FIGURES.index(name) for name in ("rows", "data_bytes", "index_bytes", "stats_updated_at")
)
_READING = tuple(
    FIGURES.index(name)
    for name in (
        "write_bytes",
        "read_bytes",
        "modified_counter",
        "rows",
        "data_bytes",
        "index_bytes",
        "compress_ops",
        "compress_ops_ok",
    )
)


SPEC_FIELDS = (
    "name",
    "subpartition",
    "ordinal",
    "subpartition_ordinal",
    "description",
    "dropped_at",
)
SAMPLE_BATCH = 5000
# The figures a speculative store keeps to put back (`UndoLog`): past this, it confirms
# first. A first or second poll replaces all 64,000, which kept would hold about 22 MB
# more at once (measured); a poll after 1% were written replaces 1,000-4,000.
UNDO_LIMIT = 10_000


class UndoLog:
    """The remembered figures a store replaced, to put back should its transaction roll
    back: the poll service (the conductor) gives a store one when the collection it
    stores rests on a guess that may yet prove wrong (`collector.collect.Speculation`).
    Past `limit` figures it does not keep more: it asks `confirm` first, which raises
    (`Refuted`) before any of them is replaced should the guess be wrong; confirmed,
    nothing needs undoing."""

    def __init__(self, confirm: Callable[[], None], limit: int | None = None) -> None:
        self.confirm, self.limit = confirm, UNDO_LIMIT if limit is None else limit
        self.replaced: dict[tuple[int, str], StoredRow] | None = {}

    def before_replacing(self, figures: dict, keys: list) -> None:
        if self.replaced is None:
            return
        if len(self.replaced) + len(keys) > self.limit:
            self.confirm()
            self.replaced = None
            return
        for key in keys:
            self.replaced.setdefault(key, figures[key])

    def undo(self, figures: dict) -> None:
        for key, before in (self.replaced or {}).items():
            figures[key] = before
        self.replaced = {}


class FiguresUnreadable(Exception):
    """Remembered figures read back undecoded (`polling.pollmemory.UnreadFigures`) that
    turned out not to decode: the store reads them from the database instead."""


@dataclass
class Remembered:
    """A server's partition figures as of its latest stored poll, kept between polls (in
    the poll's memory, `polling.memory.PollMemory`) so the next poll need not read
    them back (the longest step of a quiet poll)."""

    snapshot_id: int
    stored: "StoredFigures"
    # Whether the poll knew rates (it had a poll before it): after a server's first, the
    # next poll compares every partition, each rate going from unknown to known.
    rates_known: bool


@dataclass
class StoreResult:
    """What one store wrote. `changed_tables` are the tables whose figures or definitions
    changed (what the analysis needs to look at), None when partitions were added or
    dropped (every table is due); `snapshot` is None for a retried task's poll, which
    was stored already."""

    snapshot: ServerSnapshot | None
    partitions_seen: int
    changed: int
    stored: int
    changed_tables: set[int] | None
    # What was stored, for the analysis to read instead of the database (None: read it).
    stored_figures: "StoredFigures | None" = None
    # The figures to remember for the next poll once this store's transaction commits
    # (None: none, the next poll reads them back); a retried task's, the ones it was
    # given, untouched.
    remembered: Remembered | None = None


def partition_key(partition: str, subpartition: str) -> str:
    return f"{fold(partition)}#{fold(subpartition)}"


def _plan(collection: Collection) -> dict:
    plan, tables = collection.tablestats_plan, collection.dictionary_tables
    if not plan:
        return {}
    return {"tablestats_plan": plan} | ({} if tables is None else {"dictionary_tables": tables})


def counter_rate(new: int | None, old: int | None, seconds: float | None) -> float | None:
    """Per-second rate of a cumulative counter; a decrease means it was reset (TRUNCATE,
    restart), so the new value is what accumulated since."""
    return per_second(counter_delta(new, old), seconds)


def per_second(delta: int | None, seconds: float | None) -> float | None:
    if delta is None or not seconds or seconds <= 0:
        return None
    return delta / seconds


figure_values = attrgetter(*FIGURES)  # a partition's figures in FIGURES order
_no_rates = (None,) * _N_RATES  # the rates of a partition without a poll before


def _reading(values: tuple) -> recent.Reading:
    return recent.Reading(*(values[i] for i in _READING))


def _recorded(old: str | None, deltas: list[int], now: float) -> str | None:
    """The partition's recent activity (as stored) with this poll's deltas added."""
    if not any(deltas):
        return old
    return recent.dumps(recent.record(recent.loads(old), deltas, now, _window_seconds()))


def _window_seconds() -> int:
    return settings.PARTDASH_HOTSPOT_WINDOW_SECONDS


def _few_reads(values: tuple, before: tuple) -> bool:
    """Whether a file's reads (and what moves with them) are kept as stored: those its
    table's reopens explain, and a handful more, are not a partition being read.

    Opening a table reads a page or two of each of its partitions' files (the header
    pages), and a table cache smaller than the tables reopens them over and over. A
    file not written since its stored figures keeps them while its reads stay within
    COARSE_QUANTA quanta and its net reads (2 x reads - other operations: a reopen's
    close and open take back what its read adds) do not reach the next multiple of twice
    PARTDASH_MIN_SAMPLED_READS (the quantum): so the reads no reopen explains are
    sampled from a quantum on, and the header reads once the coarse quanta are reached
    (then not counted as activity: `_discounted`). Other operations alone never change
    what is stored. A written file is stored anyway: its reads are taken as they are.
    (The quanta, rather than distances from the stored values, are what the server can
    hash: `mysql.incremental` reads a file again only when they moved; see
    `mysql.sources.file_io.read_quanta`.) Where the other operations are unknown (stored
    before they were read), the reads alone by their quantum, as before."""
    new, old = values[_READ_OPS], before[_READ_OPS]
    if new is None or old is None or new < old:
        return False
    new_misc, old_misc = values[_MISC_OPS], before[_MISC_OPS]
    if new == old:  # other operations alone: a close, an open, a flush
        return new_misc != old_misc and values[_WRITE_OPS] == before[_WRITE_OPS]
    quantum = settings.PARTDASH_MIN_SAMPLED_READS
    if quantum <= 1 or values[_WRITE_OPS] != before[_WRITE_OPS]:
        return False
    if new_misc is None or old_misc is None:
        return new_misc is None and new // quantum == old // quantum
    if new_misc < old_misc:  # the counter started again: not comparable
        return False
    now_net, now_coarse = read_quanta(new, new_misc, quantum)
    then_net, then_coarse = read_quanta(old, old_misc, quantum)
    return now_coarse == then_coarse and now_net <= then_net


def _discounted(values: tuple, before: tuple) -> int | None:
    """The stored read bytes as rates and recent activity take them: with the bytes of
    the reads since that reopens explain (`file_io.header_reads`) added, so that only
    the partition being read counts as reading."""
    then_bytes = before[_READ_BYTES]
    new, old = values[_READ_OPS], before[_READ_OPS]
    new_misc, old_misc = values[_MISC_OPS], before[_MISC_OPS]
    if None in (new, old, new_misc, old_misc, then_bytes, values[_READ_BYTES]):
        return then_bytes
    reads, misc, grown = new - old, new_misc - old_misc, values[_READ_BYTES] - then_bytes
    if reads <= 0 or misc < 0 or grown < 0:  # no reads, or counters started again
        return then_bytes
    writes = counter_delta(values[_WRITE_OPS], before[_WRITE_OPS]) or 0
    header = header_reads(reads, misc, writes)
    return then_bytes + grown * header // reads if header else then_bytes


def _known(values: tuple, before: tuple, unstated: bool) -> tuple:
    """Each figure a source could not read (None) as last known; but for a partition the
    statistics have no row for (`unstated`), its rows and sizes unknown rather than what
    they were (see `Collection.unstated`)."""
    if not unstated:
        return tuple(b if v is None else v for v, b in zip(values, before, strict=True))
    return tuple(
        b if v is None and i not in _STATISTICS else v
        for i, (v, b) in enumerate(zip(values, before, strict=True))
    )


def _keep_reads(values: tuple, before: tuple) -> tuple:
    changed = list(values)
    for at in _WITH_READS:
        changed[at] = before[at]
    return tuple(changed)


def _readable(stored: "StoredFigures") -> bool:
    """Whether remembered figures decode (those read back undecoded may not)."""
    try:
        stored.figures  # noqa: B018 (decoded here if read back undecoded)
    except FiguresUnreadable as exc:
        log.warning("the remembered figures are read from the database: %s", exc)
        return False
    return True


def _insert_samples(samples: list[tuple]) -> int:
    """Insert (partition id, snapshot id, *SAMPLED_FIGURES) rows; empties the list."""
    if not samples:
        return 0
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in ("partition_id", "snapshot_id", *SAMPLED_FIGURES))
    placeholders = ", ".join(["%s"] * (2 + len(SAMPLED_FIGURES)))
    sql = f"INSERT INTO {quote(PartitionSample._meta.db_table)} ({columns}) VALUES ({placeholders})"
    with connection.cursor() as cursor:
        cursor.executemany(sql, samples)
    count = len(samples)
    samples.clear()
    return count


_SPEC_COLUMNS = ("name", "subpartition", "ordinal", "subpartition_ordinal", "description")


if TYPE_CHECKING:  # (as StoredRow's)
    _SpecBase = Any
else:
    _SpecBase = namedtuple("Spec", ("key", *_SPEC_COLUMNS))


class Spec(_SpecBase):
    """A live partition's definition, under its figures' key (table id, partition key)."""

    __slots__ = ()


# Each live partition's definition, by table id, in definition order.
Specs = dict[int, list[Spec]]
# Where a PartitionState's figures sit in a StoredRow.
_STATE_FIGURES = itemgetter(*(StoredRow._fields.index(f.name) for f in fields(PartitionState)[4:]))


def _in_definition_order(specs: Specs) -> Specs:
    """As the analysis reads partitions (ORDER BY ordinal, subpartition_ordinal,
    subpartition; a NULL subpartition ordinal only where a table has no subpartitions)."""
    for members in specs.values():
        members.sort(
            key=lambda spec: (spec.ordinal, spec.subpartition_ordinal or 0, spec.subpartition)
        )
    return specs


def _member(spec: Spec, row: StoredRow) -> tuple[PartitionState, str | None]:
    state = PartitionState(
        spec.name, spec.subpartition, spec.ordinal, spec.description, *_STATE_FIGURES(row)
    )
    return state, row.recent


@dataclass
class StoredFigures:
    """The figures one poll stored (the database's, as of this transaction) with the
    partitions' definitions, so the analysis need not read them back."""

    figures: dict[tuple[int, str], StoredRow]
    specs: Specs
    # Each table's partitions as last handed to the analysis, with the rows they were
    # built from: a poll replaces the rows it updates, and only those are built again
    # (a changed table has a few changed partitions among many).
    built: dict[int, tuple[list[StoredRow], list[tuple[PartitionState, str | None]]]]
    # Each table's partitions' window sums as last analysed (`analysis._windows`).
    windows: dict[int, dict] = field(default_factory=dict)
    # Each table's skew verdicts with what they were judged on (`analysis._skews`).
    skews: dict[int, dict] = field(default_factory=dict)
    # The keys of `figures` replaced in place since the shared poll memory last wrote
    # them (`collector.pollmemory`, which then writes only those); None: not known.
    changed_keys: set | None = None

    def partitions_of(self, table_ids: list[int]) -> dict[int, list] | None:
        """As `analysis._partitions_of`: each table's live partitions in definition order
        with their recent activity; None when a table is not held here."""
        try:
            specs_of, figures = self.specs, self.figures
        except FiguresUnreadable:  # (the analysis reads them from the database)
            return None
        if any(table_id not in specs_of for table_id in table_ids):
            return None
        by_table = {}
        for table_id in table_ids:
            specs = specs_of[table_id]
            rows = [figures[spec.key] for spec in specs]
            if (held := self.built.get(table_id)) is None:
                members = list(map(_member, specs, rows))
            else:
                before, members = held
                members = members.copy()  # (what was handed before stays as it was)
                replaced = zip(rows, before, strict=True)
                for i in [i for i, (new, old) in enumerate(replaced) if new is not old]:
                    members[i] = _member(specs[i], rows[i])
            self.built[table_id] = rows, members
            by_table[table_id] = members
        return by_table


class PollStore:
    """Writes one collection for one server inside one transaction (the poll's, when
    called inside one: the poll service stores and analyses all or nothing)."""

    def __init__(
        self,
        *,
        server,
        collection: Collection,
        poll_id: str,
        seconds: float,
        remembered: Remembered | None = None,
        undo: UndoLog | None = None,
    ):
        self.server = server
        # The figures the previous poll left, as the caller remembers them: taken when
        # compared (`_figures_before`: replaced in place from then on), given back by
        # `restore` or `untaken`, and this poll's own returned (`StoreResult.remembered`).
        self._given = remembered
        self.collection = collection
        self.poll_id = poll_id
        self.seconds = seconds
        self.now = timezone.now()
        self.tables: dict[TableKey, PartitionedTable] = {}
        self.previous_poll_at: datetime | None = None
        self.changed_tables: set[int] = set()
        self.compared = 0  # partitions compared with the previous poll's figures
        self.stored_figures: StoredFigures | None = None
        # Partitions were added or dropped this poll: what is remembered is stale.
        self.reshaped = bool(collection.definitions)
        # What this store took from the process's memory of the server, and the figures
        # it replaced there (`undo`, when the conductor asks for it): `restore` puts them
        # back should its transaction roll back.
        self._taken: Remembered | None = None
        self.undo = undo

    # -- tables and definitions --------------------------------------------------------

    def _load_tables(self) -> None:
        # Not the analysis's results, which are the bulk of a table's row (saving a
        # table then writes only what was loaded).
        tables = PartitionedTable.objects.filter(server=self.server).defer("health", "activity")
        for table in tables:
            self.tables[table_key(table.schema, table.name)] = table

    def _apply_definition(self, key: TableKey, definition: TableDefinition) -> None:
        table = self.tables.get(key) or PartitionedTable(
            server=self.server,
            schema=definition.schema,
            name=definition.table,
            first_seen_at=self.now,
        )
        table.schema, table.name = definition.schema, definition.table
        table.method, table.expression = definition.method, definition.expression
        table.subpartition_method = definition.subpartition_method
        table.subpartition_expression = definition.subpartition_expression
        table.create_options = definition.create_options
        table.signature = self.collection.signatures[key]
        table.partition_count = len(definition.partitions)
        table.layout = layout_digest(
            Layout.of(
                definition.method,
                definition.expression,
                definition.subpartition_method,
                definition.subpartition_expression,
                [(p.name, p.subpartition, p.description) for p in definition.partitions],
            )
        )
        table.definitions_read_at, table.dropped_at = self.now, None
        table.save()
        self.tables[key] = table
        self._sync_partitions(table, definition)

    def _sync_partitions(self, table: PartitionedTable, definition: TableDefinition) -> None:
        existing = {p.key: p for p in Partition.objects.filter(table=table)}
        new, changed, wanted = [], [], set()
        for spec in definition.partitions:
            key = partition_key(spec.name, spec.subpartition)
            wanted.add(key)
            fields = {
                "name": spec.name,
                "subpartition": spec.subpartition,
                "ordinal": spec.ordinal,
                "subpartition_ordinal": spec.subpartition_ordinal,
                "description": spec.description,
                "dropped_at": None,
            }
            partition = existing.get(key)
            if partition is None:
                new.append(Partition(table=table, key=key, **fields))
            elif any(getattr(partition, name) != value for name, value in fields.items()):
                for name, value in fields.items():
                    setattr(partition, name, value)
                changed.append(partition)
        Partition.objects.bulk_create(new, batch_size=1000)
        Partition.objects.bulk_update(changed, list(SPEC_FIELDS), batch_size=500)
        gone = [p.pk for key, p in existing.items() if key not in wanted and not p.dropped_at]
        Partition.objects.filter(pk__in=gone).update(dropped_at=self.now)

    def _mark_recheck(self) -> None:
        """Tables whose definitions are due though their partitions did not move, left
        for the next polls: a signature no poll computes makes those read them."""
        due = [self.tables[key].pk for key in self.collection.recheck if key in self.tables]
        PartitionedTable.objects.filter(pk__in=due).update(signature=RECHECK)

    def _store_unmonitored(self) -> None:
        """The partitioned tables of other engines, where this poll listed them."""
        found = self.collection.other_tables
        if found is None:
            return
        UnmonitoredTable.objects.filter(server=self.server).delete()
        UnmonitoredTable.objects.bulk_create(
            UnmonitoredTable(
                server=self.server,
                schema=table.schema,
                name=table.table,
                engine=table.engine,
                partitions=table.partitions,
                rows=table.rows,
                data_bytes=table.data_bytes,
                index_bytes=table.index_bytes,
                files=other_engines.files(table),
                read_at=self.now,
            )
            for table in found
        )

    def _mark_dropped(self) -> None:
        if not (
            self.collection.sources.get("innodb_table_stats")
            or self.collection.sources.get("tablespaces")
        ):
            return  # no source listed partitions: absence proves nothing
        seen = set(self.collection.signatures) - self.collection.gone
        dropped = [t.pk for k, t in self.tables.items() if k not in seen and not t.dropped_at]
        self.reshaped = self.reshaped or bool(dropped)
        PartitionedTable.objects.filter(pk__in=dropped).update(dropped_at=self.now)
        Partition.objects.live().filter(table_id__in=dropped).update(dropped_at=self.now)

    # -- figures -----------------------------------------------------------------------

    def _previous_figures(self) -> StoredFigures:
        """(table id, key) -> StoredRow for live partitions, and their definitions
        (`Specs`), in one query."""
        quote = connection.ops.quote_name  # `rows` and `key` are reserved words in MySQL
        selected = ("id", "table_id", "key", *_SPEC_COLUMNS, *STORED)
        columns = ", ".join(f"p.{quote(c)}" for c in selected)
        sql = (
            f"SELECT {columns} FROM {quote(Partition._meta.db_table)} p "
            f"JOIN {quote(PartitionedTable._meta.db_table)} t ON t.id = p.table_id "
            "WHERE t.server_id = %s AND p.dropped_at IS NULL"
        )
        previous: dict[tuple[int, str], StoredRow] = {}
        specs: Specs = {}
        names: dict[str, str] = {}  # one string per distinct name (p0 ... in every table)
        first = 3 + len(_SPEC_COLUMNS)
        with connection.cursor() as cursor:
            cursor.execute(sql, [self.server.pk])
            for row in cursor:  # not fetchall(): one copy of 64,000 rows at a time
                table_id, key, name, subpartition = row[1], row[2], row[3], row[4]
                name = names.setdefault(name, name)
                subpartition = names.setdefault(subpartition, subpartition)
                key = names.setdefault(key, key)  # (p0# too is in every table)
                figures_key = (table_id, key)
                spec = Spec(figures_key, name, subpartition, *row[5:first])
                specs.setdefault(table_id, []).append(spec)
                values = list(row[first:])
                values[_STATS_UPDATED] = aware(values[_STATS_UPDATED])
                previous[figures_key] = StoredRow(row[0], *values)
        return StoredFigures(previous, _in_definition_order(specs), {})

    def _figures_before(self, last: ServerSnapshot | None) -> tuple[StoredFigures, set | None]:
        """What the poll's memory holds of the last poll, if it is that poll's and the
        partitions did not change since; otherwise read from the database. Last: the
        partitions to compare, where the collection and the memory allow comparing only
        those that may have changed (None: every one)."""
        remembered, self._given = self._given, None
        if remembered and last and remembered.snapshot_id == last.pk and not self.reshaped:
            collection, visit = self.collection, None
            if (
                collection.dirty is not None
                and collection.basis == last.poll_id
                and remembered.rates_known
            ):
                visit = collection.dirty
                comparing.explain(collection, visit)
            if visit == set() or _readable(remembered.stored):  # (none compared: unread)
                self._taken = remembered
                return remembered.stored, visit
        return self._previous_figures(), None

    def _apply(self, previous: dict, keys: list, updates: list) -> int:
        """Write the queued updates and make them the figures remembered for the next
        poll (logging what they replace, `UndoLog`); empties both lists, returns how many
        there were."""
        if self.undo is not None:
            self.undo.before_replacing(previous, keys)
        self._write_updates(updates)
        assert self.stored_figures is not None  # set by `_store_figures`, which calls this
        if (changed := self.stored_figures.changed_keys) is not None:
            changed.update(keys)
        for key, update in zip(keys, updates, strict=True):
            previous[key] = update.stored()
        count = len(updates)
        keys.clear()
        updates.clear()
        return count

    def restore(self) -> Remembered | None:
        """After this store's transaction rolled back on a refuted speculation: the
        figures to remember as before the store ran (they are the database's again, what
        it replaced put back), so the next store of the same poll compares only what may
        have changed, as this one did."""
        taken, self._taken = self._taken, None
        if taken is None:
            return self.untaken()
        if self.undo is not None:
            self.undo.undo(taken.stored.figures)
        return taken

    def untaken(self) -> Remembered | None:
        """After this store failed: the figures it was given, unless it took them (then
        they may be replaced in part, and the next poll reads them back)."""
        given, self._given = self._given, None
        return given

    def _remember(
        self, snapshot: ServerSnapshot, stored: StoredFigures, rates_known: bool
    ) -> Remembered | None:
        return None if self.reshaped else Remembered(snapshot.pk, stored, rates_known)

    def _members(self, visit: set | None):
        """(table key, partitions) to compare: every table's, or those `visit` names."""
        if visit is None:
            return self.collection.tables().items()
        partitions = self.collection.partitions
        by_table: dict[TableKey, list] = {}
        for key in visit:
            figures = partitions.get(key)
            if figures is not None:
                by_table.setdefault(key.table_key, []).append(figures)
        return by_table.items()

    def _store_figures(self, snapshot: ServerSnapshot, last) -> tuple[int, int, Remembered | None]:
        """Returns (partitions changed, sample rows stored, the figures to remember)."""
        self.stored_figures, visit = self._figures_before(last)
        # (Figures read back undecoded stay so where none is compared: a quiet poll.)
        previous = self.stored_figures.figures if visit != set() else {}
        self.compared = len(self.collection.partitions) if visit is None else len(visit)
        seconds = (
            (self.now - self.previous_poll_at).total_seconds() if self.previous_poll_at else None
        )
        samples: list[tuple] = []
        updates: list[Update] = []
        updated_keys: list[tuple[int, str]] = []
        stored = changed = 0
        # Tables with a partition whose figures changed. Rates alone (a partition that
        # stopped moving) are not what the analysis looks at.
        self.changed_tables = set()
        for by_name, members in self._members(visit):
            table = self.tables.get(by_name)
            if table is None or table.dropped_at:
                continue
            for figures in members:
                key = (table.pk, figures.slot)
                old = previous.get(key)
                unstated = figures.key in self.collection.unstated
                if old is not None and self._compare(
                    old, figure_values(figures), seconds, snapshot, samples, updates, unstated
                ):
                    updated_keys.append(key)
                    if updates[-1].figures() != old.figures():
                        self.changed_tables.add(table.pk)
            if len(samples) >= SAMPLE_BATCH:
                stored += _insert_samples(samples)
            # Written as they come: a server's first two polls update every partition.
            if len(updates) >= SAMPLE_BATCH:
                changed += self._apply(previous, updated_keys, updates)
        stored += _insert_samples(samples)
        changed += self._apply(previous, updated_keys, updates)
        remembered = self._remember(snapshot, self.stored_figures, bool(seconds))
        return changed, stored, remembered

    def _compare(
        self, old: StoredRow, values: tuple, seconds, snapshot, samples, updates, unstated=False
    ) -> bool:
        """Sample the figures that changed and queue the partition's update. A new
        partition's previous figures are all None, so its first figures are a change.
        `unstated`: the statistics have no row for it (its rows and sizes are unknown)."""
        partition_id, before, before_rates = old.partition_id, old.figures(), old.rates()
        if _few_reads(values, before):
            values = _keep_reads(values, before)
        # The common case, decided by tuple comparisons: figures standing still, whose
        # rates are 0 (None without a poll before), which the stored ones say already:
        # rates of a poll before the latest read as 0 (`current_rates`), so a partition
        # written a poll ago costs the next nothing.
        if values == before and (
            None not in before_rates if seconds else before_rates == _no_rates
        ):
            return False
        if None in values:  # a source that could not be read keeps the last known value
            values = _known(values, before, unstated)
        now_read, then_read = _reading(values), _reading(before)
        read_before = _discounted(values, before)
        if read_before != before[_READ_BYTES]:
            then_read = replace(then_read, read_bytes=read_before)
        rates = (
            counter_rate(values[_READ_BYTES], read_before, seconds),
            counter_rate(values[_WRITE_BYTES], before[_WRITE_BYTES], seconds),
            per_second(recent.changed_rows(now_read, then_read), seconds),
        )
        if values == before and rates == before_rates:
            return False
        delta = [
            v if v is not None and v != b else None
            for v, b in zip(values[:_N_SAMPLED_FIGURES], before[:_N_SAMPLED_FIGURES], strict=True)
        ]
        sampled = any(v is not None for v in delta)
        if sampled:
            samples.append((partition_id, snapshot.pk, *delta))
        # Rates that are not 0 are this poll's: what `current_rates` tells apart.
        changed_at = self.now if sampled or any(rates) else old.changed_at
        activity = recent.poll_deltas(now_read, then_read)
        recorded = _recorded(old.recent, activity, self.now.timestamp())
        updates.append(Update(*values, *rates, changed_at, recorded, partition_id))
        return True

    def _write_updates(self, updates: list[Update]) -> None:
        if not updates:
            return
        adapt = connection.ops.adapt_datetimefield_value
        quote = connection.ops.quote_name
        assignments = ", ".join(f"{quote(c)} = %s" for c in STORED)
        sql = f"UPDATE {quote(Partition._meta.db_table)} SET {assignments} WHERE id = %s"
        rows: list[list] = []
        adapted: dict = {}  # (most updates share one changed_at: the poll's time)
        for update in updates:
            row = list(update)
            for at in _UPDATE_TIMES:
                value = row[at]
                if (done := adapted.get(value, adapted)) is adapted:
                    done = adapted[value] = adapt(aware(value))
                row[at] = done
            rows.append(row)
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)

    # -- the whole poll ----------------------------------------------------------------

    def save(self) -> StoreResult:
        collection = self.collection
        # No savepoint: inside the poll's transaction it would cost two queries a poll.
        with transaction.atomic(savepoint=False):
            if ServerSnapshot.objects.filter(poll_id=self.poll_id).exists():
                # A retry: nothing stored, the figures given remembered as they were.
                return StoreResult(
                    None, len(collection.partitions), 0, 0, set(), remembered=self.untaken()
                )
            last = ServerSnapshot.objects.latest_for(self.server).first()
            self.previous_poll_at = last.taken_at if last else None
            self._load_tables()
            for key, definition in collection.definitions.items():
                self._apply_definition(key, definition)
            self._mark_recheck()
            self._mark_dropped()
            self._store_unmonitored()
            snapshot = self._snapshot()
            _keep_detail_on_latest_only(last)
            changed, stored, remembered = self._store_figures(snapshot, last)
            ServerSnapshot.objects.filter(pk=snapshot.pk).update(changed=changed)
            touched = self.changed_tables | {self.tables[k].pk for k in collection.definitions}
        return StoreResult(
            snapshot,
            len(collection.partitions),
            changed,
            stored,
            None if self.reshaped else touched,
            self.stored_figures,
            remembered,
        )

    def _snapshot(self) -> ServerSnapshot:
        collection = self.collection
        live = [t for t in self.tables.values() if not t.dropped_at]
        return ServerSnapshot.objects.create(
            server=self.server,
            taken_at=self.now,
            poll_id=self.poll_id,
            flavor=collection.flavor,
            version=collection.version,
            variables=collection.facts.variables,
            status_counters=collection.facts.status,
            innodb_cmp=collection.innodb_cmp,
            # With what the poll did about the rows-changed counters (`tablestats.plan`):
            # the analysis says why they stand in where they were not read.
            sources={**collection.sources, **_plan(collection)},
            partitioned_tables=len(collection.signatures) if collection.listed else len(live),
            partitions=len(collection.partitions),
            definitions_read=len(collection.definitions),
            stats_watermark=collection.stats_watermark,
            files_cover_partitions=collection.files_cover_partitions,
            warnings=[warning.as_dict() for warning in collection.warnings],
            seconds=self.seconds,
        )


def _keep_detail_on_latest_only(previous: ServerSnapshot | None) -> None:
    """The tables behind each warning (every hidden table, say) are detail for the server
    page, which shows the latest poll: older snapshots keep the lines and counts, so a
    degraded server's store does not grow by the whole list every poll."""
    if previous is None or not any(
        isinstance(warning, dict) and warning.get("tables") for warning in previous.warnings
    ):
        return
    summary = [
        {**warning, "tables": []} if isinstance(warning, dict) else warning
        for warning in previous.warnings
    ]
    ServerSnapshot.objects.filter(pk=previous.pk).update(warnings=summary)
