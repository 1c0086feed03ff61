"""Servers whose polls keep failing back off and only take their share of worker slots:
eight black holes (twice the worker's concurrency, as when a network partition takes
part of the fleet away) no longer delay a healthy server polled every 10 s."""

import socket
import statistics
import time
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from partdash.lib import shared_redis
from partdash.metrics.models import ServerSnapshot
from partdash.polling import scheduling
from partdash.servers.models import Server, backoff_delay
from tests.conftest import CeleryProcesses, wait_until


def test_the_delay_doubles_from_the_second_failure_up_to_the_ceiling(settings):
    settings.PARTDASH_POLL_BACKOFF_MAX_SECONDS = 600
    assert [backoff_delay(10, n) for n in range(8)] == [10, 10, 20, 40, 80, 160, 320, 600]
    assert backoff_delay(10, 10_000) == 600  # no overflow, whatever the count
    assert backoff_delay(3600, 5) == 3600  # never below the interval itself


@pytest.mark.django_db
def test_failures_in_a_row_push_the_next_poll_out_and_a_success_resets(settings):
    settings.PARTDASH_POLL_BACKOFF_MAX_SECONDS = 600
    server = Server(name="flaky", host="127.0.0.1", port=1, user="root", poll_interval=10)
    server.save()
    started = timezone.now()
    assert scheduling.record_outcome(server.pk, False, started) == 1
    server.refresh_from_db()
    assert server.next_poll_at is None  # the first failure keeps the interval
    assert server.backoff is None
    scheduling.record_outcome(server.pk, False, started)
    assert scheduling.record_outcome(server.pk, False, started) == 3
    server.refresh_from_db()
    assert server.next_poll_at == started + timedelta(seconds=40)
    assert server.backoff == (
        "3 polls failed in a row: polled every 40 s instead of every 10 s until a poll succeeds"
    )
    assert scheduling.record_outcome(server.pk, True, started) == 0
    server.refresh_from_db()
    assert (server.consecutive_failures, server.backoff) == (0, None)


@pytest.mark.django_db
def test_the_api_says_why_a_server_is_polled_less_often(staff_api):
    server = Server(name="gone", host="127.0.0.1", port=1, user="root", poll_interval=60)
    server.save()
    Server.objects.filter(pk=server.pk).update(consecutive_failures=4)
    body = staff_api.get(f"/api/v1/servers/{server.pk}/").json()
    assert body["consecutive_failures"] == 4
    assert body["backoff"].startswith("4 polls failed in a row: polled every 480 s")


def test_failing_servers_get_at_most_their_slots(redis_server, settings):
    settings.PARTDASH_REDIS_URL = redis_server.url
    shared_redis._redis.cache_clear()
    with scheduling.failing_server_slot("w@h", 2, 30, "a") as first:
        with scheduling.failing_server_slot("w@h", 2, 30, "b") as second:
            with scheduling.failing_server_slot("w@h", 2, 30, "c") as third:
                assert (first, second, third) == (True, True, False)
            with scheduling.failing_server_slot("other@h", 2, 30, "d") as elsewhere:
                assert elsewhere  # each worker has its own share
        with scheduling.failing_server_slot("w@h", 2, 30, "e") as freed:
            assert freed
    # A poll whose worker died: its slot is freed by its task id, others' are left.
    client = redis.Redis.from_url(redis_server.url)
    client.set("partdash:failing-slot:w@h:0", "lost", ex=30)
    client.set("partdash:failing-slot:w@h:1", "alive", ex=30)
    scheduling.release_failing_slot("lost")
    assert client.get("partdash:failing-slot:w@h:0") is None
    assert client.get("partdash:failing-slot:w@h:1") == b"alive"
    client.delete("partdash:failing-slot:w@h:1")


def test_the_share_is_half_the_concurrency_unless_set(settings):
    settings.PARTDASH_FAILING_POLL_SLOTS = 0
    assert [scheduling.failing_slots(n) for n in (None, 1, 2, 4, 9)] == [1, 1, 1, 2, 4]
    settings.PARTDASH_FAILING_POLL_SLOTS = 3
    assert scheduling.failing_slots(4) == 3


