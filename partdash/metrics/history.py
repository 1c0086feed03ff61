"""Time series of one table's partitions, rebuilt from change-only samples, or from
rollups where the window holds more polls than a chart needs (`rollups`).

A window of at most MAX_RAW_POLLS polls is answered poll by poll; a longer one in the
finest buckets (5 minutes, an hour, a day) that keep it within MAX_POINTS points per
partition: an hour of polls 60 s apart comes poll by poll, a day in 5-minute buckets, 7
days hourly, a year daily. The answer says which (`resolution`).
"""

import time
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import NamedTuple

from django.utils import timezone

from partdash.health import recent
from partdash.metrics import rollups
from partdash.metrics.models import (
    Partition,
    PartitionedTable,
    PartitionSample,
    PollBucket,
    RollupCursor,
    ServerSnapshot,
    TableRollup,
)
from partdash.metrics.rollups import LADDER, WIDTHS, latest_before
from partdash.metrics.store import counter_rate, per_second

LEVEL_METRICS = ("rows", "data_bytes", "index_bytes", "file_bytes")
# Rows changed (the application's writes, MODIFIED_COUNTER: logical) and disk bytes
# (page reads and flushes: physical), each per second over a poll's interval.
RATE_METRICS = {
    "rows_changed_per_s": "modified_counter",
    "write_bytes_per_s": "write_bytes",
    "read_bytes_per_s": "read_bytes",
}
METRICS = LEVEL_METRICS + tuple(RATE_METRICS)
MAX_RAW_POLLS = 500
MAX_POINTS = 1000
# A window read poll by poll holds its samples: 500 polls of 128 partitions at most (an
# hour of a table of 8,192 was 491,520 samples, read in 5-minute buckets instead).
MAX_RAW_SAMPLES = MAX_RAW_POLLS * 128
POLL = "poll"  # the resolution of a window answered poll by poll
ROLL_UP_SECONDS = 3.0  # a request rolls up what the periodic task has not, this long at most


class Poll(NamedTuple):
    """One of the server's polls in a window (a `ServerSnapshot`)."""

    id: int
    taken_at: datetime


class Change(NamedTuple):
    """A partition's sample at a poll of the window where any of the figures asked for
    changed: the poll's position in the window, the partition, and the figures' values
    in the order asked (None: unchanged)."""

    position: int
    partition_id: int
    values: tuple


class StoredBucket(NamedTuple):
    """A bucket of a width as stored (`PollBucket`; `rollups.Bucket` while it is built):
    its start, its last poll's time, and the seconds its polls span."""

    pk: int
    start: datetime
    taken_at: datetime
    seconds: float


@dataclass(frozen=True)
class Series:
    """What a history answer reads: `metric` of `partitions` (live partitions of `table`,
    in the answer's order) from `since` to `until` (None: now)."""

    table: PartitionedTable
    partitions: list[Partition]
    metric: str
    since: datetime
    until: datetime | None = None


def partition_label(partition: Partition) -> str:
    """What a reader calls it: `p2024 / p2024sp0` for a subpartition, not the stored key."""
    if partition.subpartition:
        return f"{partition.name} / {partition.subpartition}"
    return partition.name


def _polls(table: PartitionedTable, since: datetime, until: datetime | None):
    polls = ServerSnapshot.objects.filter(server_id=table.server_id, taken_at__gte=since)
    if until is not None:
        polls = polls.filter(taken_at__lte=until)
    return polls


def _snapshots(table: PartitionedTable, since: datetime, until: datetime | None) -> list[Poll]:
    polls = _polls(table, since, until).order_by("taken_at", "id")
    return [Poll._make(row) for row in polls.values_list("id", "taken_at")]


def first_poll_at_or_after(table: PartitionedTable, moment: datetime) -> int:
    """The id of the server's first poll at or after `moment`, past every id if none."""
    first = (
        ServerSnapshot.objects.filter(server_id=table.server_id, taken_at__gte=moment)
        .order_by("taken_at", "id")
        .values_list("id", flat=True)
        .first()
    )
    if first is not None:
        return first
    last = ServerSnapshot.objects.order_by("-id").values_list("id", flat=True).first()
    return (last or 0) + 1


