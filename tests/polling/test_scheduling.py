"""When polls happen: due servers are claimed once, disabled ones never, and a server's
polls never overlap."""

import json
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.lib import shared_redis
from partdash.polling import scheduling
from partdash.polling.tasks import poll_server_task
from partdash.servers.models import Server
from tests import builders

pytestmark = pytest.mark.django_db


def queued_server_ids(redis_server) -> list[int]:
    import base64

    ids = []
    for raw in redis_server.client().lrange("celery", 0, -1):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        ids.append(args[0])
    return ids


@pytest.fixture
def empty_queue(redis_server):
    redis_server.client().delete("celery")
    yield
    redis_server.client().delete("celery")


def make(name: str, **fields) -> Server:
    return Server.objects.create(name=name, host="127.0.0.1", port=1, user="u", **fields)


def at_its_offset(server: Server) -> bool:
    """Whether the server's next poll falls at its own offset into the interval."""
    offset = (server.pk * 0.6180339887498949) % 1 * server.poll_interval
    off = (server.next_poll_at.timestamp() - offset) % server.poll_interval
    return min(off, server.poll_interval - off) < 1e-3


def test_a_due_server_is_claimed_exactly_once():
    server = make("a", poll_interval=60)
    assert scheduling.claim(server.pk) == server
    assert scheduling.claim(server.pk) is None
    server.refresh_from_db()
    assert 29 <= (server.next_poll_at - timezone.now()).total_seconds() <= 90
    assert at_its_offset(server)


def test_the_next_poll_is_due_one_interval_after_this_one_was_due_not_after_it_was_seen():
    """Beat looks every few seconds: counting from when it noticed, a 30 s interval
    became about 35 s (the fleet benchmark measured a p95 lateness of 5.2 s)."""
    due = timezone.now() - timedelta(seconds=4)  # noticed at the next dispatch tick (5 s)
    server = make("a", poll_interval=30, next_poll_at=due)
    assert scheduling.claim(server.pk) == server
    server.refresh_from_db()
    assert server.next_poll_at == due + timedelta(seconds=30)


def test_a_poll_noticed_late_keeps_its_server_s_phase():
    """The dispatch waited behind busy workers: noticed 20 s late of 60 (four ticks), the
    next poll is still due one interval after this one was due. Counted from the late
    dispatch, every server it claimed would fall due together from then on."""
    due = timezone.now() - timedelta(seconds=20)
    servers = [
        make(name, poll_interval=60, next_poll_at=due - timedelta(seconds=n))
        for n, name in enumerate("abc")
    ]
    for server in servers:
        assert scheduling.claim(server.pk) == server
        server.refresh_from_db()
    assert [s.next_poll_at for s in servers] == [
        due - timedelta(seconds=n) + timedelta(seconds=60) for n in range(3)
    ]


def test_a_poll_due_long_ago_is_next_due_at_its_offset_half_an_interval_on_or_more():
    server = make("a", poll_interval=30, next_poll_at=timezone.now() - timedelta(minutes=5))
    assert scheduling.claim(server.pk) == server
    server.refresh_from_db()
    assert 14 <= (server.next_poll_at - timezone.now()).total_seconds() <= 45
    assert at_its_offset(server)


