"""Time series of one table's partitions, rebuilt from change-only samples."""

from datetime import datetime

from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot
from partdash.metrics.store import counter_rate

LEVEL_METRICS = ("rows", "data_bytes", "index_bytes", "file_bytes")
RATE_METRICS = {"write_bytes_per_s": "write_bytes", "read_bytes_per_s": "read_bytes"}
METRICS = LEVEL_METRICS + tuple(RATE_METRICS)


def _partition_label(partition: Partition) -> str:
    return (
        f"{partition.name}#{partition.subpartition}" if partition.subpartition else partition.name
    )


def _snapshots(table: PartitionedTable, since: datetime) -> list[tuple[int, datetime]]:
    return list(
        ServerSnapshot.objects.filter(server_id=table.server_id, taken_at__gte=since)
        .order_by("taken_at")
        .values_list("id", "taken_at")
    )


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


def _since(index: dict[int, int], field: str, fields: tuple[str, ...], since: datetime):
    """Samples since `since` in which `field` changed."""
    return (
        PartitionSample.objects.filter(
            partition_id__in=index, snapshot__taken_at__gte=since, **{f"{field}__isnull": False}
        )
        .order_by("snapshot__taken_at")
        .values_list(*fields)
    )


def level_history(table, partitions, metric: str, since: datetime) -> list[list]:
    """One point at `since`, then one per poll where any partition's value changed, with
    unchanged values carried forward."""
    index = {p.pk: i for i, p in enumerate(partitions)}
    current: list = [None] * len(partitions)
    for partition_id, value in _latest_before(index, metric, since).items():
        current[index[partition_id]] = value
    points: list[list] = [[since.isoformat(), *current]]
    for taken_at, partition_id, value in _since(
        index, metric, ("snapshot__taken_at", "partition_id", metric), since
    ):
        stamp = taken_at.isoformat()
        if points[-1][0] != stamp:
            points.append([stamp, *points[-1][1:]])
        points[-1][1 + index[partition_id]] = value
    return points


def rate_history(table, partitions, metric: str, since: datetime) -> list[list]:
    """One point per poll: each partition's counter delta over that poll's interval (0
    when it did not change; a reset counts from zero)."""
    counter = RATE_METRICS[metric]
    index = {p.pk: i for i, p in enumerate(partitions)}
    by_snapshot: dict[int, list] = {}
    for snapshot_id, partition_id, value in _since(
        index, counter, ("snapshot_id", "partition_id", counter), since
    ):
        by_snapshot.setdefault(snapshot_id, []).append((partition_id, value))
    last = _latest_before(index, counter, since)
    points, previous_time = [], None
    for snapshot_id, taken_at in _snapshots(table, since):
        values = [0.0] * len(partitions)
        seconds = (taken_at - previous_time).total_seconds() if previous_time else None
        for partition_id, value in by_snapshot.get(snapshot_id, []):
            values[index[partition_id]] = counter_rate(value, last.get(partition_id), seconds)
            last[partition_id] = value
        if previous_time is not None:
            points.append([taken_at.isoformat(), *values])
        previous_time = taken_at
    return points


def table_history(table: PartitionedTable, metric: str, since: datetime) -> dict:
    partitions = list(table.partitions.filter(dropped_at=None))
    builder = level_history if metric in LEVEL_METRICS else rate_history
    return {
        "metric": metric,
        "partitions": [_partition_label(p) for p in partitions],
        "points": builder(table, partitions, metric, since),
    }
