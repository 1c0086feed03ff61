"""The poll memory, shared: what a poll needs from the previous poll of its server
(`polling.service.PollMemory`), kept in Redis so that whichever worker child, on
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
already does not read it either. Every key expires PARTDASH_POLL_MEMORY_SECONDS after
the last poll that named it.

Never a wrong poll: the memory is used only when its header names the server's last
stored poll (the poll lock serializes a server's polls, so no two write it at once), at
the server's address, in this format. Anything else (Redis flushed or restarted, a part
evicted, an older format, a decoding error) costs one cold poll: every row read, as on a
child that never polled the server.
"""

import logging
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import compress, groupby
from operator import attrgetter, is_, itemgetter
from sys import intern

import msgpack
import redis
from django.conf import settings

from partdash.collector.collect import Kept, PartitionFigures
from partdash.mysql.catalogue import FILE_IO, TABLESPACES
from partdash.mysql.incremental import Buckets, _aggregates_of, _every_row
from partdash.mysql.names import PartitionKey, PartitionName
from partdash.mysql.sources.file_io import PartitionIO
from partdash.mysql.sources.tablespaces import PartitionFile
from partdash.mysql.sources.tablestats import LastRead

log = logging.getLogger(__name__)

FORMAT = 2  # bumped whenever a part's layout changes: an older copy is never read
ZLIB_LEVEL = 1  # the parts are mostly repeated names: level 1 gets most of it, fast


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
    index = {value: at for at, value in enumerate(distinct)}
    return [distinct, list(map(index.__getitem__, values))]


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
    return Buckets(modulus, aggregates, by_bucket, _monotonic(read_all_at), digest, witness)


def encode_tablespaces(buckets: Buckets) -> list:
    rows = _every_row(buckets.rows)
    names = list(zip(*[row.name for row in rows], strict=False)) or [(), (), (), ()]
    figures = list(zip(*[row[1:] for row in rows], strict=False)) or [(), (), (), (), ()]
    columns = [*map(_coded, names), *map(list, figures[:4]), _coded(figures[4])]
    return _encode_buckets(buckets, columns)


def decode_tablespaces(document: list) -> Buckets:
    columns = document[-1]
    names = map(PartitionName, *map(_uncoded, columns[:4]))
    rows = list(map(PartitionFile, names, *columns[4:8], _uncoded(columns[8])))
    return _decode_buckets(document, rows)


def encode_file_io(buckets: Buckets) -> list:
    rows = _every_row(buckets.rows)
    columns = list(map(list, zip(*rows, strict=False))) or [[], [], [], [], []]
    return _encode_buckets(buckets, columns)


def decode_file_io(document: list) -> Buckets:
    paths, *figures = document[-1]
    rows = list(map(PartitionIO, map(intern, paths), *figures))  # (shared: `decode_kept`)
    return _decode_buckets(document, rows)


_FIGURES = PartitionFigures.__slots__[3:]  # after name, key and slot
JOIN = "\0".join  # a key's `names.path_key`
_STATS_AT = _FIGURES.index("stats_updated_at")


def encode_kept(kept: Kept) -> list:
    """The partitions a poll built, by columns: names, folded partition names (the key's),
    whether the partition's file key names it (`by_path`: always, but for a hostile
    server's clipped names, which are not shared), every figure, and the signatures."""
    partitions = list(kept.partitions.values())
    keys = list(map(attrgetter("key"), partitions))
    paths = map(JOIN, keys)  # (`names.path_key`, in C)
    indexed = list(map(is_, map(kept.by_path.get, paths), partitions))
    if sum(indexed) != len(kept.by_path):
        raise ValueError("a file key the partitions' keys do not give")
    names = list(zip(*map(attrgetter("name"), partitions), strict=True)) or [()] * 4
    folded = [list(map(itemgetter(2), keys)), list(map(itemgetter(3), keys))]
    # A column at a time: no row of 25 figures is built per partition on the way.
    values = [list(map(attrgetter(name), partitions)) for name in _FIGURES]
    values[_STATS_AT] = _times(values[_STATS_AT])
    signatures = list(zip(*[(*key, value) for key, value in kept.signatures.items()], strict=True))
    signatures = [list(column) for column in signatures] or [[], [], []]
    return [
        [*map(_coded, names), *map(_coded, folded)],
        indexed,
        values,
        [_coded(signatures[0]), _coded(signatures[1]), signatures[2]],
    ]


def decode_kept(document: list) -> Kept:
    name_columns, indexed, values, signature_columns = document
    schemas, tables, partitions_, subs, folded, folded_subs = map(_uncoded, name_columns)
    names = list(map(PartitionName, schemas, tables, partitions_, subs))
    keys = list(map(PartitionKey, schemas, tables, folded, folded_subs))
    slots = list(map("{}#{}".format, folded, folded_subs))
    values[_STATS_AT] = _untimes(values[_STATS_AT])
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


@dataclass
class Figures:
    """A server's partition figures as its last stored poll left them
    (`metrics.store.Remembered` without its snapshot, which the header names): by
    (table id, partition key) the partition's id and `STORED` figures, their definitions
    (`Specs`), and the partitions whose rates are not zero."""

    figures: dict
    specs: dict
    moving: set | None


