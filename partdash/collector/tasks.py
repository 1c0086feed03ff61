"""Celery tasks: thin, idempotent, and they carry a server id, never a password."""

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from partdash.collector import scheduling
from partdash.collector.service import poll_server, record_failure
from partdash.servers.models import Server

log = logging.getLogger(__name__)


@shared_task(name="partdash.collector.tasks.dispatch_due_polls", ignore_result=True)
def dispatch_due_polls() -> int:
    """Beat's single entry: queue a poll for every server that is due."""
    return scheduling.dispatch_due()


@shared_task(name="partdash.collector.tasks.poll_server", bind=True, ignore_result=True)
def poll_server_task(self, server_id: int) -> str:
    """Poll one server unless it is disabled, gone, or already being polled."""
    server = Server.objects.filter(pk=server_id, enabled=True).first()
    if server is None:
        return "skipped: server disabled or deleted"
    _, hard = scheduling.time_limits(server.poll_interval)
    with scheduling.poll_lock(server_id, timeout=hard + 5) as acquired:
        if not acquired:
            log.info("poll of %s skipped: another poll is running", server.name)
            return "skipped: already polling"
        try:
            return poll_server(server, poll_id=self.request.id).summary
        except SoftTimeLimitExceeded:
            message = f"poll exceeded its time limit of {hard}s"
            record_failure(server, message)
            log.error("%s: %s", server.name, message)
            return message