def _latest_before(table: PartitionedTable, ids, field: str, since: datetime) -> dict[int, object]:
    """Each of the partitions' (`ids`) last sampled value of `field` before `since`."""
    if not ids:
        return {}
    before = latest_before(ids, (field,), first_poll_at_or_after(table, since))
    return {pk: values[field] for pk, values in before.items()}


def _samples(index: dict[int, int], polls: list[Poll], fields: tuple[str, ...]) -> list[Change]:
    """The samples of `polls`, in poll order, where any of `fields` changed."""
    if not polls:
        return []
    position = {poll.id: i for i, poll in enumerate(polls)}
    rows = PartitionSample.objects.filter(
        partition_id__in=index,
        snapshot_id__gte=min(position),
        snapshot_id__lte=max(position),
    ).values_list("snapshot_id", "partition_id", *fields)
    found = [
        Change(position[snapshot_id], partition_id, tuple(values))
        for snapshot_id, partition_id, *values in rows
        if snapshot_id in position and any(v is not None for v in values)
    ]
    found.sort(key=lambda change: change.position)
    return found


def level_history(series: Series) -> list[list]:
    """One point at `since` when there was a value before it, then one per poll where any
    partition's value changed, with unchanged values carried forward. With nothing before
    `since` the series starts at its first poll, so a chart's axis can start at the data."""
    table, partitions, metric = series.table, series.partitions, series.metric
    since, until = series.since, series.until
    index = {p.pk: i for i, p in enumerate(partitions)}
    polls = _snapshots(table, since, until)
    samples = _samples(index, polls, (metric,))
    # A value the window never samples is, for a window ending now, the value now: only
    # the others are looked up before `since` (a walk back through their samples).
    look_up = set(index) if until is not None else {change.partition_id for change in samples}
    before = _latest_before(table, look_up, metric, since)
    current: list = [
        before.get(p.pk) if p.pk in look_up else getattr(p, metric) for p in partitions
    ]
    known = any(value is not None for value in current)
    points: list[list] = [[since.isoformat(), *current]] if known else []
    for position, partition_id, (value,) in samples:
        stamp = polls[position].taken_at.isoformat()
        if not points or points[-1][0] != stamp:
            points.append([stamp, *(points[-1][1:] if points else current)])
        points[-1][1 + index[partition_id]] = value
    return points


def rate_history(series: Series) -> list[list]:
    """One point per poll: each partition's counter delta over that poll's interval (0
    when it did not change; a reset counts from zero, and rows changed as the poll
    counted them, `recent.changed_rows`). None (JSON null) until the partition has a
    reading to compare with: a new partition, or a counter not read before, has no rate
    yet, which is not a rate of 0."""
    table, partitions, metric = series.table, series.partitions, series.metric
    since, until = series.since, series.until
    counter = RATE_METRICS[metric]
    rows_changed = counter == "modified_counter"
    index = {p.pk: i for i, p in enumerate(partitions)}
    polls = _snapshots(table, since, until)
    fields = (counter, "rows") if rows_changed else (counter,)
    by_poll: dict[int, list] = {}
    sampled = set(index) if until is not None else set()
    for position, partition_id, (value, *rows) in _samples(index, polls, fields):
        by_poll.setdefault(position, []).append((partition_id, value, rows[0] if rows else None))
        if value is not None:
            sampled.add(partition_id)
    # The counters before `since` of the partitions whose deltas the window computes; of
    # the others only whether they have a reading matters, which they have now if they
    # did then (a window ending now). A counter a partition never has (performance_schema
    # OFF) is not looked for through every sample it has.
    # One lookup for the counter and (for rows changed) the rows.
    before = latest_before(sampled, fields, first_poll_at_or_after(table, since)) if sampled else {}
    last = {pk: values[counter] for pk, values in before.items() if counter in values}
    last_rows = {pk: values["rows"] for pk, values in before.items() if "rows" in values}
    read = {p.pk for p in partitions if p.pk not in sampled and getattr(p, counter) is not None}
    points: list[list] = []
    previous_time = None
    for position, (_, taken_at) in enumerate(polls):
        values = [0.0 if p.pk in last or p.pk in read else None for p in partitions]
        seconds = (taken_at - previous_time).total_seconds() if previous_time else None
        for partition_id, value, rows in by_poll.get(position, []):
            before_rows = last_rows.get(partition_id)
            if rows is not None:
                last_rows[partition_id] = rows
            if value is None:
                continue
            position_of, previous = index[partition_id], last.get(partition_id)
            if rows_changed:
                changed = recent.changed_rows(
                    recent.Reading(modified_counter=value, rows=last_rows.get(partition_id)),
                    recent.Reading(modified_counter=previous, rows=before_rows),
                )
                values[position_of] = per_second(changed, seconds)
            else:
                values[position_of] = counter_rate(value, previous, seconds)
            last[partition_id] = value
        if previous_time is not None:
            points.append([taken_at.isoformat(), *values])
        previous_time = taken_at
    return points


