""" "Poll now" is coalesced while the poll it queued is queued or running: 20 requests at
once queue one poll, and each is told a poll is queued; once it ended, the next request
queues another (issue 25, point 5)."""

import base64
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from partdash.polling import scheduling
from partdash.polling.tasks import poll_server_task
from tests import builders
from tests.conftest import token_client

CLICKS = 20


@pytest.fixture
def queue(redis_server):
    """The broker's `celery` list and the debounce keys, cleared before and after."""
    client = redis_server.client()

    def clear():
        client.delete("celery", *client.keys("partdash:poll-now:*"))

    clear()
    yield client
    clear()


@pytest.fixture
def operator_api(operator):
    return token_client(operator)


def polls_queued(queue) -> list[int]:
    """The servers of the polls waiting in the queue (other tasks there are not polls)."""
    messages = [json.loads(raw) for raw in queue.lrange("celery", 0, -1)]
    polls = [m["body"] for m in messages if m["headers"]["task"].endswith(".poll_server")]
    return [json.loads(base64.b64decode(body))[0][0] for body in polls]


@pytest.mark.django_db(transaction=True)  # roles a flush removed come back in user_in
def test_twenty_concurrent_poll_now_requests_queue_one_poll(operator, queue, settings):
    settings.PARTDASH_POLL_NOW_DEBOUNCE_SECONDS = 5
    server = builders.server("db1", enabled=True, port=9)
    queue.delete("celery", f"partdash:poll-now:{server.pk}")  # nothing from before the clicks
    api = token_client(operator)

    def click(_):
        try:
            return api.post(f"/api/v1/servers/{server.pk}/poll/")
        finally:
            connection.close()

    with ThreadPoolExecutor(CLICKS) as pool:
        answers = list(pool.map(click, range(CLICKS)))

    assert [a.status_code for a in answers] == [202] * CLICKS
    assert sorted(a.json()["detail"] for a in answers) == sorted(
        ["a poll was queued"] + ["a poll is already queued"] * (CLICKS - 1)
    )
    assert polls_queued(queue) == [server.pk]


@pytest.mark.django_db
def test_a_click_right_after_the_requested_poll_ended_queues_another(operator_api, queue, settings):
    """Coalesced only while the requested poll is queued or running: a click a moment
    after it ended polls again (before, any click within 5 s of the last was dropped)."""
    settings.PARTDASH_POLL_NOW_DEBOUNCE_SECONDS = 5
    server = builders.server("db1", enabled=True, port=9)  # refused: each poll ends at once
    queue.delete("celery")
    url = f"/api/v1/servers/{server.pk}/poll/"
    assert operator_api.post(url).json()["detail"] == "a poll was queued"
    assert operator_api.post(url).json()["detail"] == "a poll is already queued"
    queued = json.loads(queue.lrange("celery", 0, -1)[0])["headers"]["id"]

    # A worker runs it (here, in this process), as queued.
    outcome = poll_server_task.apply(args=[server.pk], kwargs={"forced": True}, task_id=queued)
    assert "connection refused" in outcome.get()

    assert operator_api.post(url).json()["detail"] == "a poll was queued"
    assert polls_queued(queue) == [server.pk, server.pk]


@pytest.mark.django_db
def test_a_requested_poll_skipped_behind_a_running_one_ends_the_window_too(
    operator_api, queue, settings
):
    settings.PARTDASH_POLL_NOW_DEBOUNCE_SECONDS = 5
    server = builders.server("db1", enabled=True, port=9)
    url = f"/api/v1/servers/{server.pk}/poll/"
    assert operator_api.post(url).json()["detail"] == "a poll was queued"
    queued = json.loads(queue.lrange("celery", 0, -1)[0])["headers"]["id"]
    with scheduling.poll_lock(server.pk, timeout=30, token="a scheduled poll"):
        skipped = poll_server_task.apply(args=[server.pk], kwargs={"forced": True}, task_id=queued)
    assert skipped.get() == "skipped: already polling"
    assert operator_api.post(url).json()["detail"] == "a poll was queued"
