"""Celery tasks: thin, idempotent, and they carry a server id, never a password."""

import logging
import time
from contextlib import nullcontext

from billiard.exceptions import WorkerLostError
from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import task_failure, worker_init
from django import db
from django.db import DatabaseError
from django.utils import timezone

from partdash.lib.commands import store_unavailable
from partdash.polling import scheduling
from partdash.polling.service import PollDeadline, current_stage, poll_server, record_failure
from partdash.servers.models import Server

log = logging.getLogger(__name__)

POLL_TASK = scheduling.POLL_TASK  # queued by name there (no import cycle)
DISPATCH_TASK = "partdash.polling.tasks.dispatch_due_polls"
# The names these tasks had before polling/ was split out of collector/. Messages an older
# release queued (a poll, beat's tick) still carry them, so they stay routable to the same
# code until no such message can be left (see docs/development.md).
LEGACY_POLL_TASK = "partdash.collector.tasks.poll_server"
LEGACY_DISPATCH_TASK = "partdash.collector.tasks.dispatch_due_polls"
POLL_TASKS = (POLL_TASK, LEGACY_POLL_TASK)
WORKER_LOST = (
    "the worker running this poll was lost (killed, SIGKILL or out of memory); "
    "the next poll runs on schedule"
)


def _dispatch_due_polls() -> int:
    """Beat's single entry: queue a poll for every server that is due. While the
    metadata store is down or locked, one line a tick says so (no traceback)."""
    try:
        return scheduling.dispatch_due()
    except DatabaseError as exc:
        log.error("no polls dispatched: %s", store_unavailable(exc))
        return 0


dispatch_due_polls = shared_task(name=DISPATCH_TASK, ignore_result=True)(_dispatch_due_polls)
shared_task(name=LEGACY_DISPATCH_TASK, ignore_result=True)(_dispatch_due_polls)


def time_limit_message(soft: int) -> str:
    """Which limit fired, and what the poll was doing when it did."""
    return f"poll stopped at its soft time limit of {soft} s while {current_stage()}"


# The worker's concurrency, learnt in its main process before the pool's children are
# forked (they inherit it): half of it is the share of slots for failing servers.
worker_slots: int | None = None


@worker_init.connect
def remember_concurrency(sender=None, **kwargs) -> None:
    global worker_slots
    worker_slots = getattr(sender, "concurrency", None)


def _poll_server(self, server_id: int, forced: bool = False) -> str:
    """Poll one server unless it is disabled, gone, or already being polled. A server
    whose last poll failed is polled only in a free slot of those kept for failing
    servers (not when asked for with Poll now, `forced`); otherwise this poll is left
    out, and the next one is due at its backed-off time. A Poll now's poll, once ended,
    lets the next Poll now queue another."""
    started = time.monotonic()  # the soft limit counts from here
    if not forced:
        return _poll_task(self, server_id, forced, started)
    try:
        return _poll_task(self, server_id, forced, started)
    finally:
        scheduling.close_poll_now_window(server_id, self.request.id)


poll_server_task = shared_task(name=POLL_TASK, bind=True, ignore_result=True)(_poll_server)
shared_task(name=LEGACY_POLL_TASK, bind=True, ignore_result=True)(_poll_server)


def _poll_task(self, server_id: int, forced: bool, started: float) -> str:
    try:
        server = Server.objects.filter(pk=server_id, enabled=True).first()
    except DatabaseError as exc:
        message = f"poll of server {server_id} skipped: {store_unavailable(exc)}"
        log.error("%s", message)
        return message
    if server is None:
        return "skipped: server disabled or deleted"
    soft, hard = scheduling.time_limits(server.poll_interval)
    slots = scheduling.failing_slots(worker_slots)
    node = self.request.hostname or "local"
    slot = (
        scheduling.failing_server_slot(node, slots, timeout=hard + 5, token=self.request.id)
        if server.consecutive_failures and not forced
        else nullcontext(True)
    )
    with slot as has_slot:
        if not has_slot:
            log.info(
                "poll of %s left out: the %d slots for failing servers are busy", server, slots
            )
            return f"left out: the {slots} slots for failing servers are busy"
        with scheduling.poll_lock(server_id, timeout=hard + 5, token=self.request.id) as acquired:
            if not acquired:
                log.info("poll of %s skipped: another poll is running", server.name)
                return "skipped: already polling"
            soft = _soft_limit(self.request) or soft
            deadline = PollDeadline.of(server, started, soft)
            return _poll(server, soft, self.request.id, deadline)


def _end_interrupted_transaction() -> None:
    """Celery's soft limit may have fired inside a store transaction's opening (the
    database's BEGIN sent, Django's atomic not entered): a SQLite store then stays locked
    for every other process ("database is locked", make test). Outside any atomic block
    of Django's, nothing of this connection's may be open: roll it back."""
    raw = db.connection.connection
    if raw is not None and not db.connection.in_atomic_block:
        raw.rollback()


def _soft_limit(request) -> int | None:
    """The soft time limit Celery runs this task under (queued with the server's limits
    then), which may differ from what its interval gives now."""
    limits = getattr(request, "timelimit", None) or (None, None)
    return int(limits[1]) if limits[1] else None


def _poll(server: Server, soft: int, poll_id: str, deadline: PollDeadline) -> str:
    """Poll, then count the outcome towards the server's back-off."""
    started = timezone.now()
    try:
        report = poll_server(server, poll_id=poll_id, deadline=deadline)
    except SoftTimeLimitExceeded:
        _end_interrupted_transaction()
        message = time_limit_message(soft)
        record_failure(server, message)
        log.error("%s: %s", server.name, message)
        scheduling.record_outcome(server.pk, False, started)
        return message
    scheduling.record_outcome(server.pk, report.ok, started)
    return report.summary


@task_failure.connect
def poll_worker_lost(sender=None, task_id=None, exception=None, args=None, **kwargs) -> None:
    """A poll's worker child died (SIGKILL, out of memory): the worker's main process
    releases the server's poll lock, which the dead child held, and records why."""
    if getattr(sender, "name", None) not in POLL_TASKS or not isinstance(
        exception, WorkerLostError
    ):
        return
    server_id = (args or [None])[0]
    server = Server.objects.filter(pk=server_id).first()
    if server is None or task_id is None:
        return
    released = scheduling.release_lost_lock(server_id, task_id)
    scheduling.release_failing_slot(task_id)
    scheduling.close_poll_now_window(server_id, task_id)  # if a Poll now queued it
    log.error("%s: %s (lock released: %s)", server.name, WORKER_LOST, released)
    record_failure(server, WORKER_LOST)
    scheduling.record_outcome(server.pk, False, timezone.now())
