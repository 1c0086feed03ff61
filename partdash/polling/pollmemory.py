"""The poll memory, shared: what a poll needs from the previous poll of its server
(`polling.memory.PollMemory`), kept in Redis so that whichever worker child, on
whichever worker host, polls the server next continues where the last poll left off.

A poll needs of the previous one: the wide sources' rows by bucket
(`incremental.SourceMemory`), the partitions it built from them (`collect.Kept`), the
figures it stored (`metrics.store.Remembered`), the tablestats counters it read and the
alert rules' version it was evaluated under. A worker child holds them in process between
polls (the fast path, when it polled the server last); after each stored poll they are
also written here, and a child that did not poll the server last reads them back before
collecting.

Stored as parts, each a zlib-compressed msgpack document of columns (numbers and
strings, never pickled objects: nothing read back can run code), under one header that
names the poll they continue and which part each piece is. A part that did not change
since the previous poll (the tablespace list of a quiet server, its figures) is not
written again: the header keeps naming the old one, and a child holding that part
already does not read it either. A part that changed a little (a poll after 1% of the
partitions were written) is written as a delta on top of the last whole one: the
buckets read again, the partitions and figures replaced. Rewriting every changed part
whole cost 0.23-0.33 s of a 0.26 s written poll on 32,000 partitions (measured); a delta
costs a few milliseconds. A part is written whole again once its deltas add up to half
its size. Every key expires PARTDASH_POLL_MEMORY_SECONDS after the last poll that named
it.

Never a wrong poll: the memory is used only when its header names the server's last
stored poll (the poll lock serializes a server's polls, so no two write it at once), at
the server's address, in this format. Anything else (Redis flushed or restarted, a part
evicted, an older format, a decoding error) costs one cold poll: every row read, as on a
child that never polled the server.
"""

import logging
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from itertools import compress, groupby
from operator import attrgetter, is_, itemgetter
from sys import intern
from types import NoneType
from typing import Any, cast

import msgpack
import redis
from django.conf import settings

from partdash.collector.collect import Kept, PartitionFigures
from partdash.lib.shared_redis import redis_client
from partdash.metrics.store import FiguresUnreadable
from partdash.mysql.catalogue import FILE_IO, TABLESPACES
from partdash.mysql.figures import layout as figures_layout
from partdash.mysql.incremental import Buckets, _aggregates_of, _every_row
from partdash.mysql.names import PartitionKey, PartitionName
from partdash.mysql.sources.file_io import PartitionIO
from partdash.mysql.sources.tablespaces import PartitionFile
from partdash.mysql.sources.tablestats import LastRead

log = logging.getLogger(__name__)

# Bumped whenever a part's layout changes: an older copy is never read. The partition
# figures' own layout (the registry's, `partdash.mysql.figures`) is part of it, so a
# figure declared or removed changes it too.
FORMAT = f"7:{figures_layout()}"
ZLIB_LEVEL = 1  # the parts are mostly repeated names: level 1 gets most of it, fast
# Deltas on top of one whole part at most; and at most half its size in all, past which
# the part is written whole again (a child new to the server reads the whole and every
# delta: at most 1.5 times the part).
MAX_DELTAS = 32
DELTAS_SHARE = 0.5
# Past this share of its rows (partitions, figures) changed, a delta is not tried.
CHANGED_SHARE = 0.25


def header_key(server_pk: int) -> str:
    return f"partdash:memory:{server_pk}"


def part_key(server_pk: int, part_id: str) -> str:
    return f"partdash:memory:{server_pk}:{part_id}"


# -- datetimes, exactly ----------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICRO = timedelta(microseconds=1)


def _when(value):
    """A datetime as msgpack can carry it, aware or naive as it was: microseconds since
    the epoch, as a string when naive (the store's own columns come back naive from
    SQLite, aware from PostgreSQL, and are compared as they are)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return str((value - _NAIVE_EPOCH) // _MICRO)
    return (value - _EPOCH) // _MICRO


def _datetime(value):
    if value is None:
        return None
    if isinstance(value, str):
        return _NAIVE_EPOCH + timedelta(microseconds=int(value))
    return _EPOCH + timedelta(microseconds=value)


def _wall(monotonic: float | None) -> float | None:
    """A `time.monotonic()` reading as wall-clock time, which another host can read."""
    return None if monotonic is None else time.time() - (time.monotonic() - monotonic)


def _monotonic(wall: float | None) -> float | None:
    return None if wall is None else time.monotonic() - (time.time() - wall)


# -- the parts: columns ----------------------------------------------------------------
#
# Each part is a list of columns, so that decoding builds its rows in C (`map`, `zip`)
# rather than one Python statement per partition: 32,000 partitions decode in tens of
# milliseconds. Repeated strings (schema, table and partition names) are stored once,
# their rows holding indices.


def _plain(value):
    """What msgpack does not carry itself: the server's DECIMAL sums (a witness row)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    raise TypeError(f"cannot share a {type(value).__name__}")


def _pack(document) -> bytes:
    return zlib.compress(msgpack.packb(document, use_bin_type=True, default=_plain), ZLIB_LEVEL)


def _unpack(data: bytes):
    return msgpack.unpackb(zlib.decompress(data), raw=False, strict_map_key=False)


