"""The store's downsampling task answers to its name and to the one it had before
"retention" was left to partition retention policies (a message an older release
queued carries that one)."""

from celery import current_app

from partdash.metrics import tasks

NOTHING_TO_DO = (
    "0 polls merged into hourly, 0 into daily, 0 deleted; 0 history buckets deleted; "
    "0 audit entries deleted"
)


def test_downsampling_runs_under_its_name_and_its_former_one(db):
    assert tasks.downsample_polls.name == tasks.DOWNSAMPLE_TASK
    for name in (tasks.DOWNSAMPLE_TASK, "partdash.metrics.tasks.apply_retention"):
        assert current_app.tasks[name].apply().get() == NOTHING_TO_DO, name
