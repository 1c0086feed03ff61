"""A poll's time limits leave room for the connect timeout, and their messages say which
limit fired and what the poll was doing; a poll whose worker child dies releases its lock
and says so."""

import os
import signal

import psutil
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from partdash.polling import scheduling
from partdash.polling.tasks import WORKER_LOST, poll_server_task
from partdash.servers.models import Server
from tests.conftest import CeleryProcesses, wait_until
from tests.fake_mysql import FakeMySQL


def make(name="limits", host="127.0.0.1", port=1, interval=10) -> Server:
    server = Server(name=name, host=host, port=port, user="root", poll_interval=interval)
    server.set_password("")
    server.save()
    return server


def test_the_soft_limit_leaves_room_for_the_connect_timeout(settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 5
    settings.PARTDASH_POLL_TIME_LIMIT = 300
    assert scheduling.time_limits(10) == (7, 9)  # was (4, 9): below the connect timeout
    assert scheduling.time_limits(60) == (49, 54)
    assert scheduling.time_limits(600) == (295, 300)
    for interval in (10, 60, 600):
        soft, hard = scheduling.time_limits(interval)
        assert settings.PARTDASH_CONNECT_TIMEOUT < soft < hard < interval


def test_a_short_interval_keeps_the_soft_limit_below_the_hard_one(settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 30
    soft, hard = scheduling.time_limits(10)
    assert (soft, hard) == (8, 9)  # no room for the connect timeout: just below hard


@pytest.mark.django_db
def test_the_message_names_the_limit_and_the_stage(settings, redis_server, monkeypatch):
    settings.PARTDASH_CONNECT_TIMEOUT = 5
    server = make(port=3399)

    def hangs(target, *deadline):
        raise SoftTimeLimitExceeded()  # as if the limit fired while connecting

    monkeypatch.setattr("partdash.polling.service.open_session", hangs)
    message = poll_server_task.apply(args=[server.pk]).get()
    expected = "poll stopped at its soft time limit of 7 s while connecting to 127.0.0.1:3399"
    assert message == expected
    server.refresh_from_db()
    assert server.last_error == expected
    assert server.status == "unreachable"


@pytest.mark.django_db(transaction=True)
def test_a_soft_limit_inside_a_store_transaction_leaves_the_store_usable(
    settings, redis_server, monkeypatch
):
    """Celery's soft limit fires once, wherever the task is: in make test it fired as the
    failure's store transaction began (the database's BEGIN sent, Django's atomic not
    entered), and every other process then found the SQLite store locked. The task ends
    what was left open and records the failure."""
    from django.db import connection

    settings.PARTDASH_CONNECT_TIMEOUT = 5
    server = make(port=3398)

    def interrupted(target, *deadline):
        connection.ensure_connection()
        connection.connection.cursor().execute("BEGIN")  # (the half-begun transaction)
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr("partdash.polling.service.open_session", interrupted)
    message = poll_server_task.apply(args=[server.pk]).get()

    assert (
        message == "poll stopped at its soft time limit of 7 s while connecting to 127.0.0.1:3398"
    )
    server.refresh_from_db()
    assert server.last_error == message and server.status == "unreachable"


def test_only_the_lost_polls_own_lock_is_released(redis_server):
    client = redis_server.client()
    with scheduling.poll_lock(5, timeout=30, token="task-a") as acquired:
        assert acquired
        assert client.get("partdash:poll:5") == b"task-a"
        assert scheduling.release_lost_lock(5, "task-b") is False  # another poll's lock
        assert client.get("partdash:poll:5") == b"task-a"
        assert scheduling.release_lost_lock(5, "task-a") is True
        assert client.get("partdash:poll:5") is None


def poll_child(worker: psutil.Process, port: int) -> psutil.Process | None:
    """The worker child with a connection to `port` open: the one polling it."""
    for child in worker.children():
        try:
            if any(c.raddr and c.raddr.port == port for c in child.net_connections("tcp")):
                return child
        except psutil.Error:
            continue
    return None


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_worker_child_killed_mid_poll_releases_the_lock_and_says_so(redis_server, tmp_path):
    processes = CeleryProcesses(redis_server.url, settings.DATABASES["default"]["NAME"], tmp_path)
    processes.env["PARTDASH_CONNECT_TIMEOUT"] = "60"  # the poll hangs while connecting
    with FakeMySQL(silent=True) as silent:
        server = make("black-hole", port=silent.port, interval=120)
        processes.start()
        try:
            client = redis_server.client()
            key = f"partdash:poll:{server.pk}"
            wait_until(lambda: client.get(key), 40, "the poll's lock", processes.logs)
            worker = psutil.Process(processes.processes[0].pid)
            child = wait_until(
                lambda: poll_child(worker, silent.port), 20, "the polling child", processes.logs
            )
            os.kill(child.pid, signal.SIGKILL)
            # The lock would otherwise be held for its timeout (113 s at this interval).
            wait_until(lambda: client.get(key) is None, 10, "the lock's release", processes.logs)

            def recorded():
                server.refresh_from_db()
                return server.last_error == WORKER_LOST

            wait_until(recorded, 10, "the lost worker's failure", processes.logs)
            assert server.status == "unreachable"
        finally:
            processes.stop()
