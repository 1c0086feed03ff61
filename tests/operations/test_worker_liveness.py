"""Issue 45's proof on real processes: `make up`'s supervisor (scripts/supervise.py, run
as `make up` runs it, on the test database and a Redis of the test's own), a real
MariaDB polled every 10 s, a real SMTP server (aiosmtpd) and a heartbeat receiver.

- Every process of the worker stopped (SIGSTOP): beat's own thread sends the
  `stale_polls` email while the worker is still stopped; within the stall limit plus
  two intervals the supervisor has killed it (a stopped process acts on no TERM),
  started it again, saying why, and polls resume; `stale_polls` resolves.
- Redis restarted while a task is unacknowledged (the kombu 5.7 case, where the worker
  can stop consuming for good): polls resume within the same bound.
- The heartbeat URL is requested while polls run.

One test, settings shortened (stall 16 s, `stale_polls` at 1.2 intervals, checked every
second): the processes (supervisor, worker, beat, web, demo step) cost about 15 s of
CPU in all, so they are started once.
"""

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from partdash.alerts.models import Alert
from partdash.servers.models import Server
from tests.alerts.mailbox import Mailbox
from tests.conftest import ROOT, wait_until
from tests.pgstore import database_url
from tests.polling.heartbeat import HeartbeatReceiver
from tests.services import RedisServer, free_port, log_tail

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.timeout(360)]

INTERVAL = 10  # the watched server's poll interval, seconds
STALL = 16  # PARTDASH_WORKER_STALL_SECONDS
# `stale_polls` fires 12 s after the last success: before the stall limit has passed.
STALE_INTERVALS = 1.2
# The bound. Past the stall limit, a restart takes: up to two checks (every stall/6
# s) to see it, the warm stop, the worker's start (imports, connecting) and a poll: about
# 10 s on a quiet two-core machine, up to twice that beside the rest of `make test`.
RESUME_WITHIN = STALL + 2 * INTERVAL


class Supervised:
    """scripts/supervise.py in its own session, as `make up` runs it, its output kept."""

    def __init__(self, var: Path, env: dict[str, str]) -> None:
        (var / "log").mkdir(parents=True)
        self.var = var
        self.output_file = var / "supervise.out"
        argv = [sys.executable, "scripts/supervise.py", "--var", str(var)]
        argv += ["--port", str(free_port()), "--workers", "2"]
        with self.output_file.open("wb") as out:
            self.process = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.output_file.read_text(errors="replace")

    def logs(self) -> str:
        tails = log_tail(*(self.var / "log" / f"{n}.log" for n in ("worker", "beat")))
        return f"{self.output()[-3000:]}\n{tails}"

    def worker_processes(self) -> list[psutil.Process]:
        """The worker's main process and its pool."""
        for child in psutil.Process(self.process.pid).children():
            if " worker " in " ".join(child.cmdline()) + " ":
                return [child, *child.children(recursive=True)]
        return []

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def heartbeats():
    server = HeartbeatReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def own_redis():
    """A Redis of this test's own: it is restarted."""
    with RedisServer() as server:
        yield server


def environment(redis_url: str, mailbox: Mailbox, heartbeats: HeartbeatReceiver) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DEBUG": "1",
        "DATABASE_URL": database_url(settings.DATABASES["default"]["NAME"]),
        "CELERY_BROKER_URL": redis_url,
        "PARTDASH_REDIS_URL": redis_url,
        "CELERY_SKIP_CHECKS": "1",
        "PARTDASH_DEMO_DSN": "mysql://root@127.0.0.1:1/",  # no demo server
        "PARTDASH_DISPATCH_SECONDS": "1",
        "PARTDASH_CONNECT_TIMEOUT": "4",
        "PARTDASH_WORKER_STALL_SECONDS": str(STALL),
        "PARTDASH_ALERT_STALE_POLL_INTERVALS": str(STALE_INTERVALS),
        "PARTDASH_ALERT_STALE_CHECK_SECONDS": "1",
        "PARTDASH_HEARTBEAT_URL": heartbeats.url("/ping/watch-1"),
        "PARTDASH_HEARTBEAT_TIMEOUT": "2",
        "ALERT_EMAILS": "ops@example.com",
        "DEFAULT_FROM_EMAIL": "partdash@example.com",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(mailbox.port),
        "EMAIL_TIMEOUT": "3",
    }


def last_success(server: Server) -> datetime | None:
    return Server.objects.filter(pk=server.pk).values_list("last_success_at", flat=True).first()