def _coded(values) -> list:
    """A column of strings as [the distinct strings, each row's index among them]."""
    values = list(values)
    distinct = list(dict.fromkeys(values))
    return [distinct, _indices(values, distinct)]


def _indices(values: list, distinct: list) -> list[int]:
    """Each value's index among the distinct ones."""
    index = {value: at for at, value in enumerate(distinct)}
    return list(map(index.__getitem__, values))


def _uncoded(column: list) -> list:
    distinct, codes = column
    return list(map(distinct.__getitem__, codes))


def _times(values) -> list:
    """A column of datetimes (or None), each distinct one converted once."""
    values = list(values)
    converted = {value: _when(value) for value in dict.fromkeys(values)}
    return list(map(converted.__getitem__, values))


def _untimes(values: list) -> list:
    converted = {value: _datetime(value) for value in dict.fromkeys(values)}
    return list(map(converted.__getitem__, values))


def _numbers(values) -> list | dict:
    """A column of numbers, each distinct one stored once when they repeat (as they do:
    on 32,000 partitions, a memory read back held 630,000 integers of 51,000 distinct
    values, each its own object, about 16 MB more in a worker child per server; and
    decoding by index is no slower than reading each number). Coded only when every
    value is of one type (or None): `1 == 1.0 == True`, and what is read back must be of
    the type that was written. A column whose first values are mostly distinct (file
    ids, counters), or of small integers (one object each in Python already), is left as
    it is without looking further: coding costs a whole part's writing about 0.4 s on
    64,000 partitions when every column is tried (measured)."""
    values = list(values)
    sample = values[:_SAMPLE]
    if len(set(sample)) * 2 > len(sample) or all(map(_shared_already, sample)):
        return values
    distinct = list(dict.fromkeys(values))
    if len(distinct) * 2 > len(values):
        return values
    kinds = set(map(type, values))
    kinds.discard(NoneType)
    if len(kinds) != 1:
        return values
    return {"v": distinct, "i": _indices(values, distinct)}


_SAMPLE = 512  # the first values that tell a column of mostly distinct values


def _shared_already(value) -> bool:
    """None, or an integer Python keeps one object of (-5 to 256)."""
    return value is None or (value.__class__ is int and -5 <= value <= 256)


def _unnumbered(column: list | dict) -> list:
    return _uncoded([column["v"], column["i"]]) if isinstance(column, dict) else column


def _named(cls: type, *columns) -> Iterator:
    """Rows of the tuple type `cls` (a NamedTuple) from their columns, built in C:
    `map(cls, *columns)` runs the class's `__new__`, Python code, once per row (reading
    32,000 partitions' memory back took 0.33 s so, 0.27-0.31 s now, measured)."""
    return map(partial(tuple.__new__, cls), zip(*columns, strict=True))


def _encode_buckets(buckets: Buckets, columns: list) -> list:
    """The bucket aggregates (from the digest they were parsed from, when there is one),
    the buckets in the remembered order with their row counts, and the rows' columns."""
    aggregates = None if buckets.digest is not None else [
        [bucket, *aggregate] for bucket, aggregate in buckets.aggregates.items()
    ]  # fmt: skip
    witness = list(buckets.witness) if buckets.witness is not None else None
    order = list(buckets.rows)
    counts = [len(members) for members in buckets.rows.values()]
    return [
        buckets.modulus,
        buckets.digest,
        aggregates,
        _wall(buckets.read_all_at),
        witness,
        order,
        counts,
        columns,
    ]


def _decode_buckets(document: list, rows: list) -> Buckets:
    modulus, digest, aggregates, read_all_at, witness, order, counts, _ = document
    if digest is not None:
        aggregates = _aggregates_of(digest)
    else:
        aggregates = {bucket: (count, xor) for bucket, count, xor in aggregates}
    by_bucket, at = {}, 0
    for bucket, count in zip(order, counts, strict=True):
        by_bucket[bucket] = rows[at : at + count]
        at += count
    if at != len(rows):
        raise ValueError("bucket counts do not add up")
    witness = tuple(witness) if witness is not None else None
    read_all_at = cast(float, _monotonic(read_all_at))  # (written from a float)
    return Buckets(modulus, aggregates, by_bucket, read_all_at, digest, witness)


def _tablespace_columns(rows: list) -> list:
    names = list(zip(*[row.name for row in rows], strict=False)) or [(), (), (), ()]
    figures = list(zip(*[row[1:] for row in rows], strict=False)) or [(), (), (), (), ()]
    return [*map(_coded, names), *map(_numbers, figures[:4]), _coded(figures[4])]


def _tablespace_rows(columns: list) -> list:
    names = _named(PartitionName, *map(_uncoded, columns[:4]))
    figures = map(_unnumbered, columns[4:8])
    return list(_named(PartitionFile, names, *figures, _uncoded(columns[8])))


def _file_io_columns(rows: list) -> list:
    paths, *figures = list(zip(*rows, strict=False)) or [(), (), (), (), ()]
    return [list(paths), *map(_numbers, figures)]


def _file_io_rows(columns: list) -> list:
    paths, *figures = map(_unnumbered, columns)
    return list(_named(PartitionIO, map(intern, paths), *figures))  # (shared: `decode_kept`)


def encode_tablespaces(buckets: Buckets) -> list:
    return _encode_buckets(buckets, _tablespace_columns(_every_row(buckets.rows)))


