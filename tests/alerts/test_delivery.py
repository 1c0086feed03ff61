"""The outbox, in this process, against a real SMTP server: grouping per evaluation and
recipients, claims that one worker wins, failures recorded and retried with backoff,
and reminders."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts import delivery
from partdash.alerts.history import delivery_of
from partdash.alerts.models import Alert, Notification, Transition
from tests import builders
from tests.alerts.mailbox import transition

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _smtp(smtp_settings):
    return smtp_settings


def firing(on, of=None, rule="runway", **fields):
    return builders.alert(on, rule=rule, of=of, **{"notified_at": None, **fields})


def lease_ended(notification: Notification) -> None:
    """Move the claim back past the lease, as time passing would."""
    Notification.objects.filter(pk=notification.pk).update(
        claimed_at=timezone.now() - delivery.lease() - timedelta(seconds=1)
    )


def test_two_sets_of_recipients_get_two_emails_each_with_its_own_transitions(mailbox):
    db1 = builders.server("db1")
    orders, events = builders.table(db1, "shop", "orders"), builders.table(db1, "log", "ev")
    transition(firing(db1, orders), recipients="")  # ALERT_EMAILS
    transition(firing(db1, events, "skew"), recipients="Team@example.com, dba@example.com")
    # The same people written another way, and ALERT_EMAILS spelled out: same emails.
    transition(firing(db1, None, "unreachable"), recipients="dba@example.com,team@example.com")
    transition(firing(db1, builders.table(db1, "a", "b"), "hotspot"), recipients="ops@example.com")

    delivery.deliver_evaluation(db1.pk, "eval-1")

    received = sorted(mailbox.emails(), key=lambda e: e.recipients)
    assert [e.recipients for e in received] == [
        ["dba@example.com", "team@example.com"],
        ["ops@example.com"],
    ]
    assert [e.lines("FIRING") for e in received] == [
        ["FIRING unreachable db1 value 3 threshold 14", "FIRING skew log.ev value 3 threshold 14"],
        [
            "FIRING runway shop.orders value 3 threshold 14",
            "FIRING hotspot a.b value 3 threshold 14",
        ],
    ]
    assert received[0].message_id != received[1].message_id
    assert set(Notification.objects.values_list("message_id", flat=True)) == {
        e.message_id for e in received
    }


def test_silenced_transitions_are_never_sent(mailbox):
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1, "s", "loud")))
    hushed = transition(firing(db1, builders.table(db1, "s", "quiet")), silenced=True)
    only_hushed = transition(
        firing(db1, builders.table(db1, "s", "q2")), "firing", "eval-2", silenced=True
    )
    Transition.objects.filter(pk__in=[hushed.pk, only_hushed.pk]).update(
        created_at=timezone.now() - timedelta(days=1)
    )

    delivery.deliver_evaluation(db1.pk, "eval-1")
    delivery.deliver_evaluation(db1.pk, "eval-2")
    assert delivery.sweep() == []

    (sent,) = mailbox.emails()
    assert sent.subject == "[partdash] db1: FIRING runway s.loud"
    assert Transition.objects.filter(silenced=True, notification__isnull=False).count() == 0
    assert Notification.objects.filter(evaluation="eval-2").count() == 0


def test_a_transition_is_grouped_once_and_a_notification_claimed_by_one_worker():
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1)))

    (made,) = delivery.group_evaluation(db1.pk, "eval-1")
    assert delivery.group_evaluation(db1.pk, "eval-1") == []
    assert Notification.objects.count() == 1

    first = delivery.claim(made.pk)
    assert first is not None
    assert delivery.claim(made.pk) is None  # held: the lease has not run out
    lease_ended(made)
    assert delivery.claim(made.pk) is not None  # a worker died holding it: taken again
    assert Notification.objects.get(pk=made.pk).attempts == 2


def test_a_sent_email_is_never_claimed_again_and_marks_its_firings_announced(mailbox):
    db1 = builders.server("db1")
    alert = firing(db1, builders.table(db1))
    resolved = builders.alert(db1, "skew", Alert.State.RESOLVED, notified_at=None)
    transition(alert)
    transition(resolved, Transition.Kind.RESOLVED)

    ((notification_id, outcome),) = delivery.deliver_evaluation(db1.pk, "eval-1")

    assert outcome.sent
    notification = Notification.objects.get(pk=notification_id)
    assert notification.sent_at is not None and notification.attempts == 1
    assert Alert.objects.get(pk=alert.pk).notified_at == notification.sent_at
    assert Alert.objects.get(pk=resolved.pk).notified_at is None
    lease_ended(notification)
    assert delivery.claim(notification_id) is None
    assert delivery.sweep() == []
    assert mailbox.count() == 1


def test_an_smtp_failure_is_recorded_and_the_email_sent_once_the_server_is_back(mailbox, settings):
    settings.PARTDASH_ALERT_RETRY_SECONDS = 60
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1)))
    mailbox.stop()

    ((notification_id, outcome),) = delivery.deliver_evaluation(db1.pk, "eval-1")

    assert outcome.failed and outcome.retry_in == 60
    failed = Notification.objects.get(pk=notification_id)
    assert failed.sent_at is None and failed.attempts == 1
    assert "attempt 1: ConnectionRefusedError" in failed.last_error
    # Held until the backoff ends: neither a retry nor the sweeper takes it before.
    assert delivery.send_notification(notification_id) == delivery.NOT_CLAIMED
    assert delivery.sweep() == []
    lease_ended(failed)
    assert delivery.sweep() == [notification_id]
    assert delivery.send_notification(notification_id).failed
    failed.refresh_from_db()
    assert failed.attempts == 2 and "attempt 2:" in failed.last_error
    assert delivery.backoff(2) == timedelta(seconds=120)

    mailbox.start()
    lease_ended(failed)
    assert delivery.send_notification(notification_id).sent

    (sent,) = mailbox.emails()
    delivered = Notification.objects.get(pk=notification_id)
    assert sent.message_id == delivered.message_id
    assert delivered.sent_at is not None and delivered.attempts == 3
    assert "attempt 2: ConnectionRefusedError" in delivered.last_error  # what it met


def test_an_email_is_given_up_after_the_last_attempt(mailbox, settings):
    settings.PARTDASH_ALERT_MAX_ATTEMPTS = 2
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1)))
    mailbox.stop()
    ((notification_id, _),) = delivery.deliver_evaluation(db1.pk, "eval-1")
    notification = Notification.objects.get(pk=notification_id)
    lease_ended(notification)
    assert delivery.send_notification(notification_id).failed

    notification.refresh_from_db()
    assert notification.last_error.startswith("gave up after 2 attempts; ")
    assert delivery_of(notification)["outcome"] == "given up"
    lease_ended(notification)
    assert delivery.sweep() == []
    assert delivery.claim(notification_id) is None


def test_without_recipients_nothing_is_sent_and_the_reason_is_recorded(mailbox, settings):
    settings.ALERT_EMAILS = []
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1)))

    assert delivery.deliver_evaluation(db1.pk, "eval-1") == []

    (notification,) = Notification.objects.all()
    assert notification.last_error == delivery.NO_RECIPIENTS and notification.sent_at is None
    assert delivery.sweep() == [] and mailbox.count() == 0


def test_the_sweeper_groups_what_a_worker_left_and_sends_it(mailbox):
    db1 = builders.server("db1")
    fresh = transition(firing(db1, builders.table(db1, "s", "fresh")), evaluation="eval-new")
    old = transition(firing(db1, builders.table(db1, "s", "old")), evaluation="eval-old")
    Transition.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=1))

    due = delivery.sweep()

    # The fresh evaluation's own task is still on its way: the sweeper leaves it be.
    assert Transition.objects.get(pk=fresh.pk).notification_id is None
    (notification,) = Notification.objects.all()
    assert due == [notification.pk] and notification.evaluation == "eval-old"
    assert delivery.send_notification(notification.pk).sent
    assert [e.subject for e in mailbox.emails()] == ["[partdash] db1: FIRING runway s.old"]


def test_alerts_still_firing_get_one_reminder_digest_per_server(mailbox, settings):
    settings.PARTDASH_ALERT_REPEAT_HOURS = 24
    db1, db2 = builders.server("db1"), builders.server("db2")
    long_ago = timedelta(hours=30)
    due = [
        builders.alert(db1, "runway", of=builders.table(db1, "s", "a"), ago=long_ago),
        builders.alert(db1, "skew", of=builders.table(db1, "s", "b"), ago=long_ago),
        builders.alert(db2, "unreachable", ago=long_ago),
    ]
    for alert in due:
        transition(alert, evaluation=f"old-{alert.pk}", recipients="dba@example.com")
    builders.alert(db1, "hotspot", of=builders.table(db1, "s", "recent"))  # 1 h ago
    builders.alert(
        db1, "skew", of=builders.table(db1, "s", "pending"), state="pending", ago=long_ago
    )
    builders.alert(
        db1, "skew", Alert.State.RESOLVED, of=builders.table(db1, "s", "r"), ago=long_ago
    )
    builders.alert(
        db1, "runway", of=builders.table(db1, "s", "unannounced"), ago=long_ago, notified_at=None
    )
    builders.alert(db1, "runway", of=builders.table(db1, "s", "hushed"), ago=long_ago)
    builders.silence(server=db1, schema="s", table="hushed")
    reminded = builders.alert(db2, "skew", of=builders.table(db2), ago=long_ago)
    Alert.objects.filter(pk=reminded.pk).update(reminded_at=timezone.now() - timedelta(hours=2))

    queued = delivery.queue_reminders()

    assert delivery.queue_reminders() == []  # reminded: not again for 24 hours
    assert sorted(server for server, _ in queued) == [db1.pk, db2.pk]
    for server_id, evaluation in queued:
        delivery.deliver_evaluation(server_id, evaluation)
    by_subject = {e.subject: e for e in mailbox.emails()}
    assert set(by_subject) == {
        "[partdash] db1: 2 firing, 0 resolved",
        "[partdash] db2: FIRING unreachable db2",
    }
    digest = by_subject["[partdash] db1: 2 firing, 0 resolved"]
    assert digest.recipients == ["dba@example.com"]  # whom the firing went to
    assert digest.text.startswith("Still firing on db1 (2), a reminder every 24 hours.")
    assert digest.lines("FIRING") == [
        "FIRING runway s.a value 3 threshold 14",
        "FIRING skew s.b value 3 threshold 14",
    ]
    assert Alert.objects.filter(reminded_at__isnull=False).count() == 4
