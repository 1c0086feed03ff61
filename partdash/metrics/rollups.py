"""A table's history in buckets of 5 minutes, an hour or a day, so a chart of any range
reads a bounded number of points per partition.

A bucket (`PollBucket`) is one server's polls within one 5 minutes, hour or day. For each
table, a `TableRollup` keeps what each partition that did something in the bucket did:
its last sampled levels and counters, and its counters' deltas summed over the bucket's
polls, each delta counted as the poll-by-poll history counts it (a counter that went
down was reset; rows changed as `recent.changed_rows` counts them). A bucket is stored
once complete (SETTLE after its end: a poll is stored when it ends), newest first, by
the periodic task and, for a few seconds, by a history request that finds it missing;
`RollupCursor` says which stretch of a table's buckets of each width is stored. The
history after the last stored bucket is read from the next finer width, down to the
polls themselves.

Samples are matched to polls by id range: a server's polls are stored one at a time
(under its poll lock), so their ids grow with their times.
"""

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import cast

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from partdash.health import recent
from partdash.health.counters import counter_delta
from partdash.metrics.models import (
    Partition,
    PartitionedTable,
    PartitionSample,
    PollBucket,
    RollupCursor,
    ServerSnapshot,
    TableRollup,
)

Width = PollBucket.Width
# The casts: mypy without the Django plugin takes a TextChoices member for its
# (value, label) tuple; each is a str.
WIDTHS = cast(
    dict[str, timedelta],
    {
        Width.MINUTES_5: timedelta(minutes=5),
        Width.HOUR: timedelta(hours=1),
        Width.DAY: timedelta(days=1),
    },
)
LADDER = cast(list[str], [Width.MINUTES_5, Width.HOUR, Width.DAY])  # finest first
SETTLE = timedelta(minutes=5)
CHUNK_POLLS = 2000  # polls whose samples one query reads when rolling up, at most
CHUNK_SAMPLES = 256_000  # and about this many samples (polls times partitions)
IN_BATCH = 5000  # partitions per lookup (SQLite's 32,766 bound variables)

LEVELS = ("rows", "data_bytes", "index_bytes", "file_bytes")
COUNTERS = ("modified_counter", "write_bytes", "read_bytes")
# The sampled figures a rollup carries (not every column of a sample: `SAMPLED_FIGURES`).
ROLLED_UP = LEVELS + COUNTERS
DELTA_OF = {
    "modified_counter": "rows_changed",
    "write_bytes": "write_bytes_delta",
    "read_bytes": "read_bytes_delta",
}


def keep_days(width: str) -> int:
    """How long buckets of `width` are kept: as long as the polls they summarise are
    kept at a finer resolution (downsampling thins polls to hourly, then daily)."""
    days = {
        Width.MINUTES_5: settings.PARTDASH_RETENTION_RAW_DAYS,
        Width.HOUR: settings.PARTDASH_RETENTION_HOURLY_DAYS,
        Width.DAY: settings.PARTDASH_RETENTION_DAILY_DAYS,
    }
    return cast(dict[str, int], days)[width]  # as WIDTHS


def floor_to(moment: datetime, width: timedelta) -> datetime:
    """The start of the bucket of `width` holding `moment` (buckets aligned on UTC)."""
    epoch, seconds = moment.timestamp(), width.total_seconds()
    return datetime.fromtimestamp(epoch - epoch % seconds, UTC)


def latest_before(
    partition_ids: Iterable[int], fields: tuple[str, ...], snapshot_id: int
) -> dict[int, dict[str, int]]:
    """Each partition's last sampled value of each of `fields` in polls before
    `snapshot_id`: one probe of the (partition, snapshot) index per partition and field,
    however long its history."""
    ids = list(partition_ids)
    found: dict[int, dict[str, int]] = {}
    for start in range(0, len(ids), IN_BATCH):
        found |= _latest_of(
            Partition.objects.filter(pk__in=ids[start : start + IN_BATCH]), fields, snapshot_id
        )
    return found