def decode_tablespaces(document: list) -> Buckets:
    return _decode_buckets(document, _tablespace_rows(document[-1]))


def encode_file_io(buckets: Buckets) -> list:
    return _encode_buckets(buckets, _file_io_columns(_every_row(buckets.rows)))


def decode_file_io(document: list) -> Buckets:
    return _decode_buckets(document, _file_io_rows(document[-1]))


def buckets_delta(held: Buckets, now: Buckets, columns_of) -> list | None:
    """The rows and aggregates that changed since the held ones, when only some buckets
    were read again; None when every row was read again (then the rows are written
    whole). A written poll reads a few buckets again (1% of 32,000 partitions written:
    a few hundred file I/O buckets of 16,384), and few rows differ in them.

    The delta: the buckets' order when it changed, each bucket read again with where
    each of its rows comes from (the index of the same row among the held bucket's, or
    -1: the next new row), the aggregates that changed (`_aggregates_delta`), the
    witness, and the new rows by columns (`columns_of`)."""
    if (
        held.modulus != now.modulus
        or held.read_all_at != now.read_all_at
        or (held.digest is None) != (now.digest is None)
    ):
        return None
    new: list
    before, changed, places, new = held.rows, [], [], []
    for bucket, rows in now.rows.items():
        if (old := before.get(bucket)) is rows:
            continue
        index = {row: at for at, row in enumerate(old or ())}
        place = [index.get(row, -1) for row in rows]
        new.extend(compress(rows, map((-1).__eq__, place)))
        changed.append(bucket)
        places.append(place)
    if len(new) > sum(map(len, now.rows.values())) * CHANGED_SHARE:
        return None
    order = None if list(now.rows) == list(before) else list(now.rows)
    witness = list(now.witness) if now.witness is not None else None
    return [order, changed, places, _aggregates_delta(held, now), witness, columns_of(new)]


def _aggregates_delta(held: Buckets, now: Buckets) -> list:
    """[whole, items]: the aggregates as the server sent them (the digest, which the next
    poll compares as a string) or as (bucket, rows, XOR); only the items that changed,
    by position (digest) or bucket, unless `whole`."""
    changed: list[Any]  # [position, item] or (bucket, aggregate)
    if now.digest is not None:
        # (Both have a digest or neither: `buckets_delta`.)
        old, new = cast(str, held.digest).split(","), now.digest.split(",")
        changed = [
            [at, item] for at, (was, item) in enumerate(zip(old, new, strict=False)) if was != item
        ]
        # (Each item starts with its bucket: the same buckets in the same places, or whole.)
        if len(old) != len(new) or any(
            old[at].partition(" ")[0] != item.partition(" ")[0] for at, item in changed
        ):
            return [True, now.digest]
        return [False, changed]
    before = held.aggregates
    if before.keys() != now.aggregates.keys():
        return [True, [[bucket, *aggregate] for bucket, aggregate in now.aggregates.items()]]
    changed = [(bucket, a) for bucket, a in now.aggregates.items() if before[bucket] != a]
    return [False, [[bucket, *aggregate] for bucket, aggregate in changed]]


def apply_buckets(held: Buckets, document: list, rows_of) -> Buckets:
    """`held` with a `buckets_delta` applied: the buckets not read again are the held
    ones, the rows of those read again the held rows where they are the same."""
    order, changed, places, (whole, items), witness, columns = document
    new, before = iter(rows_of(columns)), held.rows
    rows = {}
    for bucket, place in zip(changed, places, strict=True):
        old = before.get(bucket) or []
        rows[bucket] = [next(new) if at < 0 else old[at] for at in place]
    if next(new, None) is not None:
        raise ValueError("new rows left over")
    order = list(before) if order is None else order
    rows = {bucket: rows[bucket] if bucket in rows else before.get(bucket, []) for bucket in order}
    digest = held.digest
    if digest is not None:
        if whole:
            digest = items
            aggregates = _aggregates_of(digest)
        else:
            digest_items = digest.split(",")
            for at, item in items:
                digest_items[at] = item
            digest = ",".join(digest_items)
            aggregates = {**held.aggregates, **_aggregates_of(",".join(item for _, item in items))}
    elif whole:
        aggregates = {bucket: (count, xor) for bucket, count, xor in items}
    else:
        aggregates = {**held.aggregates, **{b: (count, xor) for b, count, xor in items}}
    witness = tuple(witness) if witness is not None else None
    return Buckets(held.modulus, aggregates, rows, held.read_all_at, digest, witness)


_FIGURES = PartitionFigures.__slots__[3:]  # after name, key and slot
JOIN = "\0".join  # a key's `names.path_key`
_STATS_AT = _FIGURES.index("stats_updated_at")


def _kept_columns(partitions: list) -> list:
    """Names, folded partition names (the key's) and every figure of `partitions`, by
    columns: a column at a time, no row of 25 figures is built per partition on the way."""
    keys = list(map(attrgetter("key"), partitions))
    names = list(zip(*map(attrgetter("name"), partitions), strict=True)) or [()] * 4
    folded = [list(map(itemgetter(2), keys)), list(map(itemgetter(3), keys))]
    values = [
        (_times if at == _STATS_AT else _numbers)(map(attrgetter(name), partitions))
        for at, name in enumerate(_FIGURES)
    ]
    slots = _coded(map(attrgetter("slot"), partitions))
    return [[*map(_coded, names), *map(_coded, folded), slots], values]


