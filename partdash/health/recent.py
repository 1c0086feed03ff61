"""A partition's recent activity, kept as what each poll saw it do, summed into slots.

Each poll that finds a partition changed adds its deltas since the previous poll (see
`poll_deltas`) to the slot the poll falls in. A window (default one hour) is the slots
that overlap it, so the baseline of a partition quiet for longer than the window is
still its last known value: a burst after a long quiet spell counts in full. Slots are
a twelfth of the window (five minutes by default), so a partition keeps at most 13 of
them and what one remembers stays bounded however often it is written.

An entry is `[slot start (epoch s), *deltas]` in `FIGURES` order, trailing zeros left
off; a delta that is unknown (a source that could not be read) counts as zero. Stored
as text, entries joined by `;` and numbers by `,` (`dumps`/`loads`): a partition written
once in the window costs about 16 bytes.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from partdash.health.counters import counter_delta, level_change, rows_changed

# The deltas an entry holds, in order.
FIGURES = (
    "write_bytes",
    "read_bytes",
    "modified",
    "rows_added",
    "bytes_added",
    "compress_ops",
    "compress_ops_ok",
)
SLOTS_PER_WINDOW = 12

Entry = list[int]


@dataclass(frozen=True, slots=True)
class Reading:
    """The figures of one partition at one poll that its activity is derived from."""

    write_bytes: int | None = None
    read_bytes: int | None = None
    modified_counter: int | None = None
    rows: int | None = None
    data_bytes: int | None = None
    index_bytes: int | None = None
    compress_ops: int | None = None
    compress_ops_ok: int | None = None


def slot_seconds(window_seconds: float) -> int:
    return max(1, int(window_seconds // SLOTS_PER_WINDOW))


def _size(reading: Reading) -> int | None:
    if reading.data_bytes is None and reading.index_bytes is None:
        return None
    return (reading.data_bytes or 0) + (reading.index_bytes or 0)


def changed_rows(new: Reading, old: Reading) -> int | None:
    """Rows the application changed between two polls: the counter's delta
    (`counters.rows_changed`). Where the counter was reset (inserts reset it every tenth
    of a partition's rows, so a burst shows as its last tenth) and the row estimate grew
    by more, the growth: InnoDB recalculates the rows at each reset. Growth alone is not
    a change (ANALYZE TABLE, a reload into the dictionary cache, or a recalculation of
    rows inserted long ago moves it, leaving the counter at 0)."""
    counted = rows_changed(new.modified_counter, old.modified_counter, old.rows)
    new_count, old_count = new.modified_counter, old.modified_counter
    if counted is None or new_count is None or old_count is None or new_count >= old_count:
        return counted
    if not new.modified_counter:  # ANALYZE, or reloaded into the cache: nothing changed
        return counted
    return max(counted, level_change(old.rows, new.rows) or 0)


def poll_deltas(new: Reading, old: Reading) -> list[int]:
    """What a partition did between two polls, in `FIGURES` order (0 where unknown).
    Counters that went down were reset; rows and bytes may shrink (negative)."""
    return [
        counter_delta(new.write_bytes, old.write_bytes) or 0,
        counter_delta(new.read_bytes, old.read_bytes) or 0,
        changed_rows(new, old) or 0,
        level_change(old.rows, new.rows) or 0,
        level_change(_size(old), _size(new)) or 0,
        counter_delta(new.compress_ops, old.compress_ops) or 0,
        counter_delta(new.compress_ops_ok, old.compress_ops_ok) or 0,
    ]


def in_window(start: int, now: float, window_seconds: float) -> bool:
    """Whether the slot starting at `start` overlaps the window ending at `now`."""
    return start + slot_seconds(window_seconds) > now - window_seconds


def record(entries: Sequence[Entry], deltas: list[int], now: float, window_seconds: float):
    """`entries` with `deltas` (seen by a poll at `now`, epoch s) added to its slot, and
    the slots that left the window dropped. Returns the same entries when all deltas are
    zero and none dropped."""
    kept = [list(e) for e in entries if in_window(e[0], now, window_seconds)]
    if not any(deltas):
        return kept if len(kept) != len(entries) else list(entries)
    length = slot_seconds(window_seconds)
    start = int(now // length * length)
    deltas = _padded(deltas)
    if kept and kept[-1][0] == start:
        deltas = [a + b for a, b in zip(_padded(kept.pop()[1:]), deltas, strict=True)]
    while deltas and deltas[-1] == 0:
        deltas = deltas[:-1]
    kept.append([start, *deltas])
    return kept


def _padded(values: Sequence[int]) -> list[int]:
    return [*values, *[0] * (len(FIGURES) - len(values))]


def window_sums(
    entries: Sequence[Entry], now: float, window_seconds: float
) -> dict[str, int | None]:
    """Each figure summed over the slots in the window; None where the sum is zero (no
    sign of that activity), so the hotspot rules fall back to the next source."""
    sums = [0] * len(FIGURES)
    for entry in entries:
        if in_window(entry[0], now, window_seconds):
            for position, value in enumerate(entry[1:]):
                sums[position] += value
    return {name: (value or None) for name, value in zip(FIGURES, sums, strict=True)}


def window_slots(
    entries: Sequence[Entry], now: float, window_seconds: float
) -> list[tuple[int, dict[str, int]]]:
    """The slots in the window, each as (slot start, its figures by name): what the
    hotspot rules judge persistence on (`partdash.health.hotspots`)."""
    return [
        (entry[0], dict(zip(FIGURES, _padded(entry[1:]), strict=True)))
        for entry in entries
        if in_window(entry[0], now, window_seconds)
    ]


def window_ends(entries: Sequence[Entry], now: float, window_seconds: float) -> int | None:
    """When the oldest slot still in the window leaves it (the sums change then even if
    nothing else happens); None when no slot is in the window."""
    length = slot_seconds(window_seconds)
    starts = [e[0] for e in entries if in_window(e[0], now, window_seconds)]
    return math.ceil(min(starts) + length + window_seconds) if starts else None


def dumps(entries: Sequence[Entry]) -> str | None:
    """Entries as stored (None for none)."""
    return ";".join(",".join(map(str, e)) for e in entries) or None


def loads(text: str | None) -> list[Entry]:
    return [[int(n) for n in part.split(",")] for part in text.split(";")] if text else []
