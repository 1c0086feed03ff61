"""Test alerts cannot stall the site (issue 37, point 7): each user sends a few at once
and a few a minute, counted in the real Redis across web processes (429 with
`Retry-After` from the API, a message from the page and the admin), and a target that
never answers is answered at the deadline while the user's slot stays held until the
send really ended."""

import re
import socket
import time

import pytest

from partdash.alerts.models import AlertRule, Channel
from partdash.alerts.testalert import sending_limit
from partdash.lib.shared_redis import redis_client
from partdash.lib.user_limits import user_slot
from tests.conftest import token_client, user_in, wait_until

pytestmark = pytest.mark.django_db

AT_ONCE = "You are running 1 test alerts already (at most 1 at once): wait for one to finish."
PER_MINUTE = re.compile(r"At most 3 test alerts a minute: try again in (\d+) s\.")


@pytest.fixture
def limits(settings):
    """Each user's counts start at nothing (user ids repeat from test to test)."""
    client = redis_client()
    for key in client.scan_iter("partdash:test-alert:*"):
        client.delete(key)
    settings.PARTDASH_TEST_ALERT_PER_USER = 1
    settings.PARTDASH_TEST_ALERT_PER_MINUTE = 3
    settings.PARTDASH_TEST_ALERT_SECONDS = 10  # the default (tests/settings.py raises it)
    settings.PARTDASH_CHANNEL_ALLOW = ["loopback"]  # (the targets listen on 127.0.0.1)
    return settings


@pytest.fixture
def silent_target():
    """A port that takes connections (the kernel completes them) and never answers."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as listening:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}/hook"


@pytest.fixture
def operator_api(operator):
    return token_client(operator)


def webhook(name: str, url: str) -> Channel:
    made = Channel(name=name, kind="webhook")
    made.set_url(url)
    made.save()
    return made


def running(user_id: int) -> int:
    return int(redis_client().get(f"partdash:test-alert:running:{user_id}") or 0)


def test_a_user_sends_one_test_at_a_time_and_a_few_a_minute(
    limits, receiver, operator, operator_api, admin_user
):
    hook = webhook("hook", f"{receiver.url}/hook")
    test = f"/api/v1/channels/{hook.pk}/test/"

    with user_slot(sending_limit(), operator.pk):  # a test of this user's still running
        busy = operator_api.post(test)
    assert busy.status_code == 429
    assert busy.json() == {"detail": AT_ONCE}
    assert busy["Retry-After"] == "10"  # PARTDASH_TEST_ALERT_SECONDS: it ends by then

    # The one still running counts in the minute, the refused one not: two more pass. Each
    # waits for the one before to give its slot back, which may be just after its answer
    # (a run on a loaded machine saw the second refused as one at a time).
    answers = []
    for _ in range(3):
        answers.append(operator_api.post(test))
        wait_until(lambda: running(operator.pk) == 0, timeout=10, what="the slot given back")
    assert [a.status_code for a in answers] == [200, 200, 429]
    waited = PER_MINUTE.fullmatch(answers[-1].json()["detail"])
    assert waited and 50 <= int(waited[1]) <= 60
    assert answers[-1]["Retry-After"] == waited[1]
    assert len(receiver.wait_for(2)) == 2 and len(receiver.received) == 2

    other = token_client(admin_user).post(test)  # the limits are per user
    assert other.status_code == 200, other.content
    # Slots given back once each send's thread ends, which may be just after its answer.
    wait_until(
        lambda: running(operator.pk) == 0 and running(admin_user.pk) == 0,
        timeout=10,
        what="the senders' slots to be given back",
    )


def test_a_silent_target_is_answered_at_the_deadline_and_holds_the_slot_till_it_ends(
    limits, silent_target, operator, operator_api
):
    limits.PARTDASH_TEST_ALERT_SECONDS = 1
    limits.PARTDASH_ALERT_CHANNEL_TIMEOUT_SECONDS = 3  # the sender gives up after 3 s
    limits.PARTDASH_TEST_ALERT_PER_MINUTE = 10
    test = f"/api/v1/channels/{webhook('silent', silent_target).pk}/test/"

    started = time.monotonic()
    late = operator_api.post(test)
    took = time.monotonic() - started

    assert late.status_code == 504, late.content
    assert late.json() == {
        "detail": "test alert not confirmed: no answer within 1 s (it may still arrive)"
    }
    assert 1 <= took < 2.5, took  # before: up to the channel timeout plus 15 s
    # The send goes on in its thread, in the user's one slot: no second one meanwhile.
    assert operator_api.post(test).json() == {"detail": AT_ONCE}
    wait_until(lambda: running(operator.pk) == 0, timeout=20, what="the send to give up")
    assert operator_api.post(test).status_code == 504  # a slot again
    # That send, too, goes on for 3 s: were it to end in the next test, after `limits`
    # cleared the counts, its release would leave them at -1.
    wait_until(lambda: running(operator.pk) == 0, timeout=20, what="the last send to give up")


def test_the_test_email_through_the_api_is_limited_too(
    limits, smtp_settings, mailbox, operator_api
):
    AlertRule.objects.create(rule="skew", recipients="dba@example.com")

    answers = [operator_api.post("/api/v1/alerts/test/") for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert PER_MINUTE.fullmatch(answers[-1].json()["detail"])
    assert int(answers[-1]["Retry-After"]) >= 50
    assert mailbox.count() == 3


def test_the_alerts_page_button_says_when_to_try_again(
    limits, smtp_settings, mailbox, django_user_model
):
    from django.test import Client

    user = user_in(django_user_model, "oncall", "operators")
    client = Client()
    client.force_login(user)

    with user_slot(sending_limit(), user.pk):
        page = client.post("/alerts/test/", follow=True).content.decode()

    assert f"Test alert not sent: {AT_ONCE}" in page
    assert mailbox.count() == 0


def test_the_admin_action_counts_each_channel_in_the_minute(limits, receiver, admin_client):
    hooks = [webhook(f"hook{n}", f"{receiver.url}/hook{n}") for n in range(6)]
    action = {"action": "send_test"}

    too_many = admin_client.post(
        "/admin/alerts/channel/", {**action, "_selected_action": [h.pk for h in hooks]}, follow=True
    )
    two = admin_client.post(
        "/admin/alerts/channel/",
        {**action, "_selected_action": [h.pk for h in hooks[:2]]},
        follow=True,
    )
    past = admin_client.post(
        "/admin/alerts/channel/",
        {**action, "_selected_action": [h.pk for h in hooks[2:4]]},
        follow=True,
    )

    said = [str(m) for r in (too_many, two, past) for m in r.context["messages"]]
    assert said[0] == "Select at most 5 channels to test at a time (6 selected)."
    assert said[1:3] == ["hook0: test alert sent (webhook)", "hook1: test alert sent (webhook)"]
    assert PER_MINUTE.fullmatch(said[3].removeprefix("No test alert sent: ")), said[3]
    assert sorted(r.path for r in receiver.wait_for(2)) == ["/hook0", "/hook1"]
    assert len(receiver.received) == 2
