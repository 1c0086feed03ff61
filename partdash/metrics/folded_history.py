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

from collections.abc import Iterable
from datetime import datetime, timedelta

from partdash.metrics import history
from partdash.metrics.history import (
    LEVEL_METRICS,
    MAX_RAW_POLLS,
    POLL,
    RATE_METRICS,
    Answer,
    history_points,
    partition_label,
    rollup_rows,
    window_buckets,
)
from partdash.metrics.models import Partition, PartitionedTable
from partdash.metrics.rollups import DELTA_OF, LADDER, latest_before

MAX_SERIES = 24  # partitions named in one answer, at most
MAX_CELLS = 25_000  # points times series (`other` included) in one answer, at most
OTHER = "other"
LABEL_CHARS = 64 + 3 + 64  # `partition / subpartition`, MySQL's names at their longest


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
    partitions = list(table.partitions.live())
    wanted = wanted_partitions(partitions, names) if names else None
    width = history.width_for(table, since, until, len(partitions))
    answer = Answer()
    if wanted is None and len(partitions) <= MAX_SERIES:
        points = list(history_points(answer, table, partitions, metric, width, since, until))
        if len(points) * len(partitions) <= MAX_CELLS:
            return _shape(answer, metric, width, partitions, points, 0)
        totals = [(point[0], _sum(point[1:])) for point in points]
        scores = _row_scores(points, partitions, metric)
    else:
        totals, scores = tally(answer, table, partitions, metric, width, since, until)
    if metric in LEVEL_METRICS:
        scores = level_scores(table, partitions, metric, until)
    named = max(0, min(MAX_SERIES, MAX_CELLS // max(len(totals), 1) - 1))
    shown = (wanted or busiest(partitions, scores))[:named]
    folded = len(partitions) - len(shown)
    points = list(history_points(answer, table, shown, metric, width, since, until))
    merged = with_other(points, totals, len(shown), metric, folded > 0)
    return _shape(answer, metric, width, shown, merged, folded)


def _shape(answer: Answer, metric: str, width: str, shown, points, folded: int) -> dict:
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


def level_scores(table, partitions, metric: str, until: datetime | None) -> dict[int, float]:
    """A level's busiest are the largest at the window's end: now, each partition's own
    figure; else its last sample at or before `until`."""
    if until is None:
        return {p.pk: getattr(p, metric) or 0 for p in partitions}
    first_after = history.first_poll_at_or_after(table, until + timedelta(microseconds=1))
    found = latest_before([p.pk for p in partitions], (metric,), first_after)
    return {pk: values[metric] for pk, values in found.items()}


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
    points: list[list], totals: list[tuple], shown: int, metric: str, fold: bool
) -> list[list]:
    """The chosen partitions' points at the first pass's times (a level carries its last
    values to a time where only folded partitions changed), and `other`: the total less
    the chosen partitions' known values."""
    by_time = {point[0]: point[1:] for point in points}
    carried: list = [None] * shown
    merged = []
    for stamp, total in totals:
        values = by_time.get(stamp)
        if values is None:
            values = carried if metric in LEVEL_METRICS else [None] * shown
        carried = values
        if fold:
            rest = None if total is None else total - sum(v for v in values if v is not None)
            merged.append([stamp, *values, rest])
        else:
            merged.append([stamp, *values])
    return merged


# -- the first pass: each point's total and each partition's score ------------------------


def tally(
    answer: Answer,
    table,
    partitions,
    metric: str,
    width: str,
    since: datetime,
    until: datetime | None,
    tail: bool = False,
) -> tuple[list[tuple], dict[int, float]]:
    """(time, table total) per point, as `history_points` would give them for all of
    `partitions`, and each partition's score; never more than one bucket's figures held."""
    scores: dict[int, float] = {}
    totals = _tally(answer, table, partitions, metric, width, since, until, scores, tail)
    return totals, scores


def _tally(answer, table, partitions, metric, width, since, until, scores, tail) -> list[tuple]:
    if width == POLL:
        if tail and history.polls_in(table, since, until) > 2 * MAX_RAW_POLLS:
            answer.complete = False
            return []
        # A window read poll by poll holds few samples (`history.width_for`).
        points = list(history_points(answer, table, partitions, metric, POLL, since, until))
        for pk, score in _row_scores(points, partitions, metric).items():
            scores[pk] = scores.get(pk, 0.0) + score
        return [(point[0], _sum(point[1:])) for point in points]
    buckets = window_buckets(answer, table, width, since, until)
    if metric in RATE_METRICS:
        totals = _rate_totals(table, partitions, metric, buckets, scores)
    else:
        totals = _level_totals(table, partitions, metric, buckets, since, until)
    last_taken = buckets[-1][2] if buckets else None
    if until is not None and last_taken is not None and last_taken >= until:
        return totals
    finer = LADDER[LADDER.index(width) - 1] if width != LADDER[0] else POLL
    rest = _tally(
        answer, table, partitions, metric, finer, last_taken or since, until, scores, True
    )
    if not totals:
        return rest
    last = datetime.fromisoformat(totals[-1][0])
    return totals + [t for t in rest if datetime.fromisoformat(t[0]) > last]


def _rate_totals(table, partitions, metric: str, buckets, scores: dict) -> list[tuple]:
    """Per bucket the sum of the partitions' rates (0 where none moved, null while none
    has a reading); each partition's score gains its rate."""
    counter = RATE_METRICS[metric]
    live = {p.pk for p in partitions}
    read = any(getattr(p, counter) is not None for p in partitions)
    sums: list = [0.0 if read else None] * len(buckets)
    for i, ids, deltas, lasts in rollup_rows(table, buckets, (DELTA_OF[counter], counter)):
        seconds = buckets[i][3]
        if lasts and any(v is not None for v in lasts):
            read = True
            sums[i] = sums[i] or 0.0
        if not deltas or not seconds:
            continue
        total = 0.0
        for pk, delta in zip(ids, deltas, strict=True):
            if delta is not None and pk in live:
                rate = delta / seconds
                scores[pk] = scores.get(pk, 0.0) + rate
                total += rate
        sums[i] = total
    return [
        (taken_at.isoformat(), total)
        for (_, _, taken_at, _), total in zip(buckets, sums, strict=True)
    ]


def _level_totals(table, partitions, metric: str, buckets, since, until) -> list[tuple]:
    """Per bucket the sum of the partitions' levels at its last poll, with a point at
    `since` when a value from before carries in (as `history.bucket_history`). Streamed:
    each partition's value before the window is looked up once the window showed which
    changed in it, and added to the totals of the buckets before it first changed."""
    if not buckets:
        return []
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
        changed |= history.sampled_after(table, partitions, metric, buckets[-1][2])
    look_up = live if until is not None else changed
    before_poll = history.first_poll_at_or_after(table, buckets[0][1])
    found = latest_before(look_up, (metric,), before_poll) if look_up else {}
    before = {pk: found.get(pk, {}).get(metric) for pk in look_up}
    base = [getattr(p, metric) for p in partitions if p.pk not in look_up]
    known = any(v is not None for v in base) or any(v is not None for v in before.values())
    base_sum = sum(v for v in base if v is not None)
    # Until a partition first changes in the window, its value before the window counts.
    waiting = sum(v for v in before.values() if v is not None)
    leaving = [0] * len(buckets)
    for pk, i in first_seen.items():
        leaving[i] += before.get(pk) or 0
    totals: list[tuple] = [(since.isoformat(), base_sum + waiting)] if known else []
    for i, (_, _, taken_at, _) in enumerate(buckets):
        waiting -= leaving[i]
        totals.append((taken_at.isoformat(), base_sum + waiting + sums[i]))
    return totals
