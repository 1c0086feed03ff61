"""Which partitions take most of a table's activity over a recent window.

Sources, best first:
- "io": performance_schema file counters (write and read bytes per .ibd). Physical I/O
  only: buffer-pool hits never show, and writes are mostly page flushes.
- "modified": MODIFIED_COUNTER deltas (rows inserted, updated or deleted; live, but only
  for partitions in InnoDB's dictionary cache). Preferred over row growth because the
  row count only moves when InnoDB recalculates statistics (about every 10% of change)
  and misses updates and deletes.
- "rows": growth of the estimated row count.
- "size": growth of data plus index bytes.
The caller gives per-partition deltas over the window (see `partdash.health.recent`),
e.g. the last `DEFAULT_WINDOW`.

The rule: a partition is hot when its share reaches `hot_share_threshold(n)` and it saw
at least `MIN_HOT_EVENTS` events itself. The threshold is HOT_SHARE (a majority) for
small tables, never below HOT_LIFT times the even share (so the busier half of a
two-partition table is not hot at 51%), and for big tables HOT_FACTOR times the even
share (one partition of 128 taking 1/16 of the writes is remarkable). All writes into
the newest RANGE partition (share 1.0) are always hot; a uniformly written HASH table
(share 1/n each, give or take noise) never is.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

# The window the dashboard computes hotspots over (a documented default for callers).
DEFAULT_WINDOW = timedelta(hours=1)
HOT_SHARE = 0.5
HOT_FACTOR = 8.0
HOT_LIFT = 1.5
# The hot partition must have seen at least this many events: with fewer, a uniform
# workload can put several of them in one partition by chance.
MIN_HOT_EVENTS = 32
# What counts as one event: a page of I/O or growth (InnoDB's default 16 KiB page), a row.
PAGE_BYTES = 16384
EVENT_SIZE = {"io": PAGE_BYTES, "modified": 1, "rows": 1, "size": PAGE_BYTES}

Source = Literal["io", "modified", "rows", "size"]


@dataclass(frozen=True, slots=True)
class PartitionActivity:
    """What one partition did over the window: deltas, not totals; None is unknown."""

    name: str
    write_bytes: int | None = None
    read_bytes: int | None = None
    modified: int | None = None
    rows_added: int | None = None
    bytes_added: int | None = None


@dataclass(frozen=True, slots=True)
class Hotspots:
    """`shares`: each partition's fraction of the table's writes (or changes, or growth)
    over the window, 0.0 each when there was none; `read_shares`: the same for reads
    (the "io" source only). `hot`: names flagged on either, in input order."""

    source: Source
    shares: dict[str, float]
    read_shares: dict[str, float]
    hot: list[str]
    estimated: bool


def hot_share_threshold(partitions: int) -> float:
    """The share that makes one of `partitions` hot (see the module docstring)."""
    even = 1 / partitions
    return max(min(HOT_SHARE, HOT_FACTOR * even), HOT_LIFT * even)


def shares(amounts: dict[str, float]) -> dict[str, float]:
    """Fractions of the total; negative amounts (shrinking) count as none."""
    clamped = {name: max(0.0, float(amount)) for name, amount in amounts.items()}
    total = sum(clamped.values())
    return {name: (amount / total if total else 0.0) for name, amount in clamped.items()}


def hot_partitions(amounts: dict[str, float], event_size: float = 1) -> list[str]:
    """Names whose share of `amounts` makes them hot. A single partition is never hot:
    there is nothing to compare it with."""
    if len(amounts) < 2:
        return []
    threshold = hot_share_threshold(len(amounts))
    return [
        name
        for name, share in shares(amounts).items()
        if share >= threshold and max(0.0, amounts[name]) / event_size >= MIN_HOT_EVENTS
    ]


_FIELDS: dict[Source, str] = {
    "io": "write_bytes",
    "modified": "modified",
    "rows": "rows_added",
    "size": "bytes_added",
}


def choose_source(activity: Sequence[PartitionActivity]) -> Source | None:
    """The best source with a known value for any partition (see the module docstring)."""
    for source, field in _FIELDS.items():
        others = ("read_bytes",) if source == "io" else ()
        if any(getattr(a, f) is not None for a in activity for f in (field, *others)):
            return source
    return None


def _amounts(activity: Iterable[PartitionActivity], field: str) -> dict[str, float]:
    return {a.name: float(getattr(a, field) or 0) for a in activity}


def find_hotspots(activity: Sequence[PartitionActivity]) -> Hotspots | None:
    """Shares and hot partitions from the best available source; None when no source
    knows anything (the API shows no hotspots then)."""
    source = choose_source(activity)
    if source is None:
        return None
    size = EVENT_SIZE[source]
    writes = _amounts(activity, _FIELDS[source])
    reads = _amounts(activity, "read_bytes") if source == "io" else {}
    flagged = set(hot_partitions(writes, size)) | set(hot_partitions(reads, size))
    return Hotspots(
        source=source,
        shares=shares(writes),
        read_shares=shares(reads),
        hot=[a.name for a in activity if a.name in flagged],
        estimated=source != "io",
    )


def written_partitions(activity: Iterable[PartitionActivity]) -> list[str]:
    """Partitions with any sign of writes in the window: the working set's members."""
    return [
        a.name
        for a in activity
        if any((v or 0) > 0 for v in (a.write_bytes, a.modified, a.rows_added, a.bytes_added))
    ]
