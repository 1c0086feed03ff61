"""Which partitions take most of a table's activity over a recent window.

Two kinds of activity, named apart everywhere:
- *Rows changed* (logical): what the application did. MODIFIED_COUNTER deltas
  (INNODB_SYS_TABLESTATS / INNODB_TABLESTATS): rows inserted, updated or deleted, as
  they happen. InnoDB resets a partition's counter when it recalculates its statistics
  (after about 10% of its rows changed); a counter that went down counts from zero.
- *Disk reads and writes* (physical): performance_schema file counters per .ibd. A disk
  write is a page flush, minutes after the change and credited to whichever file the
  page cleaner picks (a checkpoint after a bulk load writes partitions nobody touches
  since); buffer-pool hits never show.

Write hotspots are judged on the best *write signal* the server gives (`Source`):
"rows_changed" wherever the counters can be read; where they cannot, "disk" writes stand
in (late: the flush lag), else "growth" of the estimated rows or bytes (late: it moves
only when InnoDB recalculates statistics). Read hotspots are judged on disk reads, the
only per-partition read signal. The caller gives per-partition deltas over the window
(see `partdash.health.recent`), e.g. the last `DEFAULT_WINDOW`, and which signals the
server could give (`Signals`).

The rule has two parts, judged separately for writes and for reads:
- Share: over the window, the partition's share reaches `hot_share_threshold(n)` and it
  saw at least `MIN_HOT_EVENTS` events itself (rows, or 16 KiB pages). The threshold is
  HOT_SHARE (a majority) for small tables, never below HOT_LIFT times the even share (so
  the busier half of a two-partition table is not hot at 51%), and for big tables
  HOT_FACTOR times the even share (one partition of 128 taking 1/16 of the writes is
  remarkable).
- Persistence: the window is cut into slots (a twelfth of it, `partdash.health.recent`).
  A slot is *active* when the table did any of that kind in it; the partition is *hot in
  a slot* when its share of that slot reaches the same threshold. It must be hot in
  slots adding up to the hold (`PARTDASH_HOTSPOT_HOLD_SECONDS`, whole slots, at least
  one) and in at least half of the active slots (`HOT_SLOT_FRACTION`). On disk I/O and
  growth it must be hot in at least `MIN_DISK_SLOTS` slots: one checkpoint, one
  diagnostic COUNT(*) or one statistics recalculation fills one or two. Neither asks
  for more slots than the window can have active (`Hold`): a poll adds to one slot, so
  a window polled every minute with slots of 10 s has two or three active, never 12.
All writes into the newest RANGE partition, poll after poll, are hot; a uniformly
written HASH table (share 1/n each, give or take noise) never is. A RANGE partition hot
for writes that is not where new rows go (`old_partition_writes`) is a finding of its own.
"""

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache, lru_cache
from operator import attrgetter
from typing import Literal

from partdash.health.bounds import is_catchall, read_bounds
from partdash.health.partitions import (
    RANGE_METHODS,
    PartitionState,
    merge_subpartitions,
)
from partdash.health.recent import SLOTS_PER_WINDOW, slot_seconds

# The window the dashboard computes hotspots over (a documented default for callers).
DEFAULT_WINDOW = timedelta(hours=1)
HOT_SHARE = 0.5
HOT_FACTOR = 8.0
HOT_LIFT = 1.5
# The hot partition must have seen at least this many events: with fewer, a uniform
# workload can put several of them in one partition by chance.
MIN_HOT_EVENTS = 32
# Persistence: hot in at least this fraction of the slots in which the table had that
# kind of activity (and for as long as the hold, below).
HOT_SLOT_FRACTION = 0.5
# How long a partition must stay hot (`PARTDASH_HOTSPOT_HOLD_SECONDS`'s default): one
# five-minute slot of the default hour, so a hot UPDATE loop or an insert burst is
# flagged on the first poll that sees it take most of its table's rows changed.
DEFAULT_HOLD_SECONDS = 300
# On disk writes, a checkpoint flush or a diagnostic scan fills one or two slots.
MIN_DISK_SLOTS = 3
# What counts as one event: a row changed or grown, a page of I/O or growth (InnoDB's
# default 16 KiB page).
PAGE_BYTES = 16384


