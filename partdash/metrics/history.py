"""Time series of one table's partitions, rebuilt from change-only samples."""

from datetime import datetime

from django.db.models import BigIntegerField, Q, Value

from partdash.health import recent
from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot
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


def _partition_label(partition: Partition) -> str:
    """What a reader calls it: `p2024 / p2024sp0` for a subpartition, not the stored key."""
    if partition.subpartition:
        return f"{partition.name} / {partition.subpartition}"
    return partition.name


def _window(since: datetime, until: datetime | None) -> dict:
    """Lookups on a sample's poll time for `since` <= time (<= `until`)."""
    window = {"snapshot__taken_at__gte": since}
    if until is not None:
        window["snapshot__taken_at__lte"] = until
    return window


def _snapshots(
    table: PartitionedTable, since: datetime, until: datetime | None
) -> list[tuple[int, datetime]]:
    polls = ServerSnapshot.objects.filter(server_id=table.server_id, taken_at__gte=since)
    if until is not None:
        polls = polls.filter(taken_at__lte=until)
    return list(polls.order_by("taken_at").values_list("id", "taken_at"))


def _latest_before(index: dict[int, int], field: str, since: datetime) -> dict[int, object]:
    """Each partition's last sampled value of `field` before `since`."""
    rows = (
        PartitionSample.objects.filter(
            partition_id__in=index, snapshot__taken_at__lt=since, **{f"{field}__isnull": False}
        )
        .order_by("partition_id", "-snapshot__taken_at")
        .values_list("partition_id", field)
    )
    latest: dict[int, object] = {}
    for partition_id, value in rows:
        latest.setdefault(partition_id, value)
    return latest


def _since(
    index: dict[int, int],
    field: str,
    fields: tuple[str, ...],
    since: datetime,
    until: datetime | None,
):
    """Samples from `since` (to `until`) in which `field` changed."""
    return (
        PartitionSample.objects.filter(
            partition_id__in=index, **_window(since, until), **{f"{field}__isnull": False}
        )
        .order_by("snapshot__taken_at")
        .values_list(*fields)
    )


def level_history(
    table, partitions, metric: str, since: datetime, until: datetime | None = None
) -> list[list]:
    """One point at `since` when there was a value before it, then one per poll where any
    partition's value changed, with unchanged values carried forward. With nothing before
    `since` the series starts at its first poll, so a chart's axis can start at the data."""
    index = {p.pk: i for i, p in enumerate(partitions)}
    current: list = [None] * len(partitions)
    for partition_id, value in _latest_before(index, metric, since).items():
        current[index[partition_id]] = value
    known = any(value is not None for value in current)
    points: list[list] = [[since.isoformat(), *current]] if known else []
    for taken_at, partition_id, value in _since(
        index, metric, ("snapshot__taken_at", "partition_id", metric), since, until
    ):
        stamp = taken_at.isoformat()
        if not points or points[-1][0] != stamp:
            points.append([stamp, *(points[-1][1:] if points else current)])
        points[-1][1 + index[partition_id]] = value
    return points


def rate_history(
    table, partitions, metric: str, since: datetime, until: datetime | None = None
) -> list[list]:
    """One point per poll: each partition's counter delta over that poll's interval (0
    when it did not change; a reset counts from zero, and rows changed as the poll
    counted them, `recent.changed_rows`). None (JSON null) until the partition has a
    reading to compare with: a new partition, or a counter not read before, has no rate
    yet, which is not a rate of 0."""
    counter = RATE_METRICS[metric]
    rows_changed = counter == "modified_counter"
    index = {p.pk: i for i, p in enumerate(partitions)}
    by_snapshot: dict[int, list] = {}
    for snapshot_id, partition_id, value, rows in _samples(index, counter, since, until):
        by_snapshot.setdefault(snapshot_id, []).append((partition_id, value, rows))
    last = _latest_before(index, counter, since)
    last_rows = _latest_before(index, "rows", since) if rows_changed else {}
    points, previous_time = [], None
    for snapshot_id, taken_at in _snapshots(table, since, until):
        values = [0.0 if p.pk in last else None for p in partitions]
        seconds = (taken_at - previous_time).total_seconds() if previous_time else None
        for partition_id, value, rows in by_snapshot.get(snapshot_id, []):
            before_rows = last_rows.get(partition_id)
            if rows is not None:
                last_rows[partition_id] = rows
            if value is None:
                continue
            position, before = index[partition_id], last.get(partition_id)
            if rows_changed:
                changed = recent.changed_rows(
                    recent.Reading(modified_counter=value, rows=last_rows.get(partition_id)),
                    recent.Reading(modified_counter=before, rows=before_rows),
                )
                values[position] = per_second(changed, seconds)
            else:
                values[position] = counter_rate(value, before, seconds)
            last[partition_id] = value
        if previous_time is not None:
            points.append([taken_at.isoformat(), *values])
        previous_time = taken_at
    return points


def _samples(index: dict[int, int], counter: str, since: datetime, until: datetime | None):
    """(snapshot, partition, counter, rows) of the samples in the window where the
    counter (or, for rows changed, the rows it is judged with) changed."""
    changed = Q(**{f"{counter}__isnull": False})
    if counter == "modified_counter":
        changed |= Q(rows__isnull=False)
        rows = "rows"
    else:
        rows = Value(None, output_field=BigIntegerField())
    return (
        PartitionSample.objects.filter(changed, partition_id__in=index, **_window(since, until))
        .order_by("snapshot__taken_at")
        .values_list("snapshot_id", "partition_id", counter, rows)
    )


def table_history(
    table: PartitionedTable, metric: str, since: datetime, until: datetime | None = None
) -> dict:
    """`metric` per live partition from `since` to `until` (default: now)."""
    partitions = list(table.partitions.filter(dropped_at=None))
    builder = level_history if metric in LEVEL_METRICS else rate_history
    return {
        "metric": metric,
        "partitions": [_partition_label(p) for p in partitions],
        "points": builder(table, partitions, metric, since, until),
    }