def bucket_history(
    answer: "Answer", series: Series, width: str
) -> tuple[list[list], datetime | None]:
    """The stored buckets of `width` in the window (rolled up first where missing): for a
    level, each partition's value at each bucket's last poll; for a rate, its counter's
    delta over the bucket's seconds. Returns the points and the last stored bucket's last
    poll (None without any), from which the finer widths go on."""
    buckets = window_buckets(answer, series, width)
    if not buckets:
        return [], None
    table, partitions, metric = series.table, series.partitions, series.metric
    index = {p.pk: i for i, p in enumerate(partitions)}
    rate = metric in RATE_METRICS
    counter = RATE_METRICS.get(metric, metric)
    columns = (rollups.DELTA_OF[counter], counter) if rate else (metric,)
    wanted = sorted(index)
    by_bucket = {
        i: _only(wanted, ids, values) for i, ids, *values in rollup_rows(table, buckets, columns)
    }
    points: list[list] = []
    if rate:
        # 0 for a partition with a reading to compare with, else None (no rate yet).
        current: list = [
            0.0 if read else None for read in _read_before(partitions, counter, by_bucket)
        ]
        for i, bucket in enumerate(buckets):
            values = list(current)
            ids, deltas, lasts = by_bucket.get(i, ((), None, None))
            for n, pk in enumerate(ids):
                at = index.get(pk)
                if at is None:  # dropped since
                    continue
                if deltas and deltas[n] is not None and bucket.seconds:
                    values[at] = deltas[n] / bucket.seconds
                if lasts and lasts[n] is not None:
                    current[at] = 0.0
            points.append([bucket.taken_at.isoformat(), *values])
    else:
        current = _levels_before(series, buckets, by_bucket)
        if any(value is not None for value in current):
            points.append([series.since.isoformat(), *current])
        for i, bucket in enumerate(buckets):
            ids, levels = by_bucket.get(i, ((), None))
            if levels:
                for pk, value in zip(ids, levels, strict=True):
                    at = index.get(pk)
                    if at is not None and value is not None:
                        current[at] = value
            points.append([bucket.taken_at.isoformat(), *current])
    return points, buckets[-1].taken_at