def _kept_rows(document: list) -> tuple[list, list, list, list, list]:
    """`_kept_columns` read back: names, keys, slots and the figures' columns."""
    name_columns, values = document
    schemas, tables, partitions, subs, folded, folded_subs, slots = map(_uncoded, name_columns)
    names = list(_named(PartitionName, schemas, tables, partitions, subs))
    keys = list(_named(PartitionKey, schemas, tables, folded, folded_subs))
    values = list(map(_unnumbered, values))
    values[_STATS_AT] = _untimes(values[_STATS_AT])
    return names, keys, slots, [schemas, tables], values


def encode_kept(kept: Kept) -> list:
    """The partitions a poll built, by columns (`_kept_columns`), whether the partition's
    file key names it (`by_path`: always, but for a hostile server's clipped names, which
    are not shared), and the signatures."""
    partitions = list(kept.partitions.values())
    paths = map(JOIN, map(attrgetter("key"), partitions))  # (`names.path_key`, in C)
    indexed = list(map(is_, map(kept.by_path.get, paths), partitions))
    if sum(indexed) != len(kept.by_path):
        raise ValueError("a file key the partitions' keys do not give")
    signatures: list[Sequence[Any]]
    signatures = list(zip(*[(*key, value) for key, value in kept.signatures.items()], strict=True))
    signatures = [list(column) for column in signatures] or [[], [], []]
    return [
        _kept_columns(partitions),
        indexed,
        [_coded(signatures[0]), _coded(signatures[1]), signatures[2]],
    ]


def decode_kept(document: list) -> Kept:
    columns, indexed, signature_columns = document
    names, keys, slots, (schemas, tables), values = _kept_rows(columns)
    figures = list(map(PartitionFigures, names, keys, slots, *values))
    partitions = dict(zip(keys, figures, strict=True))
    if len(partitions) != len(figures):
        raise ValueError("two partitions share a key")
    paths = map(intern, map(JOIN, keys))  # (one string with file I/O's: `names.identity`)
    by_path = dict(compress(zip(paths, figures, strict=True), indexed))
    grouped: dict = {}
    table_keys = zip(schemas, tables, strict=True)
    for table, members in groupby(zip(table_keys, figures, strict=True), itemgetter(0)):
        grouped.setdefault(table, []).extend(map(itemgetter(1), members))
    schemas, tables = map(_uncoded, signature_columns[:2])
    signatures = dict(zip(zip(schemas, tables, strict=True), signature_columns[2], strict=True))
    # (Unknown what the next poll changes in place: `dirty` is its own.)
    return Kept(partitions, by_path, (len(partitions), grouped), signatures, None)


def kept_delta(held: Kept, now: Kept) -> list | None:
    """The partitions a poll changed in place (`Kept.dirty`), when it reused the held
    ones; None when it did not (then the partitions are written whole)."""
    if (
        held.partitions is not now.partitions
        or now.dirty is None
        or len(now.dirty) > len(now.partitions) * CHANGED_SHARE
        or held.signatures != now.signatures
    ):
        return None
    partitions = now.partitions
    return _kept_columns([partitions[key] for key in now.dirty if key in partitions])


def apply_kept(held: Kept, document: list) -> Kept:
    """`held` with a `kept_delta` applied, in place."""
    _, keys, _, _, values = _kept_rows(document)
    partitions = held.partitions
    for key, row in zip(keys, zip(*values, strict=True), strict=True):
        figures = partitions[key]  # (a KeyError: the delta is not on top of these)
        for name, value in zip(_FIGURES, row, strict=True):
            setattr(figures, name, value)
    return Kept(partitions, held.by_path, held.grouped, held.signatures, None)


@dataclass
class Figures:
    """A server's partition figures as its last stored poll left them
    (`metrics.store.Remembered` without its snapshot, which the header names): by
    (table id, partition key) the partition's id and `STORED` figures, their definitions
    (`Specs`), and whether its rates were known (`metrics.store.Remembered`)."""

    figures: dict
    specs: dict
    rates_known: bool
    # The keys whose figures were replaced in place since they were last written here
    # (`metrics.store.StoredFigures.changed_keys`); None: not known.
    changed: set | None = None


class UnreadFigures(Figures):
    """A figures part read back and left undecoded (its whole part and deltas, as
    stored, compressed): decoded on the first use of its figures or definitions. A quiet
    poll uses neither, the store comparing no partition: decoding them cost a poll on a
    child that did not hold them 0.07-0.18 s, and holding them 17 MB per 32,000
    partitions. Figures that do not decode raise `store.FiguresUnreadable` (the store
    then reads them from the database)."""

    def __init__(self, stored: list[bytes], rows: "FigureRows") -> None:
        # (Not the dataclass's: `figures` and `specs` are missing until decoded.)
        self.stored, self.rows, self.changed = stored, rows, set()
        last = _unpack(stored[-1])
        self.rates_known = last[6] is not None
        # A delta is small: kept as read, not unpacked again. A whole part is not kept.
        self.last = last if len(stored) > 1 else None

    @property
    def decoded(self) -> bool:
        return "figures" in self.__dict__

    def __getattr__(self, name: str):  # (only what the instance does not hold yet)
        if name not in ("figures", "specs") or "stored" not in self.__dict__:
            raise AttributeError(name)
        try:
            documents = list(map(_unpack, self.stored[: -1 if self.last else None]))
            piece = decode_figures(documents[0], self.rows)
            for document in [*documents[1:], *([self.last] if self.last else [])]:
                piece = apply_figures(piece, document, self.rows)
        except Exception as exc:  # a part written by another version, damaged
            raise FiguresUnreadable(f"{type(exc).__name__}: {exc}") from exc
        self.figures, self.specs = piece.figures, piece.specs
        del self.stored, self.last
        return getattr(self, name)


