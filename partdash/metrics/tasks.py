"""Periodic maintenance of the metadata store."""

from celery import shared_task
from django.conf import settings

from partdash.metrics.downsampling import downsample
from partdash.metrics.rollups import roll_up_all

DOWNSAMPLE_TASK = "partdash.metrics.tasks.downsample_polls"
# The task's name before "retention" was left to partition policies. A message an older
# release queued (beat's tick) still carries it, so it stays routable to the same code.
LEGACY_DOWNSAMPLE_TASK = "partdash.metrics.tasks.apply_retention"


def _downsample_polls() -> str:
    """Thin old polls to hourly and daily samples and delete the oldest (idempotent)."""
    return str(downsample())


downsample_polls = shared_task(name=DOWNSAMPLE_TASK, ignore_result=True)(_downsample_polls)
shared_task(name=LEGACY_DOWNSAMPLE_TASK, ignore_result=True)(_downsample_polls)


@shared_task(name="partdash.metrics.tasks.roll_up_history", ignore_result=True)
def roll_up_history() -> str:
    """Store the history buckets of every table that are complete and not stored yet
    (`partdash.metrics.rollups`), for a few minutes at most; the next run goes on."""
    stored = roll_up_all(seconds=settings.PARTDASH_ROLLUP_EVERY_SECONDS * 0.8)
    return f"{stored} buckets rolled up"