def test_servers_added_together_are_polled_spread_over_the_interval():
    """1,000 servers added at once are all due, and claimed, at once: their next polls
    fall evenly over the interval rather than all together, interval after interval."""
    Server.objects.bulk_create(
        Server(name=f"s{n:04d}", host="127.0.0.1", port=1, user="u", poll_interval=600)
        for n in range(1000)
    )
    started = timezone.now()
    for server_id in Server.objects.values_list("pk", flat=True):
        assert scheduling.claim(server_id) is not None
    claiming = (timezone.now() - started).total_seconds()  # (seconds, on a busy machine)
    due = [
        (at - started).total_seconds()
        for at in Server.objects.values_list("next_poll_at", flat=True)
    ]
    assert 300 <= min(due) and max(due) <= 900 + claiming
    per_minute = Counter(int(seconds // 60) for seconds in due)
    assert len(per_minute) >= 10  # (each of the ten minutes the interval spans, or 11)
    assert max(per_minute.values()) <= 110, sorted(per_minute.items())


def test_a_forced_claim_wins_even_when_not_due():
    """As a new server's first poll is claimed (saved, it is polled at once): the next
    falls at its offset, or servers added together would stay together."""
    server = make("a", poll_interval=60, next_poll_at=timezone.now() + timedelta(minutes=5))
    assert scheduling.claim(server.pk) is None
    assert scheduling.claim(server.pk, force=True) == server
    server.refresh_from_db()
    assert 29 <= (server.next_poll_at - timezone.now()).total_seconds() <= 90
    assert at_its_offset(server)


def test_dispatch_queues_only_due_enabled_servers(empty_queue, redis_server):
    due = make("due", next_poll_at=timezone.now() - timedelta(seconds=1))
    new = make("new")
    make("later", next_poll_at=timezone.now() + timedelta(minutes=1))
    make("disabled", enabled=False)

    assert scheduling.dispatch_due() == 2
    assert sorted(queued_server_ids(redis_server)) == sorted([due.pk, new.pk])
    assert scheduling.dispatch_due() == 0  # nothing is due twice


def test_a_new_or_edited_server_is_polled_at_once(
    empty_queue, redis_server, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        server = make("a", next_poll_at=None)
    assert queued_server_ids(redis_server) == [server.pk]
    with django_capture_on_commit_callbacks(execute=True):
        server.poll_interval = 120
        server.save()
    assert queued_server_ids(redis_server) == [server.pk, server.pk]


def test_a_queued_message_carries_the_server_id_and_no_password(empty_queue, redis_server):
    server = make("a")
    server.set_password("s3cret-Pa55word")
    server.save()
    scheduling.request_poll(server.pk, force=True)
    raw = b"".join(redis_server.client().lrange("celery", 0, -1))
    assert queued_server_ids(redis_server) == [server.pk]
    assert b"s3cret-Pa55word" not in raw
    assert server.password_token.encode() not in raw


def test_a_poll_queued_by_the_tasks_name_is_the_message_the_task_itself_sends(
    empty_queue, redis_server
):
    """`enqueue` names the poll task rather than importing it (the two modules imported
    each other): what reaches the broker is what `poll_server_task.apply_async` sends,
    its options (time limits, expiry, ignore_result) and route included."""
    server = make("a", poll_interval=60)
    soft, hard = scheduling.time_limits(server.poll_interval)
    assert scheduling.enqueue(server, forced=True, task_id="by-name")
    poll_server_task.apply_async(
        args=[server.pk],
        kwargs={"forced": True},
        soft_time_limit=soft,
        time_limit=hard,
        expires=server.poll_interval,
        task_id="by-task",
    )
    queued = [json.loads(raw) for raw in redis_server.client().lrange("celery", 0, -1)]
    by_name, by_task = sorted(queued, key=lambda message: message["headers"]["id"])
    for message, task_id in ((by_name, "by-name"), (by_task, "by-task")):
        headers, properties = message["headers"], message["properties"]
        assert headers.pop("expires")  # moments apart: each its own
        assert headers.pop("id") == headers.pop("root_id") == task_id
        assert properties.pop("correlation_id") == task_id
        properties["delivery_tag"] = properties["delivery_info"] = None  # the broker's
    assert by_name == by_task
    assert by_name["headers"]["task"] == "partdash.polling.tasks.poll_server"


def test_time_limits_stay_below_the_poll_interval():
    for interval in (10, 60, 3600):
        soft, hard = scheduling.time_limits(interval)
        assert soft < hard < interval
    assert scheduling.time_limits(3600)[1] <= 300


def test_a_broker_outage_leaves_the_server_due(settings):
    from partdash.celery import app
    from tests.conftest import reset_broker_pools
    from tests.services import free_port

    server = make("a")
    old = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    reset_broker_pools(app)  # fresh connections, to the dead broker
    try:
        assert scheduling.request_poll(server.pk) is False
    finally:
        app.conf.broker_url = old
        reset_broker_pools(app)  # and back to the live one for the tests that follow
    server.refresh_from_db()
    assert server.next_poll_at is None


def test_a_second_poll_of_the_same_server_is_skipped_while_one_runs(redis_server):
    with scheduling.poll_lock(42, timeout=30) as first:
        with scheduling.poll_lock(42, timeout=30) as second:
            assert first and not second
    with scheduling.poll_lock(42, timeout=30) as again:
        assert again  # released when the first poll ended


def test_a_lock_left_by_a_crashed_worker_expires(redis_server):
    import time

    crashed = shared_redis._redis(redis_server.url).lock("partdash:poll:7", timeout=1)
    assert crashed.acquire(blocking=False)  # never released, as if the worker died
    with scheduling.poll_lock(7, timeout=30) as acquired:
        assert not acquired
    time.sleep(1.2)
    with scheduling.poll_lock(7, timeout=30) as acquired:
        assert acquired


def test_a_kept_lock_is_renewed_while_held_and_released_after(redis_server):
    """`keep=True` (manage.py poll, which no time limit bounds): held past its expiry."""
    import time

    client = shared_redis._redis(redis_server.url)
    with scheduling.poll_lock(9, timeout=1, token="cli", keep=True) as acquired:
        assert acquired
        time.sleep(2.2)
        assert client.get("partdash:poll:9") == b"cli"  # two expiries later
    assert client.get("partdash:poll:9") is None
    with scheduling.poll_lock(9, timeout=1, token="task") as acquired:
        assert acquired
        time.sleep(1.3)
        assert client.get("partdash:poll:9") is None  # not kept: expired


def test_the_task_skips_a_server_that_is_being_polled(mariadb, make_server):
    server = make_server(mariadb)
    with scheduling.poll_lock(server.pk, timeout=30):
        assert poll_server_task.apply(args=[server.pk]).get() == "skipped: already polling"
    assert "partitions seen" in poll_server_task.apply(args=[server.pk]).get()


def test_the_task_skips_disabled_and_deleted_servers():
    server = builders.server(enabled=False)
    assert poll_server_task.apply(args=[server.pk]).get().startswith("skipped")
    assert poll_server_task.apply(args=[999999]).get().startswith("skipped")


def test_a_retried_task_does_not_store_a_second_snapshot(mariadb, make_server):
    from partdash.metrics.models import ServerSnapshot
    from partdash.polling.service import poll_server

    server = make_server(mariadb)
    first = poll_server(server, poll_id="task-1")
    retry = poll_server(server, poll_id="task-1")
    assert first.ok and retry.ok
    assert retry.stored == 0
    assert ServerSnapshot.objects.filter(server=server).count() == 1


def test_a_store_that_is_down_gets_one_line_a_tick_not_a_traceback(monkeypatch, caplog):
    from django.db import OperationalError

    from partdash.polling import tasks

    def down(*args, **kwargs):
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed')

    monkeypatch.setattr(scheduling, "dispatch_due", down)
    assert tasks.dispatch_due_polls() == 0
    monkeypatch.setattr(tasks.Server.objects, "filter", down)
    message = tasks.poll_server_task.apply(args=[7]).get()
    assert message.startswith("poll of server 7 skipped: metadata store unavailable: ")
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 2 and not any(r.exc_info for r in errors)
    assert "no polls dispatched: metadata store unavailable" in errors[0].getMessage()


def test_tasks_queued_under_their_old_names_still_run(db, empty_queue):
    """A message an older release queued names `partdash.collector.tasks.*`: a worker
    routes it by its registry, which holds the same tasks under those names too."""
    from celery import current_app

    from partdash.polling import tasks

    server = builders.server(enabled=False)
    assert poll_server_task.name == tasks.POLL_TASK in current_app.tasks
    legacy = current_app.tasks["partdash.collector.tasks.poll_server"]
    assert legacy.apply(args=[server.pk]).get() == "skipped: server disabled or deleted"
    dispatch = current_app.tasks["partdash.collector.tasks.dispatch_due_polls"]
    assert dispatch.apply().get() == 0  # no server is due