def stale_polls_emails(mailbox: Mailbox, kind: str) -> list[str]:
    return [e.subject for e in mailbox.emails() if f"{kind} stale_polls" in e.subject]


def stale_polls_open() -> bool:
    return Alert.objects.filter(rule="stale_polls", state__in=("pending", "firing")).exists()


def stop_between_writes(processes: list[psutil.Process]) -> None:
    """SIGSTOP every process, at a moment when none of them holds the SQLite store's write
    lock: a writer stopped holding it would stop every process's writes, beat's too
    (docs/production.md says so). Continued and stopped again until then."""
    store = settings.DATABASES["default"]["NAME"]
    for _ in range(50):
        for process in processes:
            process.suspend()
        try:
            with contextlib.closing(sqlite3.connect(store, timeout=0.5)) as connection:
                connection.execute("BEGIN IMMEDIATE")
                connection.rollback()
            return
        except sqlite3.OperationalError:
            for process in processes:
                process.resume()
            time.sleep(0.1)
    pytest.fail("the worker held the store's write lock at every try")


def silent_listener() -> socket.socket:
    """A port that accepts connections and never says a word: a poll of it holds its task
    (unacknowledged) until the connect timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return listener


def test_a_stopped_worker_is_told_restarted_and_polls_resume(
    tmp_path, mariadb, make_server, own_redis, heartbeats
):
    mailbox = Mailbox().start()
    watched = make_server(mariadb, name="watched", poll_interval=INTERVAL)
    up = Supervised(tmp_path / "var", environment(own_redis.url, mailbox, heartbeats))
    listener = silent_listener()
    try:
        wait_until(lambda: "partdash is at" in up.output(), 60, "the supervisor", up.logs)
        first = wait_until(lambda: last_success(watched), 60, "the first poll", up.logs)
        # A second poll: the worker has answered the supervisor's pings by then (a worker
        # that never answered is given the stall limit from its start).
        wait_until(lambda: last_success(watched) > first, 30, "a second poll", up.logs)
        wait_until(lambda: heartbeats.times, 30, "a heartbeat while polls run", up.logs)
        # Registered before the processes started, it may have gone stale once already.
        wait_until(lambda: not stale_polls_open(), 20, "no stale_polls alert open", up.logs)
        fired = len(stale_polls_emails(mailbox, "FIRING"))

        # -- every process of the worker stopped ------------------------------------------
        stopped = up.worker_processes()
        assert len(stopped) == 3, stopped  # its main process and a pool of two
        stop_between_writes(stopped)
        frozen_at, before = time.monotonic(), last_success(watched)

        wait_until(
            lambda: len(stale_polls_emails(mailbox, "FIRING")) > fired, 20, "stale_polls", up.logs
        )
        # Sent by beat while every worker process was still stopped.
        assert all(p.status() == psutil.STATUS_STOPPED for p in stopped), stopped
        told = time.monotonic() - frozen_at

        wait_until(
            lambda: (last_success(watched) or before) > before,
            RESUME_WITHIN + 10,
            "polls to resume",
            up.logs,
        )
        resumed = time.monotonic() - frozen_at
        assert resumed <= RESUME_WITHIN, up.logs()
        assert "worker stalled: it has not answered a ping for " in up.output()
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in stopped)
        wait_until(lambda: not stale_polls_open(), 20, "stale_polls to resolve", up.logs)
        beats = len(heartbeats.times)
        wait_until(lambda: len(heartbeats.times) > beats, 10, "heartbeats again", up.logs)

        # -- Redis restarted while a task is unacknowledged --------------------------------
        silent = Server(name="silent", host="127.0.0.1", port=listener.getsockname()[1])
        silent.poll_interval, silent.user = INTERVAL, "root"
        silent.save()
        broker = own_redis.client()
        wait_until(lambda: broker.hlen("unacked"), 30, "a task in flight", up.logs)
        own_redis.restart()  # no persistence: the queue and the unacknowledged task gone
        restarted_at, before = time.monotonic(), last_success(watched)
        wait_until(
            lambda: last_success(watched) > before,
            RESUME_WITHIN + 10,
            "polls to resume after Redis restarted",
            up.logs,
        )
        after_redis = time.monotonic() - restarted_at
        assert after_redis <= RESUME_WITHIN, up.logs()
        assert up.process.poll() is None, up.logs()
    finally:
        up.stop()
        listener.close()
        mailbox.stop()
    restarts = up.output().count("worker stalled: ")
    print(
        f"stale_polls told {told:.1f} s after the stop; polls resumed {resumed:.1f} s after "
        f"it and {after_redis:.1f} s after Redis restarted; {restarts} stalled restart(s)"
    )
