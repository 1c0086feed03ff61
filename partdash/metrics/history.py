"""Time series of one table's partitions, rebuilt from change-only samples."""

from datetime import datetime

from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot
from partdash.metrics.store import counter_rate

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
    when it did not change; a reset counts from zero). None (JSON null) until the
    partition has a reading to compare with: a new partition, or a counter not read
    before, has no rate yet, which is not a rate of 0."""
    counter = RATE_METRICS[metric]
    index = {p.pk: i for i, p in enumerate(partitions)}
    by_snapshot: dict[int, list] = {}
    for snapshot_id, partition_id, value in _since(
        index, counter, ("snapshot_id", "partition_id", counter), since, until
    ):
        by_snapshot.setdefault(snapshot_id, []).append((partition_id, value))
    last = _latest_before(index, counter, since)
    points, previous_time = [], None
    for snapshot_id, taken_at in _snapshots(table, since, until):
        values = [0.0 if p.pk in last else None for p in partitions]
        seconds = (taken_at - previous_time).total_seconds() if previous_time else None
        for partition_id, value in by_snapshot.get(snapshot_id, []):
            values[index[partition_id]] = counter_rate(value, last.get(partition_id), seconds)
            last[partition_id] = value
        if previous_time is not None:
            points.append([taken_at.isoformat(), *values])
        previous_time = taken_at
    return points


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