def encode_figures(figures: Figures, times: tuple[int, ...]) -> list:
    """`times`: the positions of the datetime figures (counting the partition id)."""
    keys = list(figures.figures)
    rows = list(figures.figures.values())
    width = len(rows[0]) if rows else 0
    columns = [list(map(itemgetter(at), rows)) for at in range(width)]  # one at a time
    for at in times:
        if columns:
            columns[at] = _times(columns[at])
    specs = [spec for members in figures.specs.values() for spec in members]
    spec_columns = list(map(list, zip(*[spec[1:] for spec in specs], strict=False)))
    spec_tables = [[table_id, len(members)] for table_id, members in figures.specs.items()]
    moving = None if figures.moving is None else list(map(list, zip(*figures.moving, strict=False)))
    return [
        [key[0] for key in keys],
        _coded(key[1] for key in keys),
        columns,
        spec_tables,
        _coded(spec[0][1] for spec in specs),
        [_coded(spec_columns[0]), _coded(spec_columns[1]), *spec_columns[2:]]
        if spec_columns
        else [],
        moving,
    ]


def decode_figures(document: list, times: tuple[int, ...]) -> Figures:
    table_ids, slots, columns, spec_tables, spec_slots, spec_columns, moving = document
    slots = _uncoded(slots)
    for at in times:
        if columns:
            columns[at] = _untimes(columns[at])
    figures = dict(
        zip(zip(table_ids, slots, strict=False), zip(*columns, strict=False), strict=False)
    )
    if len(figures) != len(table_ids):
        raise ValueError("figures and keys differ in number")
    specs, at = {}, 0
    if spec_columns:
        spec_keys = _uncoded(spec_slots)
        spec_columns = [_uncoded(spec_columns[0]), _uncoded(spec_columns[1]), *spec_columns[2:]]
        rows = list(zip(*spec_columns, strict=False))
        for table_id, count in spec_tables:
            specs[table_id] = [((table_id, spec_keys[i]), *rows[i]) for i in range(at, at + count)]
            at += count
    moving = None if moving is None else set(map(PartitionKey, *moving)) if moving else set()
    return Figures(figures, specs, moving)


def encode_tablestats(last: LastRead) -> list:
    keys = list(zip(*last.counters, strict=False)) or [(), (), (), ()]
    values = list(zip(*last.counters.values(), strict=False)) or [(), ()]
    return [list(last.row_writes), [*map(_coded, keys), *map(list, values)], last.read]


def decode_tablestats(document: list) -> LastRead:
    row_writes, columns, read = document
    keys = map(PartitionKey, *map(_uncoded, columns[:4]))
    return LastRead(
        tuple(row_writes), dict(zip(keys, zip(*columns[4:], strict=False), strict=False)), read
    )


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
    evaluated_under: tuple | None = None  # the alert rules' version (`rules_version`)


# What this process holds of each server's shared memory: part name -> (part id, the
# object that part decodes to). Set when a poll's memory is written or read; a part
# named again by a later header is then not read again. Emptied when a poll fails, as
# it may have changed those objects without writing them.
_HELD: dict[int, dict[str, tuple[str, object]]] = {}

TABLESPACES_PART, FILE_IO_PART = "tablespaces", "file_io"
TABLESPACES_KEY, FILE_IO_KEY = TABLESPACES.key, FILE_IO.key
TABLESTATS_PART, FIGURES_PART, KEPT_PART = "tablestats", "figures", "kept"


def unheld(server_pk: int) -> None:
    _HELD.pop(server_pk, None)


def _client() -> redis.Redis:
    # A short timeout: an unanswering Redis costs a poll one second, then a cold read.
    return redis.Redis.from_url(
        settings.PARTDASH_REDIS_URL, socket_timeout=1, socket_connect_timeout=1
    )


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
    """What `save` wrote: bytes sent (the parts that changed) and the parts' sizes."""

    sent: int
    parts: dict[str, int]
    seconds: float