def _unread(piece: object) -> bool:
    return isinstance(piece, UnreadFigures) and not piece.decoded


@dataclass(frozen=True)
class FigureRows:
    """How the figures' rows are built again: where the row's datetimes are (counting
    the partition id), and the types of a row and a definition (`metrics.store.StoredRow`
    and `Spec`; plain tuples by default)."""

    times: tuple[int, ...] = ()
    row: type[tuple] = tuple
    spec: type[tuple] = tuple


def encode_figures(figures: Figures, rows: FigureRows) -> list:
    times = rows.times
    keys = list(figures.figures)
    values = list(figures.figures.values())
    width = len(values[0]) if values else 0
    columns = [  # one at a time
        (_times if at in times else _numbers)(map(itemgetter(at), values)) for at in range(width)
    ]
    specs = [spec for members in figures.specs.values() for spec in members]
    spec_columns = list(map(list, zip(*[spec[1:] for spec in specs], strict=False)))
    spec_tables = [[table_id, len(members)] for table_id, members in figures.specs.items()]
    return [
        _numbers(key[0] for key in keys),
        _coded(key[1] for key in keys),
        columns,
        spec_tables,
        _spec_keys(keys, specs),
        [_coded(spec_columns[0]), _coded(spec_columns[1]), *map(_numbers, spec_columns[2:])]
        if spec_columns
        else [],
        # (A list, once the partitions whose rates were not zero: known.)
        [] if figures.rates_known else None,
    ]


def _spec_keys(keys: list, specs: list) -> list:
    """The definitions' keys: where each is among the figures' `keys` (read back, the
    two share one tuple per partition: 2.3 MB per 32,000 partitions); or, should one
    have no figures, the partition slots, the table ids being the definitions' order."""
    at = {key: position for position, key in enumerate(keys)}
    positions = [at.get(spec[0], -1) for spec in specs]
    if -1 in positions:
        return [None, _coded(spec[0][1] for spec in specs)]
    return [positions, None]


def decode_figures(document: list, rows: FigureRows) -> Figures:
    table_ids, slots, columns, spec_tables, spec_keys, spec_columns, rates = document
    slots, table_ids = _uncoded(slots), _unnumbered(table_ids)
    columns = list(map(_unnumbered, columns))
    for at in rows.times:
        if columns:
            columns[at] = _untimes(columns[at])
    values = _named(rows.row, *columns) if columns else ()
    figure_keys = list(zip(table_ids, slots, strict=False))
    figures = dict(zip(figure_keys, values, strict=False))
    if len(figures) != len(table_ids):
        raise ValueError("figures and keys differ in number")
    specs, at = {}, 0
    if spec_columns:
        spec_columns = [
            _uncoded(spec_columns[0]),
            _uncoded(spec_columns[1]),
            *map(_unnumbered, spec_columns[2:]),
        ]
        positions, spec_slots = spec_keys
        if positions is not None:  # (the figures' own keys: one tuple for both)
            keys = list(map(figure_keys.__getitem__, positions))
        else:
            owners = [table_id for table_id, count in spec_tables for _ in range(count)]
            keys = list(zip(owners, _uncoded(spec_slots), strict=True))
        every = list(_named(rows.spec, keys, *spec_columns))  # (in C: 0.1 s a row at a time)
        for table_id, count in spec_tables:
            specs[table_id] = every[at : at + count]
            at += count
    return Figures(figures, specs, rates is not None)


def figures_delta(held: Figures, now: Figures, rows: FigureRows) -> list | None:
    """The figures replaced since the held ones were written, when they were replaced
    in place; None otherwise (then they are written whole)."""
    figures = now.figures
    if (
        held.figures is not figures
        or held.specs is not now.specs
        or now.changed is None
        or len(now.changed) > len(figures) * CHANGED_SHARE
        or not now.changed.issubset(figures)
    ):
        return None
    changed = {key: figures[key] for key in now.changed}
    return encode_figures(Figures(changed, {}, now.rates_known), rows)


def apply_figures(held: Figures, document: list, rows: FigureRows) -> Figures:
    """`held` with a `figures_delta` applied, in place."""
    delta = decode_figures(document, rows)
    held.figures.update(delta.figures)
    return Figures(held.figures, held.specs, delta.rates_known)


def encode_tablestats(last: LastRead) -> list:
    keys = list(zip(*last.counters, strict=False)) or [(), (), (), ()]
    values = list(zip(*last.counters.values(), strict=False)) or [(), ()]
    columns = [*map(_coded, keys), *map(_numbers, values)]
    return [list(last.row_writes), columns, last.read, last.tables, last.partitions]