@pytest.fixture
def black_holes():
    """Listeners that complete the TCP handshake (the kernel does, from the backlog) and
    never say a word: a server behind a network partition, as a poll sees it."""
    sockets = []
    for _ in range(8):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        sockets.append(listener)
    yield [listener.getsockname()[1] for listener in sockets]
    for listener in sockets:
        listener.close()


@pytest.mark.xdist_group("black-holes")  # it times the healthy server's polls: see test_faults
def test_eight_black_holes_do_not_delay_a_healthy_server(
    transactional_db, redis_server, tmp_path, black_holes, mariadb
):
    """Was: gaps of 35-38 s between the healthy server's polls (interval 10 s)."""
    healthy = Server(
        name="healthy", host=mariadb.host, port=mariadb.port, user="root", poll_interval=10
    )
    healthy.set_password("")
    healthy.save()
    for number, port in enumerate(black_holes):
        hole = Server(name=f"hole{number}", host="127.0.0.1", port=port, user="root")
        hole.poll_interval = 10
        hole.set_password("")
        hole.save()

    from django.conf import settings

    processes = CeleryProcesses(redis_server.url, settings.DATABASES["default"]["NAME"], tmp_path)
    # Each black hole holds a slot 8 s of every 10: with nothing held back, eight of them
    # need 64 slot-seconds of the 40 that 4 slots have.
    processes.env["PARTDASH_CONNECT_TIMEOUT"] = "8"
    processes._spawn("worker", "worker", "--concurrency=4", "--pool=prefork", "-n", "load@%h")
    processes._spawn("beat", "beat", f"--schedule={tmp_path / 'beat-schedule'}")
    client = redis.Redis.from_url(redis_server.url)
    busiest = 0
    try:
        wait_until(
            lambda: ServerSnapshot.objects.filter(server=healthy).exists(),
            60,
            "the healthy server's first poll",
            processes.logs,
        )
        deadline = time.monotonic() + 75
        while time.monotonic() < deadline:
            busiest = max(busiest, len(client.keys("partdash:failing-slot:*")))
            time.sleep(0.2)
        measured_until = timezone.now()
        # Each black hole failed twice (backed off): on a loaded machine the 75 s above
        # may not be enough for all eight, at 8 s a failure and two slots for them.
        wait_until(
            lambda: (
                not Server.objects.exclude(pk=healthy.pk)
                .filter(consecutive_failures__lt=2)
                .exists()
            ),
            90,
            "two failures of every black hole",
            processes.logs,
        )
    finally:
        processes.stop()

    taken = list(
        ServerSnapshot.objects.filter(server=healthy, taken_at__lte=measured_until)
        .order_by("taken_at")
        .values_list("taken_at", flat=True)
    )
    gaps = [(b - a).total_seconds() for a, b in zip(taken, taken[1:], strict=False)]
    steady = gaps[2:]  # the black holes' first round (no failure known yet) is over
    print(f"healthy gaps (s): {[round(g, 1) for g in gaps]}; busiest failing slots: {busiest}")
    assert len(steady) >= 4, processes.logs()
    assert statistics.median(steady) < 12
    # Was 35-38 s. A gap of 15.4 s was seen with both passes of `make test` keeping the
    # two cores busy (the healthy server's poll waited for a core, not for a slot): the
    # bound tells the fault from a busy machine, with room for the latter.
    assert max(steady) < 18, processes.logs()
    assert busiest <= 2  # half of the 4 slots at most

    holes = Server.objects.exclude(pk=healthy.pk)
    for hole in holes:
        assert hole.status == "unreachable"
        assert hole.consecutive_failures >= 2
        assert hole.backoff and "polled every" in hole.backoff
        assert "8 s" in hole.last_error or "timed out" in hole.last_error, hole.last_error
    healthy.refresh_from_db()
    assert healthy.status in ("ok", "degraded") and healthy.consecutive_failures == 0