def latest_before_in_table(
    table_id: int, fields: tuple[str, ...], snapshot_id: int
) -> dict[int, dict[str, int]]:
    """`latest_before` for every live partition of a table in one query (8,192 ids
    would take two batches of bound variables, and one probe each to list them)."""
    partitions = Partition.objects.filter(table_id=table_id, dropped_at=None)
    return _latest_of(partitions, fields, snapshot_id)


def _latest_of(partitions, fields: tuple[str, ...], snapshot_id: int) -> dict[int, dict[str, int]]:
    """`partitions`' (a queryset) last sampled `fields` before `snapshot_id`, one query."""
    names = {f"last_{name}": name for name in fields}
    lookups = {
        alias: Subquery(
            PartitionSample.objects.filter(
                partition_id=OuterRef("pk"),
                snapshot_id__lt=snapshot_id,
                **{f"{name}__isnull": False},
            )
            .order_by("-snapshot_id")
            .values(name)[:1]
        )
        for alias, name in names.items()
    }
    found: dict[int, dict[str, int]] = {}
    for pk, *values in partitions.annotate(**lookups).values_list("pk", *names):
        known = {name: v for name, v in zip(names.values(), values, strict=True) if v is not None}
        if known:
            found[pk] = known
    return found


@dataclass
class Bucket:
    start: datetime
    polls: list[int]
    taken_at: datetime  # its last poll
    seconds: float  # from the poll before it (else its first) to its last poll
    pk: int | None = None


def group_polls(
    polls: list[tuple[int, datetime]], width: timedelta, before: datetime | None
) -> list[Bucket]:
    """`polls` (id, time; in time order) in buckets of `width`. `before`: the time of the
    poll before the first, if any (the first bucket's deltas count from it)."""
    buckets: list[Bucket] = []
    for poll_id, taken_at in polls:
        start = floor_to(taken_at, width)
        if buckets and buckets[-1].start == start:
            bucket = buckets[-1]
            bucket.polls.append(poll_id)
            bucket.seconds += (taken_at - bucket.taken_at).total_seconds()
            bucket.taken_at = taken_at
            continue
        previous = buckets[-1].taken_at if buckets else before
        seconds = (taken_at - previous).total_seconds() if previous else 0.0
        buckets.append(Bucket(start, [poll_id], taken_at, seconds))
    return buckets


@dataclass
class Fold:
    """A table's partitions walked poll by poll: each one's last readings (`last`), and
    per partition the bucket's last sampled figures and summed counter deltas."""

    last: dict[int, dict[str, int]] = field(default_factory=dict)
    looked_up: set[tuple[int, str]] = field(default_factory=set)  # (partition, figure)

    def look_back(self, partition_id: int, sample: dict[str, int | None], before: int) -> None:
        """Before a partition's first delta of a counter: the counter's last value in the
        polls before poll id `before` (and for rows changed, the rows). Looked up for the
        counters a partition's samples have, as they come: one it never has
        (performance_schema OFF, say) would cost a walk back through all its samples."""
        for counter in COUNTERS:
            if sample[counter] is None:
                continue
            names = (counter, "rows") if counter == "modified_counter" else (counter,)
            wanted = [name for name in names if (partition_id, name) not in self.looked_up]
            if not wanted:
                continue
            self.looked_up.update((partition_id, name) for name in wanted)
            found = latest_before((partition_id,), tuple(wanted), before).get(partition_id)
            if found:
                last = self.last.setdefault(partition_id, {})
                for name, value in found.items():
                    last.setdefault(name, value)  # a value this walk read is newer

    def step(self, partition_id: int, sample: dict[str, int | None], into: dict) -> None:
        before = self.last.setdefault(partition_id, {})
        rolled = into.setdefault(partition_id, {})
        rows = sample["rows"] if sample["rows"] is not None else before.get("rows")
        for counter in COUNTERS:
            value = sample[counter]
            if value is None or before.get(counter) is None:
                continue
            if counter == "modified_counter":
                delta = recent.changed_rows(
                    recent.Reading(modified_counter=value, rows=rows),
                    recent.Reading(modified_counter=before[counter], rows=before.get("rows")),
                )
            else:
                delta = counter_delta(value, before[counter])
            if delta is not None:
                name = DELTA_OF[counter]
                rolled[name] = (rolled.get(name) or 0) + delta
        for name in ROLLED_UP:
            figure = sample[name]
            if figure is not None:
                before[name] = rolled[name] = figure