def decode_tablestats(document: list) -> LastRead:
    row_writes, columns, read, tables, partitions = document
    keys = _named(PartitionKey, *map(_uncoded, columns[:4]))
    counters = dict(zip(keys, zip(*map(_unnumbered, columns[4:]), strict=False), strict=False))
    return LastRead(tuple(row_writes), counters, read, tables, partitions)


# -- in Redis --------------------------------------------------------------------------


@dataclass
class Memory:
    """What one stored poll left for the next poll of its server, as shared."""

    poll_id: str  # the stored poll this memory continues
    snapshot_id: int | None
    address: tuple[str, int]  # the server's host and port when it was polled
    sources: dict[str, Buckets]
    started: int | None = None  # see `SourceMemory`
    counted_at: float | None = None  # time.monotonic(), in this process
    beside_failed_at: float | None = None
    tablestats: LastRead | None = None
    kept: Kept | None = None
    figures: Figures | None = None
    evaluated_under: str | None = None  # the alert rules' version (`rules_version`)


@dataclass(frozen=True)
class Part:
    """One piece of a server's memory as this process holds it: the ids of the whole
    part and of the deltas written on top of it, their sizes in bytes, and the object
    they decode to."""

    chain: tuple[str, ...]
    sizes: tuple[int, ...]
    piece: object
    # The figures part only: its whole part and deltas as stored, compressed (about 1 MB
    # per 32,000 partitions), so that it can be let go decoded (`compact_figures`); ()
    # where this process did not see every one of them.
    stored: tuple[bytes, ...] = ()

    def complete(self) -> bool:
        return len(self.stored) == len(self.chain)


# What one process holds of each server's shared memory, by server: part name -> `Part`.
# Set when a poll's memory is written or read; a part named again by a later header is
# then not read again, and one with deltas on top is read from where this process left
# it. Emptied when a poll fails, as it may have changed those objects without writing
# them. Its owner (`polling.memory.PollMemories`) passes it to `load`, `save`,
# `compact_figures` and `unheld`.
Held = dict[int, dict[str, Part]]

TABLESPACES_PART, FILE_IO_PART = "tablespaces", "file_io"
TABLESPACES_KEY, FILE_IO_KEY = TABLESPACES.key, FILE_IO.key
TABLESTATS_PART, FIGURES_PART, KEPT_PART = "tablestats", "figures", "kept"


@dataclass(frozen=True)
class Kind:
    """How one part is written and read: whole (`encode`, `decode`) and, where a poll
    changes it a little, as a delta on the held piece (`delta`: None when it changed too
    much or not in place; `apply`)."""

    # (Any: each kind has its own piece, a `Buckets`, `LastRead`, `Kept` or `Figures`.)
    encode: Callable[[Any], list]
    decode: Callable[[list], Any]
    delta: Callable[[Any, Any], list | None] | None = None
    apply: Callable[[Any, list], Any] | None = None


def _kinds(rows: FigureRows) -> dict[str, Kind]:
    return {
        TABLESPACES_PART: Kind(
            encode_tablespaces,
            decode_tablespaces,
            partial(buckets_delta, columns_of=_tablespace_columns),
            partial(apply_buckets, rows_of=_tablespace_rows),
        ),
        FILE_IO_PART: Kind(
            encode_file_io,
            decode_file_io,
            partial(buckets_delta, columns_of=_file_io_columns),
            partial(apply_buckets, rows_of=_file_io_rows),
        ),
        TABLESTATS_PART: Kind(encode_tablestats, decode_tablestats),
        KEPT_PART: Kind(encode_kept, decode_kept, kept_delta, apply_kept),
        FIGURES_PART: Kind(
            partial(encode_figures, rows=rows),
            partial(decode_figures, rows=rows),
            partial(figures_delta, rows=rows),
            partial(apply_figures, rows=rows),
        ),
    }


def unheld(held: Held, server_pk: int) -> None:
    held.pop(server_pk, None)


def compact_figures(held: Held, server_pk: int, rows: "FigureRows") -> "UnreadFigures | None":
    """Let go of the server's figures as decoded, holding them as stored instead (as a
    read back leaves them, `UnreadFigures`): 15-20 MB less per 32,000 partitions until a
    poll of that server compares partitions here again. Returns what now stands for
    them, or None where this process cannot (it did not see every part and delta, or
    holds them so already)."""
    part = held.get(server_pk, {}).get(FIGURES_PART)
    if part is None or not part.stored or not part.complete() or _unread(part.piece):
        return None
    unread = UnreadFigures(list(part.stored), rows)
    held[server_pk][FIGURES_PART] = Part(part.chain, part.sizes, unread, part.stored)
    return unread


def _client() -> redis.Redis:
    # A short timeout: an unanswering Redis costs a poll one second, then a cold read.
    # (One client per process: a new one per call cost a connection, and a cycle of
    # redis-py's objects for the cyclic collector, at every load and save.)
    return redis_client(timeout=1)


def _same_buckets(held: Buckets, now: Buckets) -> bool:
    return (
        held.rows is now.rows
        and held.digest == now.digest
        and held.aggregates is now.aggregates
        and held.witness == now.witness
        and held.modulus == now.modulus
        and held.read_all_at == now.read_all_at
    )


@dataclass
class Written:
    """What `save` wrote: bytes sent (the parts that changed), the sizes of the parts
    written, and which of them were deltas."""

    sent: int
    parts: dict[str, int]
    seconds: float
    deltas: set[str]