def save(server_pk: int, memory: Memory, figures_changed: bool, times: tuple) -> Written | None:
    """Write the memory a stored poll left, as the server's current one: the parts that
    changed since this process last wrote or read them, and a header naming every part.
    Returns what was written; None when Redis could not take it (the next poll on another
    child is then cold, and this one forgets what it holds: it no longer matches)."""
    started = time.monotonic()
    held = _HELD.get(server_pk, {})
    pieces: dict[str, tuple[object, object]] = {}  # name -> (object, encoder)
    for name, key, encoder in (
        (TABLESPACES_PART, TABLESPACES_KEY, encode_tablespaces),
        (FILE_IO_PART, FILE_IO_KEY, encode_file_io),
    ):
        if key in memory.sources:
            pieces[name] = (memory.sources[key], encoder)
    if memory.tablestats is not None:
        pieces[TABLESTATS_PART] = (memory.tablestats, encode_tablestats)
    if memory.kept is not None:
        pieces[KEPT_PART] = (memory.kept, encode_kept)
    if memory.figures is not None:
        pieces[FIGURES_PART] = (memory.figures, lambda f: encode_figures(f, times))
    parts, writes, now_held, sizes = {}, {}, {}, {}
    try:
        for name, (piece, encoder) in pieces.items():
            before = held.get(name)
            if before is not None and _unchanged(name, before[1], piece, figures_changed):
                part_id = before[0]
            else:
                part_id = f"{memory.poll_id}:{name}"
                writes[part_key(server_pk, part_id)] = data = _pack(encoder(piece))
                sizes[name] = len(data)
            parts[name] = part_id
            now_held[name] = (part_id, piece)
    except Exception:  # a bug: the poll was stored, and the next one is merely cold
        log.exception("the poll memory of server %s could not be encoded", server_pk)
        unheld(server_pk)
        return None
    header = msgpack.packb(
        {
            "format": FORMAT,
            "poll": memory.poll_id,
            "snapshot": memory.snapshot_id,
            "address": list(memory.address),
            "parts": parts,
            "started": memory.started,
            "counted_at": _wall(memory.counted_at),
            "beside_failed_at": _wall(memory.beside_failed_at),
            "evaluated_under": _evaluated(memory.evaluated_under),
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
            for part_id in parts.values():  # kept: outlives the header
                if part_key(server_pk, part_id) not in writes:
                    pipe.expire(part_key(server_pk, part_id), ttl)
            pipe.set(header_key(server_pk), header, ex=ttl)
            pipe.execute()
    except redis.RedisError as exc:
        log.info("the poll memory of server %s was not shared: %s", server_pk, exc)
        unheld(server_pk)
        return None
    _HELD[server_pk] = now_held
    sent = sum(map(len, writes.values())) + len(header)
    return Written(sent, sizes, time.monotonic() - started)


def _unchanged(name: str, held: object, now: object, figures_changed: bool) -> bool:
    if name in (TABLESPACES_PART, FILE_IO_PART):
        return _same_buckets(held, now)
    if name == KEPT_PART:  # the same partitions, and none changed in place since
        return held.partitions is now.partitions and now.dirty == set()
    if name == FIGURES_PART:
        return (
            not figures_changed
            and held.figures is now.figures
            and held.specs is now.specs
            and held.moving == now.moving
        )
    return held is now


def load(server_pk: int, poll_id: str, address: tuple[str, int], times: tuple) -> Memory | None:
    """The shared memory of the server's stored poll `poll_id`, reading only the parts this
    process does not hold; None when there is none that continues that poll at that
    address (never stored, expired, evicted, flushed, an older format, unreadable)."""
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
        held = _HELD.get(server_pk, {})
        parts: dict[str, str] = header["parts"]
        wanted = [name for name, part_id in parts.items() if held.get(name, ("",))[0] != part_id]
        found = client.mget([part_key(server_pk, parts[name]) for name in wanted]) if wanted else []
    except (redis.RedisError, ValueError, KeyError, TypeError) as exc:
        log.info("the poll memory of server %s could not be read: %s", server_pk, exc)
        return None
    if any(data is None for data in found):
        return None  # a part expired or was evicted: the whole memory is cold
    for name in wanted:  # replaced: not held beside what replaces it
        held.pop(name, None)
    decoders = {
        TABLESPACES_PART: decode_tablespaces,
        FILE_IO_PART: decode_file_io,
        TABLESTATS_PART: decode_tablestats,
        KEPT_PART: decode_kept,
        FIGURES_PART: lambda document: decode_figures(document, times),
    }
    pieces = {name: held[name][1] for name in parts if name not in wanted}
    try:
        for name, data in zip(wanted, found, strict=True):
            pieces[name] = decoders[name](_unpack(data))
    except Exception as exc:  # noqa: BLE001 (a part written by another version, damaged)
        log.warning("the poll memory of server %s could not be decoded: %s", server_pk, exc)
        return None
    _HELD[server_pk] = {name: (parts[name], pieces[name]) for name in parts}
    sources = {
        key: pieces[name]
        for name, key in ((TABLESPACES_PART, TABLESPACES_KEY), (FILE_IO_PART, FILE_IO_KEY))
        if name in pieces
    }
    return Memory(
        poll_id=poll_id,
        snapshot_id=header.get("snapshot"),
        address=tuple(address),
        sources=sources,
        started=header.get("started"),
        counted_at=_monotonic(header.get("counted_at")),
        beside_failed_at=_monotonic(header.get("beside_failed_at")),
        tablestats=pieces.get(TABLESTATS_PART),
        kept=pieces.get(KEPT_PART),
        figures=pieces.get(FIGURES_PART),
        evaluated_under=_unevaluated(header.get("evaluated_under")),
    )


def _evaluated(version: tuple | None) -> list | None:
    if version is None:
        return None
    return [_when(v) if isinstance(v, datetime) else v for v in version]


def _unevaluated(version: list | None) -> tuple | None:
    """The rules version as `rules_version` returns it: (count, top id, last change)."""
    if version is None or len(version) != 3:
        return None
    count, top, last = version
    return (count, top, _datetime(last))