@dataclass(frozen=True, slots=True)
class Hold:
    """How persistence is judged: a partition must be hot in `slots` slots (the hold),
    and no rule asks for more than `capacity`, the active slots the window is sure to
    have when the table is written at every poll (one slot a poll, at most 12)."""

    slots: int = 1
    capacity: int = SLOTS_PER_WINDOW


def hold_for(window_seconds: float, hold_seconds: float, poll_seconds: float | None = None) -> Hold:
    """The `Hold` of a window, a hold and a poll interval. A poll adds what it saw to one
    slot, so where polls are further apart than a slot, a slot stands for the time
    between polls: the hold counts in polls there, and the window holds
    `window // interval` of them. A hold longer than the window is clamped to it."""
    step = max(slot_seconds(window_seconds), poll_seconds or 0)
    capacity = max(1, min(SLOTS_PER_WINDOW, int(window_seconds // step)))
    return Hold(max(1, min(math.ceil(hold_seconds / step), capacity)), capacity)


Source = Literal["rows_changed", "disk", "growth"]
Kind = Literal["write", "read"]


@dataclass(frozen=True, slots=True)
class Signals:
    """Which activity signals the server gave: rows changed (the counters could be read)
    and disk I/O (performance_schema file counters). None: not known, judged on what the
    figures hold (a table analysed without its server's sources)."""

    rows_changed: bool | None = None
    disk: bool | None = None


# Signals not known: judged on what the figures hold.
UNKNOWN_SIGNALS = Signals()

# How late each write signal shows a change, for the pages (seconds, typical).
SIGNAL_LAG = {"rows_changed": 0, "disk": 300, "growth": None}


@dataclass(frozen=True, slots=True)
class PartitionActivity:
    """What one partition did over the window: deltas, not totals; None is unknown."""

    name: str
    write_bytes: int | None = None
    read_bytes: int | None = None
    modified: int | None = None
    rows_added: int | None = None
    bytes_added: int | None = None

    @staticmethod
    @lru_cache(maxsize=8192)
    def quiet(name: str) -> "PartitionActivity":
        """`PartitionActivity(name)`: nothing known in the window. Shared, being immutable:
        building one for each quiet partition of a big table cost a tenth of its
        analysis (measured); most tables reuse the same names (p0, p1...)."""
        return PartitionActivity(name)


# What the partitions did in each slot of the window, oldest first.
Slots = Sequence[Sequence[PartitionActivity]]


@dataclass(frozen=True, slots=True)
class HotPartition:
    """One partition hot for one kind of activity: its `share` of the table's writes (or
    reads) over the window, and in how many of the slots with such activity
    (`slots_active`) it took a hot share (`slots_hot`)."""

    partition: str
    kind: Kind
    share: float
    slots_hot: int
    slots_active: int


@dataclass(frozen=True, slots=True)
class Hotspots:
    """`source`: the write signal; `shares`: each partition's fraction of the table's
    writes on it over the window, 0.0 each when there was none; `read_shares`: the same
    for disk reads (empty where they are not known). `hot`: names flagged on either, in
    input order; `detail`: one `HotPartition` per partition and kind flagged, in input
    order, writes first."""

    source: Source
    shares: dict[str, float]
    read_shares: dict[str, float]
    hot: list[str]
    estimated: bool
    detail: tuple[HotPartition, ...] = ()


def hot_share_threshold(partitions: int) -> float:
    """The share that makes one of `partitions` hot (see the module docstring)."""
    even = 1 / partitions
    return max(min(HOT_SHARE, HOT_FACTOR * even), HOT_LIFT * even)


def shares(amounts: dict[str, float]) -> dict[str, float]:
    """Fractions of the total; negative amounts (shrinking) count as none."""
    # `max(0.0, value)` spelled out: the same value, without a call per partition.
    clamped = {
        name: value if (value := float(amount)) > 0.0 else 0.0 for name, amount in amounts.items()
    }
    total = sum(clamped.values())
    if not total:
        return dict.fromkeys(clamped, 0.0)
    return {name: amount / total for name, amount in clamped.items()}


def hot_partitions(amounts: dict[str, float], event_size: float = 1) -> list[str]:
    """Names whose share of `amounts` (over the window) passes the share rule. A single
    partition is never hot: there is nothing to compare it with."""
    if len(amounts) < 2:
        return []
    return _passing_share_rule(amounts, shares(amounts), event_size)


def _passing_share_rule(
    amounts: dict[str, float], window_shares: dict[str, float], event_size: float
) -> list[str]:
    """`hot_partitions` given the shares of `amounts` (at least two partitions)."""
    threshold = hot_share_threshold(len(amounts))
    return [
        name
        for name, share in window_shares.items()
        if share >= threshold and max(0.0, amounts[name]) / event_size >= MIN_HOT_EVENTS
    ]


def slots_needed(
    slots_active: int, source: Source = "rows_changed", hold: Hold = Hold(), kind: Kind = "write"
) -> int:
    """How many of `slots_active` slots a partition must be hot in: the hold (in whole
    slots), half of the active ones (rounded up), and on disk I/O or growth (signals
    that arrive in bursts: flushes, statistics recalculations) at least MIN_DISK_SLOTS,
    never more than the window can have active (`Hold.capacity`) but for the half."""
    needed = hold.slots
    if source != "rows_changed" or kind == "read":
        needed = max(needed, MIN_DISK_SLOTS)
    return max(1, min(needed, hold.capacity), math.ceil(slots_active * HOT_SLOT_FRACTION))


def slot_counts(slots: Sequence[dict[str, float]], partitions: int) -> tuple[dict[str, int], int]:
    """Per partition, the slots in which its share reached `hot_share_threshold`; and the
    number of active slots (the table did something). Each slot maps the partitions that
    did something in it to their amounts (absent ones did nothing)."""
    threshold = hot_share_threshold(partitions)
    hot: dict[str, int] = {}
    active = 0
    for amounts in slots:
        clamped = {name: max(0.0, amount) for name, amount in amounts.items()}
        total = sum(clamped.values())
        if total <= 0:
            continue
        active += 1
        for name, amount in clamped.items():
            if amount / total >= threshold:
                hot[name] = hot.get(name, 0) + 1
    return hot, active


def persistent_hot(
    kind: Kind,
    amounts: dict[str, float],
    slots_of: Callable[[], Slots],
    *,
    field: str,
    event_size: float = 1,
    window_shares: dict[str, float] | None = None,
    source: Source = "rows_changed",
    hold: Hold = Hold(),
) -> list[HotPartition]:
    """The partitions hot for `kind` by both rules (see the module docstring), in the
    order of `amounts` (the window's sums of `field`, every partition of the table).
    The slots are only asked for when a partition passes the share rule (rarely).
    `window_shares`: `shares(amounts)` when the caller has them already."""
    if window_shares is None or len(amounts) < 2:
        candidates = hot_partitions(amounts, event_size)
    else:
        candidates = _passing_share_rule(amounts, window_shares, event_size)
    if not candidates:
        return []
    hot_in, active = slot_counts(_slot_amounts(slots_of(), field), len(amounts))
    if window_shares is None:
        window_shares = shares(amounts)
    return [
        HotPartition(name, kind, window_shares[name], hot_in.get(name, 0), active)
        for name in candidates
        if hot_in.get(name, 0) >= slots_needed(active, source, hold, kind)
    ]


# The window sums each write signal is judged on, best first; growth is rows grown,
# else bytes grown (where row estimates are missing).
_WRITE_FIELDS: dict[Source, tuple[str, ...]] = {
    "rows_changed": ("modified",),
    "disk": ("write_bytes", "read_bytes"),
    "growth": ("rows_added", "bytes_added"),
}


def _knows(activity: Sequence[PartitionActivity], field: str) -> bool:
    return any(getattr(a, field) is not None for a in activity)


def choose_source(
    activity: Sequence[PartitionActivity], signals: Signals = UNKNOWN_SIGNALS
) -> Source | None:
    """The write signal hotspots are judged on. Rows changed wherever the server gives
    them, even when none changed in the window: disk writes then are flushes, not the
    application. Without them, disk writes where the server gives them, else growth.
    Where the signals are not known, the best with a known value for any partition."""
    if signals.rows_changed:
        return "rows_changed"
    if signals.rows_changed is False and signals.disk is not None:
        return "disk" if signals.disk else "growth"
    for source, names in _WRITE_FIELDS.items():
        if source == "rows_changed" and signals.rows_changed is False:
            continue
        if source == "disk" and signals.disk is False:
            continue
        if any(_knows(activity, f) for f in names):
            return source
    return None


def write_field(source: Source, activity: Sequence[PartitionActivity]) -> str:
    """The window sum a write signal is judged on (growth: rows where known)."""
    if source == "growth":
        return "rows_added" if _knows(activity, "rows_added") else "bytes_added"
    return _WRITE_FIELDS[source][0]


def _amounts(activity: Iterable[PartitionActivity], field: str) -> dict[str, float]:
    figure = attrgetter(field)
    return {a.name: float(figure(a) or 0) for a in activity}


def _slot_amounts(slots: Iterable[Iterable[PartitionActivity]], field: str) -> list[dict]:
    return [{a.name: float(getattr(a, field) or 0) for a in slot} for slot in slots]


def find_hotspots(
    activity: Sequence[PartitionActivity],
    slots: Slots | Callable[[], Slots] = (),
    signals: Signals = UNKNOWN_SIGNALS,
    hold: Hold = Hold(),
) -> Hotspots | None:
    """Shares and hot partitions, writes on the best write signal and reads on disk
    reads; None when no signal knows anything (the API shows no hotspots then).
    `activity`: every partition's sums over the window; `slots`: what the partitions did
    in each slot of the window (only those that did something need be listed), or a
    function returning them, called only when a partition passes the share rule
    (building them for a busy HASH table costs more than the rest of its analysis).
    Without slots nothing is persistent, so nothing is hot: the shares alone are what is
    shown. `hold`: how many slots a partition must stay hot in (see
    `slots_needed`)."""
    source = choose_source(activity, signals)
    reads_known = signals.disk is not False and _knows(activity, "read_bytes")
    if source is None and not reads_known:
        return None
    source = source or "disk"
    field = write_field(source, activity)
    size = PAGE_BYTES if field in ("write_bytes", "bytes_added") else 1
    writes = _amounts(activity, field)
    reads = _amounts(activity, "read_bytes") if reads_known else {}
    slots_of = cache(slots) if callable(slots) else lambda: slots
    # Each share computed once: for the rule and for the result.
    write_shares, read_shares = shares(writes), shares(reads)
    detail = persistent_hot(
        "write",
        writes,
        slots_of,
        field=field,
        event_size=size,
        window_shares=write_shares,
        source=source,
        hold=hold,
    )
    if reads:
        detail += persistent_hot(
            "read",
            reads,
            slots_of,
            field="read_bytes",
            event_size=PAGE_BYTES,
            window_shares=read_shares,
            source="disk",
            hold=hold,
        )
    if detail:  # rarely: most tables have no hot partition
        order = {a.name: position for position, a in enumerate(activity)}
        detail.sort(key=lambda d: (order[d.partition], d.kind != "write"))
    flagged = {d.partition for d in detail}
    return Hotspots(
        source=source,
        shares=write_shares,
        read_shares=read_shares,
        hot=[a.name for a in activity if a.name in flagged] if flagged else [],
        estimated=source == "growth",
        detail=tuple(detail),
    )


def written_partitions(
    activity: Iterable[PartitionActivity], source: Source | None = None
) -> list[str]:
    """Partitions the application wrote in the window: the working set's members. Disk
    writes count only where they are the write signal (without rows changed): a flush
    of pages dirtied long ago is not the application writing."""
    disk = source in (None, "disk")
    return [
        a.name
        for a in activity
        if (disk and (a.write_bytes or 0) > 0)
        or (a.modified or 0) > 0
        or (a.rows_added or 0) > 0
        or (a.bytes_added or 0) > 0
    ]


# -- writes into an old RANGE partition ----------------------------------------------------

# How far from now a time partition's span may lie and still be where new rows go: the
# server's clock may run in any zone (UTC-12 to UTC+14) and the window holds an hour of
# writes from before a rollover. A month-old day is far outside it; a day-old hour is too.
RECEIVING_GRACE = timedelta(days=1)


def _instant(bound: date | datetime) -> datetime:
    """A time bound as an aware UTC datetime (a date at midnight; a naive datetime, UTC
    for UNIX_TIMESTAMP and the server's clock otherwise, read as UTC)."""
    if not isinstance(bound, datetime):
        bound = datetime(bound.year, bound.month, bound.day)
    return bound if bound.tzinfo else bound.replace(tzinfo=UTC)


def _receiving_by_time(names: list[str], bounds: list, now: datetime) -> set[str]:
    """The partitions whose span (from the bound before to their own; the catch-all's
    has no end) comes within RECEIVING_GRACE of now."""
    early, late = now - RECEIVING_GRACE, now + RECEIVING_GRACE
    receiving = set()
    for i, name in enumerate(names):
        lower = _instant(bounds[i - 1]) if i > 0 else None
        upper = _instant(bounds[i]) if i < len(bounds) else None
        if (lower is None or lower <= late) and (upper is None or upper > early):
            receiving.add(name)
    return receiving


def _receiving_by_rows(partitions: Sequence[PartitionState]) -> set[str]:
    """The newest partition holding rows, and any after it whose rows are unknown (it may
    be the newest): a partition is only called old where the rows say so."""
    receiving = set()
    for partition in reversed(partitions):
        if partition.rows != 0:
            receiving.add(partition.name.lower())
        if partition.rows:
            break
    return receiving


def old_partition_writes(
    hotspots: Hotspots | None,
    method: str,
    expression: str | None,
    partitions: Sequence[PartitionState],
    now: datetime,
) -> list[HotPartition]:
    """The write hotspots of a RANGE table that are not where its new rows go: on time
    bounds, partitions whose span is not within RECEIVING_GRACE of now (the catch-all
    counts once the last bound is reached); on ids, any but the newest holding rows.
    Writes taken by those are old rows updated, or timestamps written wrong. Empty for
    other methods, where the newest partition takes the writes, or no hotspot."""
    if hotspots is None or (method or "").upper().strip() not in RANGE_METHODS:
        return []
    writes = [hot for hot in hotspots.detail if hot.kind == "write"]
    if not writes:
        return []
    merged = merge_subpartitions(partitions)
    bounded = [p for p in merged if not is_catchall(p.description)]
    bounds, _ = read_bounds(expression, [p.description for p in bounded], [p.name for p in bounded])
    names = [p.name.lower() for p in bounded] + [
        p.name.lower() for p in merged if is_catchall(p.description)
    ]
    if bounds and all(isinstance(b, date) for b in bounds):
        receiving = _receiving_by_time(names, bounds, now)
    else:
        receiving = _receiving_by_rows(merged)
    return [hot for hot in writes if hot.partition.split("#")[0].lower() not in receiving]
