"""Alerts that fired while nobody was to be told are announced once somebody is: once
ALERT_EMAILS is set, or recipients are put on a rule, the sweeper sends the alerts still
firing (once), and the alerts page stops listing the "no recipients" failures."""

import pytest

from partdash.alerts import belated, delivery
from partdash.alerts.models import Alert, AlertRule, Notification
from tests import builders
from tests.alerts.mailbox import transition

pytestmark = pytest.mark.django_db


@pytest.fixture
def nobody_to_tell(smtp_settings):
    smtp_settings.ALERT_EMAILS = []
    return smtp_settings


def fired_unheard(server, *alerts: Alert) -> None:
    """Their firing evaluated and delivered while there were no recipients."""
    for alert in alerts:
        transition(alert, evaluation="eval-1")
    delivery.deliver_evaluation(server.pk, "eval-1")


def failures(api) -> list[dict]:
    return api.get("/api/v1/notifications/?failed=true").json()


def announce_and_deliver() -> list[tuple[int, str]]:
    """What the sweeper does every PARTDASH_ALERT_SWEEP_SECONDS (tasks.sweep_outbox)."""
    queued = belated.announce_belated()
    for server_id, evaluation in queued:
        delivery.deliver_evaluation(server_id, evaluation)
    return queued


def test_alerts_firing_before_alert_emails_was_set_are_announced_once(
    nobody_to_tell, mailbox, viewer_api
):
    db1 = builders.server("db1")
    still = builders.alert(db1, "runway", of=builders.table(db1, "shop", "orders"))
    gone = builders.alert(db1, "skew", of=builders.table(db1, "shop", "events"))
    fired_unheard(db1, still, gone)
    assert mailbox.count() == 0
    assert [f["last_error"] for f in failures(viewer_api)] == [delivery.NO_RECIPIENTS]
    Alert.objects.filter(pk=gone.pk).update(state=Alert.State.RESOLVED)
    assert announce_and_deliver() == []  # nobody yet: nothing changes

    nobody_to_tell.ALERT_EMAILS = ["ops@example.com"]  # set, and partdash restarted
    assert len(announce_and_deliver()) == 1
    assert announce_and_deliver() == []
    assert delivery.sweep() == []

    (sent,) = mailbox.emails()
    assert sent.recipients == ["ops@example.com"]
    assert sent.subject == "[partdash] db1: FIRING runway shop.orders"
    assert sent.lines("FIRING", "RESOLVED") == ["FIRING runway shop.orders value 3 threshold 14"]
    assert failures(viewer_api) == []
    assert Notification.objects.filter(sent_at=None).exclude(superseded_by="").count() == 1


def test_recipients_put_on_a_rule_announce_the_alerts_it_covers(nobody_to_tell, mailbox):
    db1 = builders.server("db1")
    skewed = builders.alert(db1, "skew", of=builders.table(db1, "shop", "events"))
    runway = builders.alert(db1, "runway", of=builders.table(db1, "shop", "orders"))
    fired_unheard(db1, skewed, runway)

    AlertRule.objects.create(rule="skew", recipients="dba@example.com")
    announce_and_deliver()

    (sent,) = mailbox.emails()
    assert sent.recipients == ["dba@example.com"]
    assert sent.lines("FIRING") == ["FIRING skew shop.events value 3 threshold 14"]
    # runway still has nobody: it is told so again, in a failure of its own.
    (still_unheard,) = Notification.objects.filter(recipients="", superseded_by="")
    assert still_unheard.last_error == delivery.NO_RECIPIENTS
    assert [t.alert_id for t in still_unheard.transitions.all()] == [runway.pk]
    assert announce_and_deliver() == []
    assert mailbox.count() == 1


def test_an_alert_silenced_meanwhile_is_not_announced_late(nobody_to_tell, mailbox):
    db1 = builders.server("db1")
    hushed = builders.alert(db1, "runway", of=builders.table(db1, "shop", "orders"))
    loud = builders.alert(db1, "skew", of=builders.table(db1, "shop", "events"))
    fired_unheard(db1, hushed, loud)
    builders.silence(server=db1, rule="runway")

    nobody_to_tell.ALERT_EMAILS = ["ops@example.com"]
    announce_and_deliver()

    (sent,) = mailbox.emails()
    assert sent.lines("FIRING") == ["FIRING skew shop.events value 3 threshold 14"]


@pytest.fixture
def tasks_run_here():
    """Queued tasks run in this process, as they are queued."""
    from partdash.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_beat_s_sweep_announces_what_fired_unheard_after_a_restart_with_alert_emails(
    nobody_to_tell, mailbox, tasks_run_here
):
    """The beat task itself (tasks.sweep_outbox), its deliveries run in this process."""
    from partdash.alerts import tasks

    db1 = builders.server("db1")
    fired_unheard(db1, builders.alert(db1, "runway", of=builders.table(db1, "shop", "orders")))
    tasks.sweep_outbox()
    assert mailbox.count() == 0

    nobody_to_tell.ALERT_EMAILS = ["ops@example.com"]  # as after a restart with it set
    tasks.sweep_outbox()
    tasks.sweep_outbox()

    (sent,) = mailbox.emails()
    assert sent.recipients == ["ops@example.com"]
    assert sent.lines("FIRING") == ["FIRING runway shop.orders value 3 threshold 14"]
    assert not belated.unaddressed().exists()
