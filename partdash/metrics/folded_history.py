"""A table's history bounded per answer, not per partition (issue 37, point 6).

A table may hold 8,192 partitions (MariaDB's maximum, chosen by the monitored server):
answered partition by partition, its day of 5-minute buckets was 2.4M figures, 47.6 s
and about 1 GB for one viewer. An answer now names at most MAX_SERIES partitions, the
busiest by the metric over the window (or those the request names), and sums the rest
into one series, `other`, its last; points times series stay within MAX_CELLS.

Two passes over the window: the first (`tally`) streams every partition's figures and
keeps only each point's table total and each partition's score, the second reads the
chosen partitions alone (`history.history_points`), and `other` is the total less them.
"""

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from partdash.metrics import history
from partdash.metrics.history import (
    LEVEL_METRICS,
    MAX_RAW_POLLS,
    POLL,
    RATE_METRICS,
    Answer,
    Series,
    StoredBucket,
    history_points,
    partition_label,
    rollup_rows,
    window_buckets,
)
from partdash.metrics.models import Partition, PartitionedTable
from partdash.metrics.rollups import DELTA_OF, LADDER, latest_before, latest_before_in_table

MAX_SERIES = 24  # partitions named in one answer, at most
MAX_CELLS = 25_000  # points times series (`other` included) in one answer, at most
OTHER = "other"
LABEL_CHARS = 64 + 3 + 64  # `partition / subpartition`, MySQL's names at their longest


# One wide table's answer at a time per process: each holds its thousands of partitions and
# streams rollup rows of as many figures (one of 8,192 partitions cost +22 MB of peak RSS,
# 8 at once +208 MB), and on a GIL the others would only wait for the CPU anyway.
WIDE_ANSWERS = threading.BoundedSemaphore(1)


class HistoryRequestError(ValueError):
    """A `partitions=` the table cannot answer: the one line says why."""


