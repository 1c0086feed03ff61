"""Beat's watch (`partdash.polling.watchdog`): the heartbeat URL is requested after a
cycle whose polls all ran, never after one where a server's polls stopped, and
`stale_polls` is sent by the watch itself (no worker runs in these tests)."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from partdash.polling import watchdog
from partdash.servers.models import Server
from tests import builders
from tests.conftest import wait_until
from tests.polling.heartbeat import HeartbeatReceiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver(settings):
    server = HeartbeatReceiver().start()
    settings.PARTDASH_HEARTBEAT_URL = server.url("/ping/abc")
    yield server
    server.stop()


def polled(name: str, seconds_ago: float, interval: int = 60, failures: int = 0) -> Server:
    server = builders.server(name, enabled=True, poll_interval=interval)
    at = timezone.now() - timedelta(seconds=seconds_ago)
    Server.objects.filter(pk=server.pk).update(
        last_poll_at=at, last_success_at=at, consecutive_failures=failures, status="ok"
    )
    return Server.objects.get(pk=server.pk)


def test_the_heartbeat_is_requested_after_a_cycle_whose_polls_all_ran(receiver):
    polled("db1", seconds_ago=30)
    polled("db2", seconds_ago=100)  # within two intervals
    polled("failing", seconds_ago=300, failures=3)  # backing off: every 240 s
    assert watchdog.watch_once() is True
    wait_until(lambda: receiver.paths == ["/ping/abc"], 10, "the heartbeat")


def test_no_heartbeat_while_a_servers_polls_have_stopped(receiver):
    polled("db1", seconds_ago=30)
    polled("stuck", seconds_ago=125)  # two intervals and the dispatch tick gone
    assert watchdog.watch_once() is False
    assert receiver.paths == []


def test_the_watch_sends_stale_polls_itself(settings):
    settings.ALERT_EMAILS = ["ops@example.com"]
    polled("stuck", seconds_ago=200)  # 3.3 intervals since its last success
    watchdog.watch_once()
    [email] = mail.outbox
    assert email.subject == "[partdash] stuck: FIRING stale_polls stuck"
    assert watchdog.behind(Server.objects.get(name="stuck"), timezone.now())
