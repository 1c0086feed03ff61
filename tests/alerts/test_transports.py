"""Transports: every way of sending is one registered class, and the outbox treats their
failures by class: a transient one is retried after its backoff, a permanent one (every
recipient refused, a message the service refuses, a kind no longer declared) is given up
at once, the email and the channels alike. Real SMTP and HTTP receivers."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts import channels, delivery
from partdash.alerts.history import delivery_of
from partdash.alerts.models import Channel, ChannelKind, Notification
from partdash.alerts.transports import (
    EMAIL,
    TRANSPORTS,
    Transport,
    register,
    registered,
    transport_of,
)
from tests import builders
from tests.alerts.mailbox import transition

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _smtp(smtp_settings):
    return smtp_settings


def firing(on, of=None, rule="runway"):
    return builders.alert(on, rule=rule, of=of, notified_at=None)


def stored_channel(name: str, url: str, kind: str | None = None) -> Channel:
    made = Channel(name=name, kind=kind or channels.kind_of(url))
    made.set_url(url)
    made.save()
    return made


def assert_given_up_at_once(notification_id: int, outcome: delivery.Outcome, error: str) -> None:
    """Failed once, given up: no retry queued, none claimable, the sweeper leaves it."""
    assert outcome.failed and outcome.given_up and not outcome.retrying
    given_up = Notification.objects.get(pk=notification_id)
    assert given_up.given_up_at is not None and given_up.sent_at is None
    assert given_up.attempts == 1
    assert given_up.last_error.startswith("gave up after 1 attempt; ")
    assert delivery_of(given_up)["outcome"] == "given up"
    assert given_up.last_error.endswith(error), given_up.last_error
    Notification.objects.filter(pk=notification_id).update(
        claimed_at=timezone.now() - delivery.lease() - timedelta(seconds=1)
    )
    assert delivery.sweep() == []
    assert delivery.claim(notification_id) is None


def test_an_email_every_recipient_refuses_is_given_up_at_once(mailbox):
    mailbox.unknown = {"ops@example.com"}
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1)))

    ((notification_id, outcome),) = delivery.deliver_evaluation(db1.pk, "eval-1")

    assert_given_up_at_once(notification_id, outcome, "no such mailbox here')}")
    assert "SMTPRecipientsRefused" in Notification.objects.get(pk=notification_id).last_error
    assert mailbox.count() == 0


def test_an_unreachable_smtp_server_is_retried_not_given_up(mailbox):
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1)))
    mailbox.stop()

    ((notification_id, outcome),) = delivery.deliver_evaluation(db1.pk, "eval-1")

    assert outcome.failed and outcome.retrying and not outcome.given_up
    assert Notification.objects.get(pk=notification_id).given_up_at is None


def test_a_message_the_service_refuses_is_given_up_and_a_5xx_retried(receiver):
    db1 = builders.server("db1")
    stored_channel("hook", f"{receiver.url}/hook")
    alert = firing(db1, builders.table(db1))

    receiver.status = 400  # the service refuses the message itself
    transition(alert, evaluation="eval-1")
    outcomes = dict(delivery.deliver_evaluation(db1.pk, "eval-1"))
    (refused,) = Notification.objects.filter(evaluation="eval-1").exclude(channel=None)
    assert_given_up_at_once(refused.pk, outcomes[refused.pk], "ChannelRefused: HTTP 400")

    receiver.status = 503  # the service is down for now
    transition(alert, evaluation="eval-2")
    outcomes = dict(delivery.deliver_evaluation(db1.pk, "eval-2"))
    (down,) = Notification.objects.filter(evaluation="eval-2").exclude(channel=None)
    assert outcomes[down.pk].retrying
    assert down.pk not in {pk for pk, _ in delivery.deliver_evaluation(db1.pk, "eval-1")}


def test_a_url_partdash_no_longer_takes_is_given_up_at_once(receiver):
    db1 = builders.server("db1")
    stored_channel("old irc", "irc://partdash@127.0.0.1:6667/%0D%0AFLUSHALL", kind="apprise")
    transition(firing(db1, builders.table(db1)))

    outcomes = dict(delivery.deliver_evaluation(db1.pk, "eval-1"))

    (refused,) = Notification.objects.exclude(channel=None)
    assert_given_up_at_once(refused.pk, outcomes[refused.pk], "(CR, LF or NUL, maybe %-encoded)")


def test_a_channel_of_a_kind_no_longer_declared_is_given_up(receiver):
    db1 = builders.server("db1")
    stored_channel("gone", f"{receiver.url}/hook", kind="owl")
    transition(firing(db1, builders.table(db1)))

    outcomes = dict(delivery.deliver_evaluation(db1.pk, "eval-1"))

    (message,) = Notification.objects.exclude(channel=None)
    error = "attempt 1: no transport for channel kind 'owl'"
    assert_given_up_at_once(message.pk, outcomes[message.pk], error)


def test_each_kind_is_one_registered_transport_and_the_urls_find_it():
    kinds = {transport.kind for transport in registered()}
    assert kinds == {EMAIL, *ChannelKind.values}
    assert Channel._meta.get_field("kind").choices == [
        (t.kind, t.label) for t in registered() if t.kind != EMAIL
    ]
    for transport in registered():
        for scheme in transport.schemes:
            host = "hooks.example.com" if scheme.startswith("http") else "x"
            assert channels.kind_of(f"{scheme}://{host}/a") == transport.kind
        for host in transport.hosts:
            name = f"a{host}" if host.startswith(".") else host
            assert channels.kind_of(f"https://{name}/a") == transport.kind
    assert set(channels.apprise_schemes()) == {
        s for t in registered() for s in t.schemes if not s.startswith("http")
    }  # (every built-in scheme but the webhook's is Apprise's)


def test_a_kind_is_declared_once():
    class Again(Transport):
        kind = ChannelKind.SLACK.value
        label = "Slack again"

    with pytest.raises(ValueError, match="registered twice"):
        register(Again)
    assert transport_of(ChannelKind.SLACK) is TRANSPORTS["slack"]
    assert Transport().test() == ""  # the base's test checks nothing