def wanted_partitions(partitions: list[Partition], values: list[str]) -> list[Partition]:
    """The live partitions `values` name (labels as the answer gives them, `p / sp` for a
    subpartition; each value one label, or several separated by commas), in the order
    named, each once; unknown names or more than MAX_SERIES raise HistoryRequestError."""
    if len(values) > MAX_SERIES or sum(map(len, values)) > MAX_SERIES * LABEL_CHARS:
        raise HistoryRequestError(f"at most {MAX_SERIES} partitions")
    by_label = {partition_label(p): p for p in partitions}
    names = [
        name for value in values for name in ([value] if value in by_label else value.split(","))
    ]
    named = list(dict.fromkeys(name.strip() for name in names if name.strip()))
    if len(named) > MAX_SERIES:
        raise HistoryRequestError(f"at most {MAX_SERIES} partitions, not {len(named)}")
    unknown = [name for name in named if name not in by_label]
    if unknown:
        shown = ", ".join(name[:64] for name in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise HistoryRequestError(f"no such partition in this table: {shown}{more}")
    return [by_label[name] for name in named]


def folded_history(
    table: PartitionedTable,
    metric: str,
    since: datetime,
    until: datetime | None = None,
    names: list[str] | None = None,
) -> dict:
    """`metric` from `since` to `until` (default now): every partition while they fit
    the caps, else the busiest (or those `names` names) and `other`."""
    live = table.partitions.live()
    if live.count() <= MAX_SERIES:
        return _folded(Series(table, list(live), metric, since, until), names)
    # Its 8,192 partitions' rows alone are about 20 MB of model instances: loaded inside.
    with WIDE_ANSWERS:
        return _folded(Series(table, list(live), metric, since, until), names)


def _folded(series: Series, names: list[str] | None) -> dict:
    """`series` of every live partition of its table, folded to fit the caps."""
    table, partitions, metric = series.table, series.partitions, series.metric
    since, until = series.since, series.until
    wanted = wanted_partitions(partitions, names) if names else None
    width = history.width_for(table, since, until, len(partitions))
    answer = Answer()
    if wanted is None and len(partitions) <= MAX_SERIES:
        points = list(history_points(answer, series, width))
        if len(points) * len(partitions) <= MAX_CELLS:
            return _shape(answer, width, metric=metric, shown=partitions, points=points, folded=0)
        totals = [(point[0], _sum(point[1:])) for point in points]
        scores = _row_scores(points, partitions, metric)
        read_after = _read_after(points, partitions, since)
    else:
        totals, scores, read_after = tally(answer, series, width)
    if metric in LEVEL_METRICS and until is None:
        scores = {p.pk: getattr(p, metric) or 0 for p in partitions}
    named = max(0, min(MAX_SERIES, MAX_CELLS // max(len(totals), 1) - 1))
    shown = (wanted or busiest(partitions, scores))[:named]
    folded = len(partitions) - len(shown)
    points = list(history_points(answer, replace(series, partitions=shown), width))
    other_after = _other_read_after(metric, partitions, shown, read_after, since)
    merged = with_other(
        points, totals, shown=len(shown), metric=metric, fold=folded > 0, other_after=other_after
    )
    return _shape(answer, width, metric=metric, shown=shown, points=merged, folded=folded)


def _shape(answer: Answer, width: str, *, metric: str, shown, points, folded: int) -> dict:
    """The answer: the `shown` partitions' points at `width`, and `folded` more summed."""
    names = [partition_label(p) for p in shown] + ([OTHER] if folded else [])
    return {
        "metric": metric,
        "resolution": width,
        "complete": answer.complete,
        "partitions": names,
        "points": points,
        "other": folded,
        "series_cap": MAX_SERIES,
        "cell_cap": MAX_CELLS,
    }


def busiest(partitions: list[Partition], scores: dict[int, float]) -> list[Partition]:
    """The partitions busiest first (highest score; ties and those with none in the
    table's order)."""
    order = {p.pk: i for i, p in enumerate(partitions)}
    return sorted(partitions, key=lambda p: (-(scores.get(p.pk) or 0), order[p.pk]))


def _other_read_after(metric: str, partitions, shown, read_after: dict, since: datetime):
    """From when `other` has a figure: after the earliest moment any folded partition
    has one (a rate needs two readings; null before, never a 0 it was not measured at).
    A level's `other` always has one (the total carries what is known)."""
    if metric in LEVEL_METRICS:
        return since - timedelta(days=1)
    named = {p.pk for p in shown}
    moments = [read_after[p.pk] for p in partitions if p.pk not in named and p.pk in read_after]
    return min(moments, default=None)


def _read_after(points: list[list], partitions, since: datetime) -> dict[int, datetime]:
    """Each partition's moment after which its points have a figure (the point before
    its first; before `since` when its first point has one)."""
    found: dict[int, datetime] = {}
    previous = since - timedelta(microseconds=1)
    for point in points:
        for p, value in zip(partitions, point[1:], strict=True):
            if value is not None and p.pk not in found:
                found[p.pk] = previous
        previous = datetime.fromisoformat(point[0])
    return found


def _sum(values: Iterable) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _row_scores(points: list[list], partitions, metric: str) -> dict[int, float]:
    """A rate's busiest: the highest sum of its points' rates (the mean rate over the
    window, times the points)."""
    scores: dict[int, float] = {}
    if metric in RATE_METRICS:
        for point in points:
            for p, value in zip(partitions, point[1:], strict=True):
                if value is not None:
                    scores[p.pk] = scores.get(p.pk, 0.0) + value
    return scores


def with_other(
    points: list[list],
    totals: list[tuple],
    *,
    shown: int,
    metric: str,
    fold: bool,
    other_after: datetime | None,
) -> list[list]:
    """The chosen partitions' points at the first pass's times (a level carries its last
    values to a time where only folded partitions changed), and where `fold`, `other`:
    the total less the chosen partitions' known values, null until after `other_after`
    (None: never), while no folded partition has a figure."""
    by_time = {point[0]: point[1:] for point in points}
    carried: list = [None] * shown
    merged = []
    for stamp, total in totals:
        values = by_time.get(stamp)
        if values is None:
            values = carried if metric in LEVEL_METRICS else [None] * shown
        carried = values
        if not fold:
            merged.append([stamp, *values])
            continue
        at = datetime.fromisoformat(stamp)
        known = total is not None and other_after is not None and at > other_after
        rest = total - sum(v for v in values if v is not None) if known else None
        merged.append([stamp, *values, rest])
    return merged


# -- the first pass: each point's total and each partition's score ------------------------


def tally(
    answer: Answer, series: Series, width: str, tail: bool = False
) -> tuple[list[tuple], dict[int, float], dict[int, datetime]]:
    """(time, table total) per point, as `history_points` would give them for all of
    the series' partitions; each partition's score (a rate's sum, a level's value at the window's
    end) and the moment after which it has figures; never more than one bucket's
    figures held."""
    seen = Seen()
    totals = _tally(answer, series, width, seen, tail)
    return totals, seen.scores, seen.read_after


@dataclass
class Seen:
    """What the first pass learns of each partition besides the totals."""

    scores: dict[int, float] = field(default_factory=dict)
    read_after: dict[int, datetime] = field(default_factory=dict)

    def read(self, found: dict[int, datetime]) -> None:
        for pk, moment in found.items():
            if pk not in self.read_after or moment < self.read_after[pk]:
                self.read_after[pk] = moment


def _tally(answer: Answer, series: Series, width: str, seen: Seen, tail: bool) -> list:
    table, partitions, metric = series.table, series.partitions, series.metric
    since, until = series.since, series.until
    if width == POLL:
        if tail and history.polls_in(table, since, until) > 2 * MAX_RAW_POLLS:
            answer.complete = False
            return []
        # A window read poll by poll holds few samples (`history.width_for`).
        points = list(history_points(answer, series, POLL))
        for pk, score in _row_scores(points, partitions, metric).items():
            seen.scores[pk] = seen.scores.get(pk, 0.0) + score
        if metric in LEVEL_METRICS and points:  # the values at its last poll, carried
            seen.scores.update(
                (p.pk, v or 0) for p, v in zip(partitions, points[-1][1:], strict=True)
            )
        seen.read(_read_after(points, partitions, since))
        return [(point[0], _sum(point[1:])) for point in points]
    buckets = window_buckets(answer, series, width)
    if metric in RATE_METRICS:
        totals = _rate_totals(series, buckets, seen)
    else:
        totals = _level_totals(series, buckets, seen)
    last_taken = buckets[-1].taken_at if buckets else None
    if until is not None and last_taken is not None and last_taken >= until:
        return totals
    finer = LADDER[LADDER.index(width) - 1] if width != LADDER[0] else POLL
    rest = _tally(answer, replace(series, since=last_taken or since), finer, seen, True)
    if not totals:
        return rest
    last = datetime.fromisoformat(totals[-1][0])
    return totals + [t for t in rest if datetime.fromisoformat(t[0]) > last]


def _rate_totals(series: Series, buckets: list[StoredBucket], seen: Seen) -> list[tuple]:
    """Per bucket the sum of the partitions' rates (0 where none moved, null while none
    has a reading); each partition's score gains its rate, and its figures start after
    its first reading (as `history.bucket_history`'s)."""
    if not buckets:
        return []
    table, partitions = series.table, series.partitions
    counter = RATE_METRICS[series.metric]
    live = {p.pk for p in partitions}
    read = any(getattr(p, counter) is not None for p in partitions)
    sums: list = [0.0 if read else None] * len(buckets)
    first: dict[int, tuple[int, bool]] = {}  # its first bucket with a reading, a delta in it
    for i, ids, deltas, lasts in rollup_rows(table, buckets, (DELTA_OF[counter], counter)):
        seconds = buckets[i].seconds
        for n, pk in enumerate(ids if lasts else ()):
            if lasts[n] is not None:  # rows come in any order: keep the earliest
                read = True
                sums[i] = sums[i] or 0.0
                if pk not in first or i < first[pk][0]:
                    first[pk] = (i, bool(deltas) and deltas[n] is not None)
        if not deltas or not seconds:
            continue
        total = 0.0
        for pk, delta in zip(ids, deltas, strict=True):
            if delta is not None and pk in live:
                rate = delta / seconds
                seen.scores[pk] = seen.scores.get(pk, 0.0) + rate
                total += rate
        sums[i] = total
    seen.read(_rates_after(partitions, counter, buckets, first))
    return [
        (bucket.taken_at.isoformat(), total) for bucket, total in zip(buckets, sums, strict=True)
    ]


def _rates_after(partitions, counter: str, buckets, first: dict) -> dict[int, datetime]:
    """After which moment each partition has a rate: from the start where its first
    bucket with a reading has a delta (it was read before), or where one not read in the
    window has a reading now; else after that first bucket."""
    from_start = buckets[0].taken_at - timedelta(microseconds=1)
    found = {}
    for p in partitions:
        if p.pk in first:
            i, had_delta = first[p.pk]
            found[p.pk] = from_start if had_delta else buckets[i].taken_at
        elif getattr(p, counter) is not None:
            found[p.pk] = from_start
    return found


def _level_totals(series: Series, buckets: list[StoredBucket], seen: Seen) -> list:
    """Per bucket the sum of the partitions' levels at its last poll, with a point at
    `since` when a value from before carries in (as `history.bucket_history`). Streamed:
    each partition's value before the window is looked up once the window showed which
    changed in it, and added to the totals of the buckets before it first changed."""
    if not buckets:
        return []
    table, partitions, metric = series.table, series.partitions, series.metric
    since, until = series.since, series.until
    live = {p.pk for p in partitions}
    latest: dict[int, int] = {}
    first_seen: dict[int, int] = {}
    seen_sum, sums = 0, [0] * len(buckets)
    filled = -1
    for i, ids, levels in rollup_rows(table, buckets, (metric,), ordered=True):
        for gap in range(filled + 1, i):
            sums[gap] = seen_sum
        for pk, value in zip(ids, levels or (), strict=False):
            if value is None or pk not in live:
                continue
            if pk not in latest:
                first_seen[pk] = i
            seen_sum += value - latest.get(pk, 0)
            latest[pk] = value
        sums[i], filled = seen_sum, i
    for gap in range(filled + 1, len(buckets)):
        sums[gap] = seen_sum
    changed = set(first_seen)
    if until is None:
        changed |= history.sampled_after(table, partitions, metric, buckets[-1].taken_at)
    look_up = live if until is not None else changed
    before_poll = history.first_poll_at_or_after(table, buckets[0].start)
    if until is not None:  # every partition's: one query, not a batch of ids
        found = latest_before_in_table(table.pk, (metric,), before_poll)
    else:
        found = latest_before(look_up, (metric,), before_poll) if look_up else {}
    before = {pk: found.get(pk, {}).get(metric) for pk in look_up}
    # A level's busiest are the largest at the window's end.
    seen.scores.update((p.pk, getattr(p, metric) or 0) for p in partitions)
    seen.scores.update((pk, v or 0) for pk, v in before.items())
    seen.scores.update(latest)
    base = [getattr(p, metric) for p in partitions if p.pk not in look_up]
    known = any(v is not None for v in base) or any(v is not None for v in before.values())
    base_sum = sum(v for v in base if v is not None)
    # Until a partition first changes in the window, its value before the window counts.
    waiting = sum(v for v in before.values() if v is not None)
    leaving = [0] * len(buckets)
    for pk, i in first_seen.items():
        leaving[i] += before.get(pk) or 0
    totals: list[tuple] = [(since.isoformat(), base_sum + waiting)] if known else []
    for i, bucket in enumerate(buckets):
        waiting -= leaving[i]
        totals.append((bucket.taken_at.isoformat(), base_sum + waiting + sums[i]))
    return totals
