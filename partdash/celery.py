"""The Celery application: Redis broker, one static beat entry that dispatches due polls."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partdash.settings")

app = Celery("partdash")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["partdash.collector", "partdash.metrics"])


@app.on_after_finalize.connect
def schedule_dispatcher(sender: Celery, **kwargs) -> None:
    """Beat's static entries: due polls (each server's own interval is read from the
    database) and retention."""
    from django.conf import settings

    sender.add_periodic_task(
        settings.PARTDASH_DISPATCH_SECONDS,
        sender.signature("partdash.collector.tasks.dispatch_due_polls"),
        name="dispatch due polls",
    )
    sender.add_periodic_task(
        settings.PARTDASH_RETENTION_EVERY_SECONDS,
        sender.signature("partdash.metrics.tasks.apply_retention"),
        name="retention and downsampling",
    )