def _pieces(memory: "Memory") -> dict[str, object]:
    pieces: dict[str, object] = {}
    for name, key in ((TABLESPACES_PART, TABLESPACES_KEY), (FILE_IO_PART, FILE_IO_KEY)):
        if key in memory.sources:
            pieces[name] = memory.sources[key]
    for name, piece in (
        (TABLESTATS_PART, memory.tablestats),
        (KEPT_PART, memory.kept),
        (FIGURES_PART, memory.figures),
    ):
        if piece is not None:
            pieces[name] = piece
    return pieces


def _written(
    name: str, kind: Kind, before: Part | None, piece: object, poll_id: str
) -> tuple[Part, bytes | None]:
    """The part `piece` makes, and what to write for it: nothing when the held part is
    it still, a delta on top of it when one is small enough, else the whole piece."""
    keep = name == FIGURES_PART  # (its bytes are held: `Part.stored`)
    if before is not None and _unchanged(name, before.piece, piece):
        return Part(before.chain, before.sizes, piece, before.stored), None
    part_id = f"{poll_id}:{name}"
    if before is not None and kind.delta is not None and len(before.chain) <= MAX_DELTAS:
        document = kind.delta(before.piece, piece)
        if document is not None:
            data = _pack(document)
            if sum(before.sizes[1:]) + len(data) <= before.sizes[0] * DELTAS_SHARE:
                stored = (*before.stored, data) if keep and before.complete() else ()
                chain, sizes = (*before.chain, part_id), (*before.sizes, len(data))
                return Part(chain, sizes, piece, stored), data
    data = _pack(kind.encode(piece))
    return Part((part_id,), (len(data),), piece, (data,) if keep else ()), data


def save(held: Held, server_pk: int, memory: Memory, rows: FigureRows) -> Written | None:
    """Write the memory a stored poll left, as the server's current one: the parts that
    changed since this process last wrote or read them (whole, or as a delta on top of
    what it holds), and a header naming every part. Returns what was written; None when
    Redis could not take it (the next poll on another child is then cold, and this one
    forgets what it holds: it no longer matches)."""
    started = time.monotonic()
    before = held.get(server_pk, {})
    kinds = _kinds(rows)
    writes, now_held, sizes, deltas = {}, {}, {}, set()
    try:
        for name, piece in _pieces(memory).items():
            part, data = _written(name, kinds[name], before.get(name), piece, memory.poll_id)
            if data is not None:
                writes[part_key(server_pk, part.chain[-1])] = data
                sizes[name] = len(data)
                if len(part.chain) > 1:
                    deltas.add(name)
            now_held[name] = part
    except Exception:  # a bug: the poll was stored, and the next one is merely cold
        log.exception("the poll memory of server %s could not be encoded", server_pk)
        unheld(held, server_pk)
        return None
    header = msgpack.packb(
        {
            "format": FORMAT,
            "poll": memory.poll_id,
            "snapshot": memory.snapshot_id,
            "address": list(memory.address),
            "parts": {name: list(part.chain) for name, part in now_held.items()},
            "sizes": {name: list(part.sizes) for name, part in now_held.items()},
            "started": memory.started,
            "counted_at": _wall(memory.counted_at),
            "beside_failed_at": _wall(memory.beside_failed_at),
            "evaluated_under": memory.evaluated_under,
            "written_at": time.time(),
        },
        use_bin_type=True,
        default=_plain,
    )
    ttl = settings.PARTDASH_POLL_MEMORY_SECONDS
    try:
        with _client().pipeline(transaction=False) as pipe:
            for key, data in writes.items():
                pipe.set(key, data, ex=ttl)
            for part in now_held.values():  # kept: outlive the header
                for part_id in part.chain:
                    if part_key(server_pk, part_id) not in writes:
                        pipe.expire(part_key(server_pk, part_id), ttl)
            pipe.set(header_key(server_pk), header, ex=ttl)
            pipe.execute()
    except redis.RedisError as exc:
        log.info("the poll memory of server %s was not shared: %s", server_pk, exc)
        unheld(held, server_pk)
        return None
    held[server_pk] = now_held
    sent = sum(map(len, writes.values())) + len(header)
    return Written(sent, sizes, time.monotonic() - started, deltas)


def _unchanged(name: str, held: object, now: object) -> bool:
    # (The casts: the pieces are of the part's type, `_pieces`.)
    if name in (TABLESPACES_PART, FILE_IO_PART):
        return _same_buckets(cast(Buckets, held), cast(Buckets, now))
    if name == KEPT_PART:  # the same partitions, and none changed in place since
        held_kept, now_kept = cast(Kept, held), cast(Kept, now)
        return held_kept.partitions is now_kept.partitions and now_kept.dirty == set()
    if name == FIGURES_PART:  # the same figures, none replaced since they were written
        if _unread(now):  # (read back, and never used)
            return now is held
        held_figures, now_figures = cast(Figures, held), cast(Figures, now)
        return (
            now_figures.changed == set()
            and held_figures.figures is now_figures.figures
            and held_figures.specs is now_figures.specs
            and held_figures.rates_known == now_figures.rates_known
        )
    return held is now


