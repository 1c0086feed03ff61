"""The metadata store unavailable for a while: a PostgreSQL store stopped, a SQLite store
locked by another writer. The poll then fails with one clear line and exit status 1, and
the next poll, once the store is back, succeeds. Polls run as `manage.py poll` in their
own processes, against a store of the test's own."""

import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.conftest import wait_until
from tests.operations.pgserver import PostgresServer
from tests.pgstore import Fleet, manage, store_env
from tests.services import RedisServer


def register(env: dict[str, str], mariadb, *options: str) -> None:
    assert manage(env, "migrate", "-v0").returncode == 0
    where = ["--host", mariadb.host, "--port", str(mariadb.port), "--user", "root"]
    added = manage(env, "addserver", "db1", *where, *options)
    assert added.returncode == 0, added.stderr


def assert_polls(env: dict[str, str]) -> None:
    polled = manage(env, "poll", "db1")
    assert polled.returncode == 0, polled.stderr
    assert polled.stdout.startswith("db1: ") and "partitions seen" in polled.stdout


def assert_fails_in_one_line(polled: subprocess.CompletedProcess, cause: str) -> None:
    """Exit 1; the poll's line says the store is unavailable and why; no traceback."""
    assert polled.returncode == 1, (polled.stdout, polled.stderr)
    assert "Traceback" not in polled.stderr, polled.stderr
    lines = polled.stderr.splitlines()
    said = [line for line in lines if "metadata store unavailable: " in line and cause in line]
    assert said, lines


@pytest.fixture
def postgres_store():
    server = PostgresServer().start()
    yield server
    server.close()


def test_a_poll_while_the_postgresql_store_is_down_fails_clearly_and_the_next_succeeds(
    postgres_store, mariadb, tmp_path
):
    env = store_env(postgres_store.url(), tmp_path)
    register(env, mariadb)
    assert_polls(env)

    postgres_store.stop()
    down = manage(env, "poll", "db1")
    assert_fails_in_one_line(down, "Connection refused")

    postgres_store.start()
    assert_polls(env)


def snapshots(database_url: str) -> int | None:
    """How many polls the store holds; None while it does not answer."""
    try:
        with psycopg.connect(database_url, connect_timeout=2) as connection:
            return connection.execute("SELECT COUNT(*) FROM metrics_serversnapshot").fetchone()[0]
    except psycopg.OperationalError:
        return None


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_worker_and_beat_poll_again_by_themselves_once_a_restarted_postgresql_store_is_back(
    postgres_store, mariadb, tmp_path
):
    with RedisServer() as redis:
        env = store_env(
            postgres_store.url(),
            tmp_path,
            CELERY_BROKER_URL=redis.url,
            PARTDASH_REDIS_URL=redis.url,
            PARTDASH_DISPATCH_SECONDS="1",
        )
        register(env, mariadb, "--interval", "10")
        fleet = Fleet(env, tmp_path).start()
        try:
            store = postgres_store.url()
            wait_until(lambda: snapshots(store), 60, "the first poll", fleet.tails)
            postgres_store.stop()
            time.sleep(15)  # beat dispatches every second; a poll comes due meanwhile
            postgres_store.start()
            before = snapshots(store)
            wait_until(lambda: snapshots(store) > before, 40, "a poll after", fleet.tails)
            assert all(process.poll() is None for process in fleet.processes.values())
        finally:
            fleet.stop(cold=True)
    log = fleet.log("w1")
    # It met the store down, and dispatching said so in one line a tick.
    assert "no polls dispatched: metadata store unavailable: " in log, log[-3000:]


def hold_write_lock(database: Path, held: threading.Event, release: threading.Event) -> None:
    """Another writer: BEGIN IMMEDIATE on the store's file, held until `release` (a
    minute at most)."""
    connection = sqlite3.connect(database, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        held.set()
        release.wait(60)
        connection.execute("ROLLBACK")
    finally:
        connection.close()


def test_a_poll_while_another_writer_locks_the_sqlite_store_fails_clearly_and_the_next_succeeds(
    mariadb, tmp_path
):
    database = tmp_path / "partdash.sqlite3"
    env = store_env(f"sqlite:///{database}", tmp_path)
    register(env, mariadb)
    assert_polls(env)

    held, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(database, held, release), daemon=True)
    holder.start()
    assert held.wait(10), "the other writer never got the lock"
    try:
        locked = manage(env, "poll", "db1")
    finally:
        release.set()
    assert_fails_in_one_line(locked, "database is locked")

    holder.join(30)
    assert_polls(env)
    stored = sqlite3.connect(database).execute("SELECT COUNT(*) FROM metrics_serversnapshot")
    assert stored.fetchone()[0] == 2  # the locked-out poll stored nothing
