"""Periodic maintenance of the metadata store."""

from celery import shared_task

from partdash.metrics.retention import apply_retention as run_retention


@shared_task(name="partdash.metrics.tasks.apply_retention", ignore_result=True)
def apply_retention() -> str:
    """Thin old polls to hourly and daily samples and delete the oldest (idempotent)."""
    return str(run_retention())