def window_buckets(answer: "Answer", series: Series, width: str) -> list[StoredBucket]:
    """The stored buckets of `width` in the window, in time order, rolled up first
    (within the request's budget, `Answer.roll_up_left`). The stretch stored is read once
    per request: a second pass over the window (the folded answer's, `folded_history`)
    reads the same buckets whatever the task stored since."""
    table, since, until = series.table, series.since, series.until
    if width not in answer.stretches:
        # The request's first width rolls up one chunk at least (roll_up's own promise),
        # the others only within what is left of the budget.
        left = answer.roll_up_left()
        if left > 0 or not answer.stretches:
            rollups.roll_up(table, width, seconds=max(left, 0.0))
        cursor = RollupCursor.objects.filter(table=table, width=width).first()
        # None: never rolled up, and no budget left to start: nothing stored to read.
        answer.stretches[width] = (
            (cursor.first_start, cursor.next_start) if cursor else (since, since)
        )
    first_start, next_start = answer.stretches[width]
    if first_start > since and _polls(table, since, first_start).exists():
        answer.complete = False  # the older part is not rolled up yet
    buckets = PollBucket.objects.filter(
        server_id=table.server_id,
        width=width,
        taken_at__gte=since,
        start__gte=first_start,
        start__lt=next_start,
    )
    if until is not None:
        buckets = buckets.filter(taken_at__lte=until)
    rows = buckets.order_by("start").values_list("id", "start", "taken_at", "seconds")
    return [StoredBucket._make(row) for row in rows]


def rollup_rows(
    table, buckets: list[StoredBucket], columns: tuple[str, ...], ordered: bool = False
):
    """(bucket position, partition ids, *columns) of the table's rollups of `buckets`
    (in time order if `ordered`), streamed a few rows at a time: a table of 8,192
    partitions stores 8,192 figures per row, and a day of 5-minute buckets is 288 rows."""
    position = {bucket.pk: i for i, bucket in enumerate(buckets)}
    rows = TableRollup.objects.filter(
        table=table, bucket_id__gte=min(position), bucket_id__lte=max(position)
    ).values_list("bucket_id", "partitions", *columns)
    if ordered:
        rows = rows.order_by("bucket__start")
    # Two rows at a time: each is three JSON lists of 8,192 figures parsed (about 1 MB),
    # and 8 requests at once held 16 each (+210 MB over one request's +20 MB).
    for bucket_id, *row in rows.iterator(chunk_size=2):
        if bucket_id in position:
            yield (position[bucket_id], *row)


def _only(wanted: list[int], ids: list[int], columns: list) -> tuple:
    """A rollup row cut down to the `wanted` partitions (sorted ids; a rollup's are
    sorted too, `rollups._roll_chunk`): found by bisection, so a few partitions of 8,192
    cost a few probes, not a walk through the row."""
    if len(wanted) * 8 >= len(ids):
        return (ids, *columns)
    at = []
    for pk in wanted:
        n = bisect_left(ids, pk)
        if n < len(ids) and ids[n] == pk:
            at.append(n)
    return ([ids[n] for n in at], *(None if c is None else [c[n] for n in at] for c in columns))


def _read_before(partitions, counter: str, by_bucket: dict) -> list[bool]:
    """Whether each partition had a reading of `counter` before the window's buckets,
    without walking back through its samples (a counter some partitions never have,
    performance_schema's when it is OFF, would cost a walk through every sample they
    have): its first bucket with a reading says so (a delta, or none: its first ever),
    and one with no reading in the window has one before it if it has one now."""
    first: dict[int, bool] = {}
    for i in sorted(by_bucket):
        ids, deltas, lasts = by_bucket[i]
        for n, pk in enumerate(ids):
            if lasts and lasts[n] is not None and pk not in first:
                first[pk] = bool(deltas) and deltas[n] is not None
    return [first.get(p.pk, getattr(p, counter) is not None) for p in partitions]


def _levels_before(series: Series, buckets: list[StoredBucket], by_bucket: dict) -> list:
    """Each partition's `metric` as the window's first bucket began. One whose value did
    not change since is at its value now; the others (changed in the window, or anywhere
    when the window ends in the past) are looked up in their samples, which for a value
    that changed in the window is a short walk back."""
    table, partitions, metric, until = series.table, series.partitions, series.metric, series.until
    changed = {
        pk
        for ids, levels in by_bucket.values()
        if levels
        for pk, value in zip(ids, levels, strict=True)
        if value is not None
    }
    if until is None:
        changed |= sampled_after(table, partitions, metric, buckets[-1].taken_at)
    index = {p.pk: i for i, p in enumerate(partitions)}
    look_up = set(index) if until is not None else changed & set(index)
    first_poll = first_poll_at_or_after(table, buckets[0].start)
    before = latest_before(look_up, (metric,), first_poll) if look_up else {}
    return [
        before.get(p.pk, {}).get(metric) if p.pk in look_up else getattr(p, metric)
        for p in partitions
    ]


