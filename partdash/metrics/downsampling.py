"""Downsampling the store's polls, so a year of polling a large fleet stays bounded.

Every poll is kept for `PARTDASH_RETENTION_RAW_DAYS` (7); older polls are thinned to one
per hour until `PARTDASH_RETENTION_HOURLY_DAYS` (90), then to one per day until
`PARTDASH_RETENTION_DAILY_DAYS` (730), after which they are deleted. Thinning keeps the
last poll of each hour (or day) and moves onto it, per partition, the latest value of
every figure that changed within that hour: levels stay exact at the kept times, and
counter deltas between kept polls give the average rate over the hour.

"Retention" in partdash means a partition retention policy (`metrics.policies`,
`health.retention`); what this module does is downsampling. Its settings and its command
keep the names they were published under: `PARTDASH_RETENTION_*`, `manage.py retention`.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from partdash.accounts import audit
from partdash.metrics import rollups
from partdash.metrics.models import SAMPLED_FIGURES, PartitionSample, ServerSnapshot

Resolution = ServerSnapshot.Resolution


@dataclass
class DownsamplingReport:
    thinned_to_hourly: int = 0
    thinned_to_daily: int = 0
    deleted: int = 0
    buckets_deleted: int = 0
    audit_entries_deleted: int = 0  # older than PARTDASH_AUDIT_KEEP_DAYS

    def __str__(self) -> str:
        return (
            f"{self.thinned_to_hourly} polls merged into hourly, {self.thinned_to_daily} into "
            f"daily, {self.deleted} deleted; {self.buckets_deleted} history buckets deleted; "
            f"{self.audit_entries_deleted} audit entries deleted"
        )


def _bucket(taken_at: datetime, resolution: str) -> datetime:
    if resolution == Resolution.HOUR:
        return taken_at.replace(minute=0, second=0, microsecond=0)
    return taken_at.replace(hour=0, minute=0, second=0, microsecond=0)


def merge_samples(samples: list[PartitionSample]) -> dict[int, dict]:
    """Per partition, the latest non-null value of each figure (samples in time order)."""
    merged: dict[int, dict] = {}
    for sample in samples:
        values = merged.setdefault(sample.partition_id, {})
        for field in SAMPLED_FIGURES:
            value = getattr(sample, field)
            if value is not None:
                values[field] = value
    return merged


@transaction.atomic
def _thin_bucket(snapshots: list[ServerSnapshot], resolution: str) -> int:
    """Fold a bucket of polls into its last one; return how many polls were removed."""
    keeper, others = snapshots[-1], snapshots[:-1]
    if not others:
        ServerSnapshot.objects.filter(pk=keeper.pk).update(resolution=resolution)
        return 0
    ids = [s.pk for s in snapshots]
    samples = list(
        PartitionSample.objects.filter(snapshot_id__in=ids).order_by("snapshot__taken_at", "id")
    )
    merged = merge_samples(samples)
    PartitionSample.objects.filter(snapshot_id__in=ids).delete()
    PartitionSample.objects.bulk_create(
        [
            PartitionSample(partition_id=partition_id, snapshot=keeper, **values)
            for partition_id, values in merged.items()
        ],
        batch_size=2000,
    )
    ServerSnapshot.objects.filter(pk__in=[s.pk for s in others]).delete()
    ServerSnapshot.objects.filter(pk=keeper.pk).update(resolution=resolution)
    return len(others)


def _thin(before: datetime, source: str, resolution: str) -> int:
    """Thin every complete bucket older than `before`, server by server."""
    removed = 0
    old = ServerSnapshot.objects.filter(
        taken_at__lt=before, resolution__in=[Resolution.RAW, source]
    )
    for server_id in old.values_list("server_id", flat=True).distinct():
        buckets: dict[datetime, list[ServerSnapshot]] = {}
        for snapshot in old.filter(server_id=server_id).order_by("taken_at").only("id", "taken_at"):
            buckets.setdefault(_bucket(snapshot.taken_at, resolution), []).append(snapshot)
        complete = {start: s for start, s in buckets.items() if start < _bucket(before, resolution)}
        for snapshots in complete.values():
            removed += _thin_bucket(snapshots, resolution)
    return removed


@transaction.atomic
def _expire(before: datetime) -> int:
    """Delete every poll older than `before`. Each partition's latest values in them
    first move onto the server's oldest remaining poll where that poll has none (a NULL
    sample means "unchanged", so the value still holds there): a partition idle for
    longer than the store keeps polls keeps its level instead of falling to unknown."""
    expired = ServerSnapshot.objects.filter(taken_at__lt=before)
    for server_id in expired.values_list("server_id", flat=True).distinct():
        heir = (
            ServerSnapshot.objects.filter(server_id=server_id, taken_at__gte=before)
            .order_by("taken_at")
            .first()
        )
        if heir is None:
            continue
        samples = PartitionSample.objects.filter(snapshot__in=expired.filter(server_id=server_id))
        merged = merge_samples(list(samples.order_by("snapshot__taken_at", "id")))
        present = {s.partition_id: s for s in PartitionSample.objects.filter(snapshot=heir)}
        added, filled = [], []
        for partition_id, values in merged.items():
            sample = present.get(partition_id)
            if sample is None:
                added.append(PartitionSample(partition_id=partition_id, snapshot=heir, **values))
                continue
            for field, value in values.items():
                if getattr(sample, field) is None:
                    setattr(sample, field, value)
            filled.append(sample)
        PartitionSample.objects.bulk_create(added, batch_size=2000)
        PartitionSample.objects.bulk_update(filled, SAMPLED_FIGURES, batch_size=2000)
    deleted = expired.count()
    expired.delete()
    return deleted


def downsample(now: datetime | None = None) -> DownsamplingReport:
    """Thin raw polls to hourly, hourly to daily, delete the oldest."""
    now = now or timezone.now()
    raw_until = now - timedelta(days=settings.PARTDASH_RETENTION_RAW_DAYS)
    hourly_until = now - timedelta(days=settings.PARTDASH_RETENTION_HOURLY_DAYS)
    daily_until = now - timedelta(days=settings.PARTDASH_RETENTION_DAILY_DAYS)
    report = DownsamplingReport()
    # The ignores: a TextChoices member is a str (mypy without the Django plugin: a tuple).
    report.thinned_to_hourly = _thin(raw_until, Resolution.RAW, Resolution.HOUR)  # type: ignore[arg-type]
    report.thinned_to_daily = _thin(hourly_until, Resolution.HOUR, Resolution.DAY)  # type: ignore[arg-type]
    report.deleted = _expire(daily_until)
    report.buckets_deleted = rollups.prune(now)
    report.audit_entries_deleted = audit.prune(now)
    return report
