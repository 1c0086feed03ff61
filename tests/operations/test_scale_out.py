"""Scale-out, as on several hosts: a PostgreSQL metadata store, one Redis, beat, and two
Celery workers with names of their own (w1@, w2@; concurrency 2 each) polling four
private MariaDB servers every 10 s for about a minute. No server is ever polled twice at
once, not even when polls of every server are queued three times over at once (as a
second beat would), every poll is stored exactly once, both workers poll, and every
server gets the polls its interval promises."""

import re
import time
from collections import defaultdict
from contextlib import ExitStack
from datetime import timedelta
from itertools import pairwise

import psycopg
import pytest
from celery import Celery

from tests.operations.pgserver import dedicated_database
from tests.pgstore import Fleet, manage, store_env
from tests.services import MariaDB, RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SERVERS = 4
INTERVAL = 10
RUN_SECONDS = 65
WORKERS = ("w1", "w2")
DUPLICATES = 3  # polls of each server queued at once, mid-run, besides beat's
POLL_TASK = "partdash.polling.tasks.poll_server"

# [2026-11-22 22:01:08,123: INFO/ForkPoolWorker-1] Task partdash.polling.tasks.poll_server[ID]
# succeeded in 0.25s: 'db1: 0 partitions seen, ...' (then the warnings, one per line), or
# ... succeeded in 0.04s: 'skipped: already polling'
SUCCEEDED = re.compile(
    r"Task partdash\.polling\.tasks\.poll_server\[(?P<id>[^\]]+)\] succeeded in \S+: "
    r"'(?P<summary>[^\n]*)"
)


def polls_in(log: str) -> tuple[list[str], int]:
    """The ids of the polls a worker's log says it ran, and how many it skipped because
    another poll of the server was running."""
    ran, skipped = [], 0
    for match in SUCCEEDED.finditer(log):
        if match["summary"].startswith("skipped"):
            skipped += 1
        else:
            ran.append(match["id"])
    return ran, skipped


def overlapping(snapshots: list[tuple]) -> list[tuple]:
    """Pairs of polls of one server whose windows overlap. A poll's window, from its
    snapshot: from its start (`taken_at` less the `seconds` it took to collect) to its
    storing (`taken_at`), all of it under the server's poll lock."""
    by_server = defaultdict(list)
    for poll_id, server, taken_at, seconds in snapshots:
        by_server[server].append((taken_at - timedelta(seconds=seconds), taken_at, poll_id))
    pairs = []
    for windows in by_server.values():
        windows.sort()
        pairs += [(a, b) for a, b in pairwise(windows) if b[0] < a[1]]
    return pairs


def stored_snapshots(database_url: str) -> list[tuple]:
    """(poll id, server name, taken at, seconds) of every snapshot stored."""
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT s.poll_id, v.name, s.taken_at, s.seconds FROM metrics_serversnapshot s "
            "JOIN servers_server v ON v.id = s.server_id"
        )
        return [tuple(row) for row in rows]


def queue_duplicates(broker_url: str, database_url: str) -> None:
    """Queue DUPLICATES polls of every server at once, as a second beat would."""
    with psycopg.connect(database_url) as connection:
        server_ids = [row[0] for row in connection.execute("SELECT id FROM servers_server")]
    # Not the current app: partdash's tasks are shared tasks, which publish through the
    # current app; made current, this one sent every later test's polls in this process
    # to this test's Redis, stopped when the test ends ("Connection refused").
    sender = Celery(broker=broker_url, set_as_current=False)
    with sender.connection_for_write() as connection:
        for server_id in server_ids:  # side by side, so that they meet on free slots
            for _ in range(DUPLICATES):
                sender.send_task(POLL_TASK, args=[server_id], connection=connection)


def test_two_named_workers_share_the_polls_of_a_fleet_on_postgresql_never_twice_at_once(
    tmp_path,
):
    with ExitStack() as stack:
        database_url = stack.enter_context(dedicated_database())
        redis = stack.enter_context(RedisServer())
        targets = [stack.enter_context(MariaDB({"server_id": n + 1})) for n in range(SERVERS)]
        env = store_env(
            database_url,
            tmp_path,
            CELERY_BROKER_URL=redis.url,
            PARTDASH_REDIS_URL=redis.url,
            PARTDASH_DISPATCH_SECONDS="1",
        )
        migrated = manage(env, "migrate", "-v0")
        assert migrated.returncode == 0, migrated.stderr
        for n, target in enumerate(targets, 1):  # all due at once, as a fleet is
            added = manage(
                env, "addserver", f"db{n}", "--host", target.host, "--port", str(target.port),
                "--user", "root", "--interval", str(INTERVAL),
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
        fleet = Fleet(env, tmp_path, WORKERS)
        stack.callback(fleet.stop)
        fleet.start()
        started = time.monotonic()
        time.sleep(RUN_SECONDS / 2)
        queue_duplicates(redis.url, database_url)
        time.sleep(max(0.0, RUN_SECONDS - (time.monotonic() - started)))
        fleet.stop("beat")
        ran_for = time.monotonic() - started
        fleet.stop(*WORKERS)  # the polls under way finish first

        logs = {name: polls_in(fleet.log(name)) for name in WORKERS}
        snapshots = stored_snapshots(database_url)

    ran = {name: polls for name, (polls, _) in logs.items()}
    assert all(ran.values()), f"a worker ran no poll: { {n: len(p) for n, p in ran.items()} }"
    assert sum(skipped for _, skipped in logs.values()) >= 1, "no duplicate met the lock"
    assert overlapping(snapshots) == [], "a server was polled twice at once"
    poll_ids = [poll_id for poll_id, *_ in snapshots]
    assert len(poll_ids) == len(set(poll_ids)), "a poll was stored twice"
    assert sorted(poll_ids) == sorted(ran["w1"] + ran["w2"]), (
        "the snapshots are not the polls the workers ran, one each"
    )
    expected = 1 + int(ran_for // INTERVAL)  # at once, then every interval
    per_server = defaultdict(int)
    for _, server, *_ in snapshots:
        per_server[server] += 1
    for n in range(1, SERVERS + 1):
        assert expected - 2 <= per_server[f"db{n}"] <= expected + DUPLICATES, (
            f"db{n}: {per_server[f'db{n}']} polls in {ran_for:.0f} s, expected about {expected}"
        )