def _live_tables() -> Iterator[PartitionedTable]:
    return PartitionedTable.objects.live().select_related("server").iterator()


def roll_up(
    table: PartitionedTable, width: str, seconds: float | None = None, now: datetime | None = None
) -> int:
    """Store `table`'s complete buckets of `width` not stored yet, newest first: the new
    ones, then back toward how long they are kept, until `seconds` have passed (None: all
    of them; a history request gives a few seconds, the periodic task the rest). What is
    stored is always one stretch, [`first_start`, `next_start`) of the table's cursor.
    Returns how many buckets it stored."""
    now = now or timezone.now()
    deadline = None if seconds is None else time.monotonic() + seconds
    size = WIDTHS[width]
    horizon = floor_to(now - SETTLE, size)  # buckets starting before it are complete
    oldest = floor_to(now - timedelta(days=keep_days(width)), size)
    cursor, _ = RollupCursor.objects.get_or_create(
        table=table, width=width, defaults={"first_start": horizon, "next_start": horizon}
    )
    if cursor.next_start < oldest:  # all of it pruned since: start again from now
        cursor.first_start = cursor.next_start = horizon
        cursor.save()
    stored = 0
    if cursor.next_start < horizon:
        stored += _roll_range(table, cursor, width, cursor.next_start, horizon, deadline)
    # At least one chunk is rolled up each call, however short `seconds`.
    if cursor.first_start > oldest and (not stored or not _past(deadline)):
        stored += _roll_range(table, cursor, width, oldest, cursor.first_start, deadline)
    return stored


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _roll_range(
    table: PartitionedTable,
    cursor: RollupCursor,
    width: str,
    start: datetime,
    end: datetime,
    deadline: float | None,
) -> int:
    """Roll up the buckets of [start, end), which adjoins the cursor's stretch after it
    (end is `first_start`: newest first) or before it, moving the cursor chunk by chunk
    until `deadline`."""
    size, backward = WIDTHS[width], end == cursor.first_start
    snapshots = ServerSnapshot.objects.filter(server_id=table.server_id)
    polls = list(
        snapshots.filter(taken_at__gte=start, taken_at__lt=end)
        .order_by("taken_at", "id")
        .values_list("id", "taken_at")
    )
    before = (
        snapshots.filter(taken_at__lt=start)
        .order_by("-taken_at")
        .values_list("taken_at", flat=True)
        .first()
    )
    # A chunk's buckets hold about CHUNK_SAMPLES samples at most (a table's every
    # partition changing at every poll), whatever the table's size.
    partitions = Partition.objects.filter(table=table).count()
    per_chunk = max(1, min(CHUNK_POLLS, CHUNK_SAMPLES // max(partitions, 1)))
    chunks = list(_chunks(group_polls(polls, size, before), per_chunk))
    stored, fold = 0, Fold()  # forward, one chunk's last readings are the next one's
    for chunk in reversed(chunks) if backward else chunks:
        _save_buckets(table.server_id, width, chunk)
        stored += _roll_chunk(Fold() if backward else fold, table.pk, chunk)
        if backward:
            _move(cursor, "first_start", chunk[0].start)
        else:
            _move(cursor, "next_start", chunk[-1].start + size)
        if _past(deadline) and chunk is not (chunks[0] if backward else chunks[-1]):
            return stored
    _move(cursor, "first_start" if backward else "next_start", start if backward else end)
    return stored


def _move(cursor: RollupCursor, end: str, to: datetime) -> None:
    """Move one end of the cursor's stretch (only that one: a process rolling up the
    other end at the same time keeps its own)."""
    setattr(cursor, end, to)
    cursor.save(update_fields=[end])


def _chunks(buckets: list[Bucket], per_chunk: int) -> Iterator[list[Bucket]]:
    """Whole buckets, about `per_chunk` polls at a time (a bucket of more is one chunk:
    its samples are walked, not held)."""
    chunk: list[Bucket] = []
    polls = 0
    for bucket in buckets:
        if chunk and polls + len(bucket.polls) > per_chunk:
            yield chunk
            chunk, polls = [], 0
        chunk.append(bucket)
        polls += len(bucket.polls)
    if chunk:
        yield chunk


def _save_buckets(server_id: int, width: str, buckets: list[Bucket]) -> None:
    """Store the server's buckets (another table, or another process, may have stored
    them already: theirs are the same) and note each one's id."""
    PollBucket.objects.bulk_create(
        [
            PollBucket(
                server_id=server_id,
                width=width,
                start=b.start,
                taken_at=b.taken_at,
                seconds=b.seconds,
                polls=len(b.polls),
            )
            for b in buckets
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    ids = dict(
        PollBucket.objects.filter(
            server_id=server_id,
            width=width,
            start__gte=buckets[0].start,
            start__lte=buckets[-1].start,
        ).values_list("start", "id")
    )
    for bucket in buckets:
        bucket.pk = ids[bucket.start]


def fold_samples(fold: Fold, table_id: int, buckets: list[Bucket]) -> dict[int, dict[int, dict]]:
    """Per bucket (its index in `buckets`), per partition, what the partition did. The
    samples are walked in poll order as the database returns them (a server's poll ids
    grow with their times), never all held at once."""
    order = {poll: index for index, bucket in enumerate(buckets) for poll in bucket.polls}
    low, high = min(order), max(order)
    samples = (
        PartitionSample.objects.filter(
            partition__table_id=table_id, snapshot_id__gte=low, snapshot_id__lte=high
        )
        .order_by("snapshot_id")
        .values_list("snapshot_id", "partition_id", *ROLLED_UP)
    )
    per_bucket: dict[int, dict[int, dict]] = {}
    for snapshot_id, partition_id, *values in samples.iterator(chunk_size=10_000):
        index = order.get(snapshot_id)
        if index is None:  # another server's poll, between this one's ids
            continue
        sample = dict(zip(ROLLED_UP, values, strict=True))
        fold.look_back(partition_id, sample, low)
        fold.step(partition_id, sample, per_bucket.setdefault(index, {}))
    return per_bucket


FIGURES = ROLLED_UP + tuple(DELTA_OF.values())


def _roll_chunk(fold: Fold, table_id: int, buckets: list[Bucket]) -> int:
    per_bucket = fold_samples(fold, table_id, buckets)
    rollups = []
    for index, partitions in per_bucket.items():
        ids = sorted(partitions)
        figures = {name: [partitions[pk].get(name) for pk in ids] for name in FIGURES}
        rollups.append(
            TableRollup(
                bucket_id=buckets[index].pk,
                table_id=table_id,
                partitions=ids,
                **{
                    name: values if any(v is not None for v in values) else None
                    for name, values in figures.items()
                },
            )
        )
    TableRollup.objects.bulk_create(rollups, ignore_conflicts=True, batch_size=500)
    return len(buckets)


def roll_up_all(seconds: float = 240) -> int:
    """Roll up every live table at every width, until `seconds` have passed (the next run
    goes on). Returns the buckets stored."""
    deadline = time.monotonic() + seconds
    stored = 0
    for table in _live_tables():
        for width in LADDER:
            stored += roll_up(table, width, seconds=max(deadline - time.monotonic(), 0))
        if _past(deadline):
            break
    return stored


def prune(now: datetime | None = None) -> int:
    """Delete buckets older than their width is kept; returns how many."""
    now = now or timezone.now()
    deleted = 0
    for width in LADDER:
        old = PollBucket.objects.filter(
            width=width, start__lt=now - timedelta(days=keep_days(width))
        ).values_list("pk", flat=True)
        ids = list(old)
        for start in range(0, len(ids), IN_BATCH):
            batch = ids[start : start + IN_BATCH]
            TableRollup.objects.filter(bucket_id__in=batch).delete()
            deleted += PollBucket.objects.filter(pk__in=batch).delete()[0]
    return deleted