def sampled_after(table, partitions, metric: str, moment: datetime) -> set[int]:
    """The partitions whose `metric` was sampled after `moment` (the window's last stored
    bucket): the polls since are few (at most a bucket of the width, and the SETTLE)."""
    first = first_poll_at_or_after(table, moment + timedelta(microseconds=1))
    return set(
        PartitionSample.objects.filter(
            partition_id__in=[p.pk for p in partitions],
            snapshot_id__gte=first,
            **{f"{metric}__isnull": False},
        ).values_list("partition_id", flat=True)
    )


def polls_in(table: PartitionedTable, since: datetime, until: datetime | None) -> int:
    return _polls(table, since, until).count()


def width_for(
    table: PartitionedTable, since: datetime, until: datetime | None, partitions: int = 1
) -> str:
    """POLL for a window of at most MAX_RAW_POLLS polls and MAX_RAW_SAMPLES polls times
    `partitions`, else the finest width that spans it in at most MAX_POINTS buckets and
    is still kept as far back as `since`."""
    polls = polls_in(table, since, until)
    if polls <= MAX_RAW_POLLS and polls * partitions <= MAX_RAW_SAMPLES:
        return POLL
    now = timezone.now()
    span = (until or now) - since
    for width in LADDER:
        kept_since = now - timedelta(days=rollups.keep_days(width))
        if span / WIDTHS[width] <= MAX_POINTS and since >= kept_since:
            return width
    return LADDER[-1]


@dataclass
class Answer:
    """What a request learnt while reading its window: whether all of it was rolled up,
    which stretch of each width it read, and its roll-up budget (ROLL_UP_SECONDS for the
    whole request, however many widths and passes it reads)."""

    complete: bool = True  # False: part of the window is not rolled up yet
    stretches: dict = field(default_factory=dict)  # width -> (first_start, next_start)
    roll_up_until: float = field(default_factory=lambda: time.monotonic() + ROLL_UP_SECONDS)

    def roll_up_left(self) -> float:
        return self.roll_up_until - time.monotonic()


def history_points(answer: Answer, series: Series, width: str, tail: bool = False) -> list[list]:
    """The series at `width`, continued past its last stored bucket at the finer widths,
    down to the polls themselves (`tail`: this is such a continuation)."""
    until = series.until
    if width == POLL:
        if tail and _polls(series.table, series.since, until).count() > 2 * MAX_RAW_POLLS:
            answer.complete = False  # the finer widths are behind too: not read poll by poll
            return []
        builder = level_history if series.metric in LEVEL_METRICS else rate_history
        return builder(series)
    points, last_taken = bucket_history(answer, series, width)
    if until is not None and last_taken is not None and last_taken >= until:
        return points
    finer = LADDER[LADDER.index(width) - 1] if width != LADDER[0] else POLL
    # From the last stored bucket's last poll: a rate's next interval counts from it.
    rest = history_points(
        answer, replace(series, since=last_taken or series.since), finer, tail=True
    )
    if not points:
        return rest
    last = datetime.fromisoformat(points[-1][0])
    return points + [point for point in rest if datetime.fromisoformat(point[0]) > last]


def table_history(
    table: PartitionedTable, metric: str, since: datetime, until: datetime | None = None
) -> dict:
    """`metric` per live partition from `since` to `until` (default: now)."""
    partitions = list(table.partitions.live())
    width = width_for(table, since, until)
    answer = Answer()
    points = history_points(answer, Series(table, partitions, metric, since, until), width)
    return {
        "metric": metric,
        "resolution": width,
        "complete": answer.complete,
        "partitions": [partition_label(p) for p in partitions],
        "points": points,
    }
