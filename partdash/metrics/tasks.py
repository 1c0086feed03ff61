"""Periodic maintenance of the metadata store."""

from celery import shared_task
from django.conf import settings

from partdash.metrics.retention import apply_retention as run_retention
from partdash.metrics.rollups import roll_up_all


@shared_task(name="partdash.metrics.tasks.apply_retention", ignore_result=True)
def apply_retention() -> str:
    """Thin old polls to hourly and daily samples and delete the oldest (idempotent)."""
    return str(run_retention())


@shared_task(name="partdash.metrics.tasks.roll_up_history", ignore_result=True)
def roll_up_history() -> str:
    """Store the history buckets of every table that are complete and not stored yet
    (`partdash.metrics.rollups`), for a few minutes at most; the next run goes on."""
    stored = roll_up_all(seconds=settings.PARTDASH_ROLLUP_EVERY_SECONDS * 0.8)
    return f"{stored} buckets rolled up"
