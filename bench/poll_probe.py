"""The fleet benchmark's worker: partdash's own Celery app, plus a record of every poll.

`celery -A poll_probe worker` (with bench/ on PYTHONPATH) runs exactly what `make up`'s
`celery -A partdash worker` runs; this module only adds two signal receivers that append
one JSON line per poll start and end to $PARTDASH_BENCH_POLL_LOG, so the benchmark knows
when each poll began (its lateness), which worker ran it, and whether it overlapped
another poll of the same server. A poll's start is the moment its worker child began the
task (`task_prerun`): failed polls store no snapshot, and `last_poll_at` is overwritten,
so neither could give a failing server's history.
"""

import json
import os
import time

from celery.signals import task_postrun, task_prerun

from partdash.celery import app

POLL_TASK = "partdash.collector.tasks.poll_server"  # the tasks cannot be imported before Django

__all__ = ["app"]


def _append(record: dict) -> None:
    """One line per write with O_APPEND: lines from several processes never interleave."""
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(os.environ["PARTDASH_BENCH_POLL_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _poll_fields(task, task_id: str, args) -> dict:
    return {
        "task_id": task_id,
        "server_id": (args or [None])[0],
        "worker": task.request.hostname,
        "pid": os.getpid(),
        "at": time.time(),
    }


@task_prerun.connect
def poll_started(sender=None, task_id=None, task=None, args=None, **kwargs) -> None:
    if getattr(task, "name", None) == POLL_TASK:
        _append({"event": "start", **_poll_fields(task, task_id, args)})


@task_postrun.connect
def poll_ended(sender=None, task_id=None, task=None, args=None, retval=None, **kwargs) -> None:
    if getattr(task, "name", None) == POLL_TASK:
        _append({"event": "end", "result": str(retval)[:300], **_poll_fields(task, task_id, args)})