def _reading(
    held: dict[str, Part], parts: dict[str, list]
) -> dict[str, tuple[Part | None, tuple[str, ...]]]:
    """Per part: the held piece to continue from (None: start from the whole part) and
    the ids still to read on top of it."""
    plan: dict[str, tuple[Part | None, tuple[str, ...]]] = {}
    for name, ids in parts.items():
        chain, have = tuple(ids), held.get(name)
        if have is not None and chain[: len(have.chain)] == have.chain:
            plan[name] = (have, chain[len(have.chain) :])
        else:
            plan[name] = (None, chain)
    return plan


def load(
    held: Held, server_pk: int, poll_id: str, address: tuple[str, int], rows: FigureRows
) -> Memory | None:
    """The shared memory of the server's stored poll `poll_id`, reading only the parts (or
    deltas) this process does not hold; None when there is none that continues that poll
    at that address (never stored, expired, evicted, flushed, an older format,
    unreadable)."""
    try:
        client = _client()
        header = client.get(header_key(server_pk))
        if header is None:
            return None
        header = msgpack.unpackb(header, raw=False)
        if (
            header.get("format") != FORMAT
            or header.get("poll") != poll_id
            or tuple(header.get("address") or ()) != tuple(address)
        ):
            return None
        parts: dict[str, list] = header["parts"]
        plan = _reading(held.get(server_pk, {}), parts)
        wanted = [part_id for _, ids in plan.values() for part_id in ids]
        found = client.mget([part_key(server_pk, part_id) for part_id in wanted]) if wanted else []
    except (redis.RedisError, ValueError, KeyError, TypeError) as exc:
        log.info("the poll memory of server %s could not be read: %s", server_pk, exc)
        return None
    if any(data is None for data in found):
        return None  # a part expired or was evicted: the whole memory is cold
    # What is read whole again is not held beside what replaces it.
    held[server_pk] = {name: have for name, (have, _) in plan.items() if have is not None}
    pieces: dict[str, Any]
    # (Bytes, none None: checked above; the client does not decode responses.)
    kinds, remaining, pieces = _kinds(rows), iter(cast("list[bytes]", found)), {}
    figures_stored: tuple[bytes, ...] = ()
    try:
        for name, (have, ids) in plan.items():
            piece = None if have is None else have.piece
            if name == FIGURES_PART:
                read = tuple(next(remaining) for _ in ids)
                before = () if have is None else have.stored
                if have is None or have.complete():
                    figures_stored = (*before, *read)
                if ids and (piece is None or _unread(piece)):
                    unread = piece.stored if isinstance(piece, UnreadFigures) else []
                    pieces[name] = UnreadFigures([*unread, *read], rows)  # (decoded when used)
                    figures_stored = tuple(pieces[name].stored)
                    continue
                remaining = iter([*read, *remaining])
            for _ in ids:
                document = _unpack(next(remaining))
                kind = kinds[name]
                if piece is None:
                    piece = kind.decode(document)
                else:  # (a delta: only a kind with deltas is written with one)
                    assert kind.apply is not None
                    piece = kind.apply(piece, document)
            pieces[name] = piece
    except Exception as exc:  # noqa: BLE001 (a part written by another version, damaged)
        log.warning(
            "the poll memory of server %s could not be decoded: %s", server_pk, exc, exc_info=True
        )
        unheld(held, server_pk)  # (a delta may have been applied to what was held in part)
        return None
    sizes = header.get("sizes") or {}
    held[server_pk] = {
        name: Part(
            tuple(ids),
            tuple(sizes.get(name) or (0,) * len(ids)),
            pieces[name],
            figures_stored if name == FIGURES_PART else (),
        )
        for name, ids in parts.items()
    }
    sources = {
        key: pieces[name]
        for name, key in ((TABLESPACES_PART, TABLESPACES_KEY), (FILE_IO_PART, FILE_IO_KEY))
        if name in pieces
    }
    tablespaces, kept = pieces.get(TABLESPACES_PART), pieces.get(KEPT_PART)
    if (
        tablespaces is not None
        and kept is not None
        and (plan[TABLESPACES_PART][0] is None or plan[KEPT_PART][0] is None)
    ):
        _share_names(tablespaces, kept)
    return Memory(
        poll_id=poll_id,
        snapshot_id=header.get("snapshot"),
        address=cast("tuple[str, int]", tuple(address)),
        sources=sources,
        started=header.get("started"),
        counted_at=_monotonic(header.get("counted_at")),
        beside_failed_at=_monotonic(header.get("beside_failed_at")),
        tablestats=pieces.get(TABLESTATS_PART),
        kept=pieces.get(KEPT_PART),
        figures=pieces.get(FIGURES_PART),
        evaluated_under=_unevaluated(header.get("evaluated_under")),
    )


def _share_names(tablespaces: Buckets, kept: Kept) -> None:
    """Give each partition kept the name of its tablespace row, equal and read back
    apart: a poll's own partitions hold their row's (one object less per partition,
    2.7 MB per 32,000 partitions)."""
    names = {row.name: row.name for rows in tablespaces.rows.values() for row in rows}
    for figures in kept.partitions.values():
        figures.name = names.get(figures.name, figures.name)


def _unevaluated(version: object) -> str | None:
    """The rules version as `rules_version` returns it (a digest); None for what an
    older release wrote (a list): its next poll evaluates every table once."""
    return version if isinstance(version, str) else None
