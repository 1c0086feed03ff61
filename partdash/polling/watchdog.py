"""Beat's watch, on a thread of beat's own: every PARTDASH_ALERT_STALE_CHECK_SECONDS it
evaluates `stale_polls` and sends its messages (`partdash.alerts.stale_polls`), and,
when every enabled server's polls ran, requests PARTDASH_HEARTBEAT_URL, so an outside
service (healthchecks-style) raises the alarm when the requests stop.

None of it needs a Celery worker: a worker that hangs or dies stops the polls, and beat
still tells. Beat's scheduler runs in its main thread, untouched: a slow store or SMTP
server delays this thread alone, and the heartbeat's request runs on a thread of its own
with a short timeout.
"""

import logging
import sys
import threading
import urllib.request
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from partdash.alerts import stale_polls
from partdash.servers.models import Server, backoff_delay

log = logging.getLogger(__name__)


def behind(server: Server, now: datetime) -> bool:
    """Whether the server's polls stopped running: its last poll (tried, success or not)
    is older than two of its gaps between polls (its interval, or its back-off while
    its polls fail). A new server counts from its registration."""
    gap = backoff_delay(server.poll_interval, server.consecutive_failures)
    last = server.last_poll_at or server.created_at
    slack = timedelta(seconds=settings.PARTDASH_DISPATCH_SECONDS)
    return now - last > timedelta(seconds=2 * gap) + slack


def polls_ran(servers: Iterable[Server], now: datetime) -> bool:
    """Every one of `servers` was polled on time (none is `behind`)."""
    return not any(behind(server, now) for server in servers)


def request_heartbeat(url: str, timeout: float) -> threading.Thread:
    """GET `url` on a thread of its own (never holding up the watch); failures logged."""

    def get() -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (the operator's URL)
                response.read(1024)
        except Exception as exc:  # noqa: BLE001 any failure: the next cycle asks again
            log.warning("heartbeat not delivered: %s", exc)

    thread = threading.Thread(target=get, name="partdash-heartbeat", daemon=True)
    thread.start()
    return thread


def watch_once(now: datetime | None = None) -> bool:
    """One cycle: `stale_polls`, then the heartbeat when every poll ran. Returns whether
    the polls all ran."""
    stale_polls.evaluate_and_send()
    now = now or timezone.now()
    ran = polls_ran(Server.objects.filter(enabled=True), now)
    if ran and settings.PARTDASH_HEARTBEAT_URL:
        request_heartbeat(settings.PARTDASH_HEARTBEAT_URL, settings.PARTDASH_HEARTBEAT_TIMEOUT)
    elif not ran:
        log.warning("polls are behind: no heartbeat this cycle")
    return ran


def watch(stopped: threading.Event) -> None:
    """Cycles until `stopped`; a cycle that fails (the store down) is logged, not fatal."""
    every = settings.PARTDASH_ALERT_STALE_CHECK_SECONDS
    while not stopped.wait(every):
        try:
            watch_once()
        except DatabaseError as exc:
            log.error("stale_polls not evaluated: %s", " ".join(str(exc).split())[:300])
        except Exception:
            log.exception("beat's watch cycle failed")
        finally:
            close_old_connections()


def log_to_stderr() -> None:
    """partdash's messages in beat's process straight to its standard error (its log).
    Beat redirects `sys.stderr` into its own logging, where the root handler Django's
    LOGGING set up writes back into it: every message of partdash's was dropped."""
    logger = logging.getLogger("partdash")
    handler = logging.StreamHandler(sys.__stderr__)
    handler.setFormatter(
        logging.Formatter("[%(asctime)s: %(levelname)s/%(threadName)s] %(message)s")
    )
    logger.addHandler(handler)
    logger.propagate = False


def start() -> threading.Event:
    """Start the watch on a daemon thread (it ends with beat); set the event to stop it."""
    import django

    django.setup()
    log_to_stderr()
    stopped = threading.Event()
    threading.Thread(target=watch, args=(stopped,), name="partdash-watch", daemon=True).start()
    log.info(
        "beat's watch: stale_polls every %g s%s",
        settings.PARTDASH_ALERT_STALE_CHECK_SECONDS,
        ", then the heartbeat URL" if settings.PARTDASH_HEARTBEAT_URL else "",
    )
    return stopped
