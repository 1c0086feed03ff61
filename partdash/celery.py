"""The Celery application: Redis broker; beat dispatches due polls, rolls up history,
downsamples old polls, sweeps the alert outbox, sends reminders and, on a thread of its
own, looks for servers no poll reaches; each worker records when it starts and finishes
a task (`partdash.lib.liveness`)."""

import contextlib
import os

import redis
from celery import Celery, Task
from celery.signals import beat_init, task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partdash.settings")
# Celery's Django fixup runs Django's system checks when a worker starts, and discards
# what they find. Checking the URLconf imports every view, the API, the OpenAPI schema
# generator and Django's test client into the worker, which serves no page: 21 MB more
# in every worker child, forked from it (a new child 98 MB against 76 MB, measured), of
# the 300 MB a child may peak at polling a large fleet. `make up` (its migrate) and
# `manage.py check` still run them; CELERY_SKIP_CHECKS= (empty) runs them here too.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("partdash")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The polling tasks are `partdash.polling.tasks.*`; their names from before polling/ was
# split out of collector/ (`partdash.collector.tasks.*`) stay routable to them there.
app.autodiscover_tasks(["partdash.polling", "partdash.metrics", "partdash.alerts"])


@app.on_after_finalize.connect
def schedule_dispatcher(sender: Celery, **kwargs) -> None:
    """Beat's static entries: due polls (each server's own interval is read from the
    database), downsampling, the alert outbox's sweep and reminders. `stale_polls` is
    not among them: beat's own thread evaluates it (`start_the_watch`), as a task
    would wait for the very worker whose silence it is about."""
    from django.conf import settings

    sender.add_periodic_task(
        settings.PARTDASH_DISPATCH_SECONDS,
        sender.signature("partdash.polling.tasks.dispatch_due_polls"),
        name="dispatch due polls",
    )
    sender.add_periodic_task(
        settings.PARTDASH_RETENTION_EVERY_SECONDS,
        sender.signature("partdash.metrics.tasks.downsample_polls"),
        name="store downsampling",
    )
    sender.add_periodic_task(
        settings.PARTDASH_ROLLUP_EVERY_SECONDS,
        sender.signature("partdash.metrics.tasks.roll_up_history"),
        name="history rollups",
    )
    sender.add_periodic_task(
        settings.PARTDASH_ALERT_SWEEP_SECONDS,
        sender.signature("partdash.alerts.tasks.sweep_outbox"),
        name="alert outbox sweep",
    )
    sender.add_periodic_task(
        settings.PARTDASH_ALERT_REMINDER_EVERY_SECONDS,
        sender.signature("partdash.alerts.tasks.send_reminders"),
        name="alert reminders",
    )
    sender.add_periodic_task(
        3600.0,
        sender.signature("partdash.alerts.tasks.plan_maintenance_windows"),
        name="maintenance windows",
    )
    if settings.PARTDASH_ALERTMANAGER_URL:
        sender.add_periodic_task(
            settings.PARTDASH_ALERTMANAGER_PUSH_SECONDS,
            sender.signature("partdash.alerts.tasks.push_to_alertmanager"),
            name="alerts to Alertmanager",
        )


@beat_init.connect
def start_the_watch(sender=None, **kwargs) -> None:
    """`stale_polls` and the heartbeat, in beat's process (`partdash.polling.watchdog`)."""
    from partdash.polling import watchdog

    watchdog.start()


@task_prerun.connect
def record_task_started(sender: Task | None = None, **kwargs) -> None:
    _record_task(sender, "started")


@task_postrun.connect
def record_task_finished(sender: Task | None = None, **kwargs) -> None:
    _record_task(sender, "finished")


def _record_task(task: Task | None, event: str) -> None:
    """The worker's liveness record (a Redis write of a millisecond); a Redis that does
    not answer costs the task at most a second, and nothing else."""
    from partdash.lib import liveness
    from partdash.lib.shared_redis import redis_client

    request = getattr(task, "request", None)
    node = getattr(request, "hostname", None)
    if not node or getattr(request, "is_eager", False):  # run in this process (`apply`)
        return
    with contextlib.suppress(redis.exceptions.RedisError):
        liveness.record_task(redis_client(timeout=1), node, event)
