"""Acknowledgements and escalation: an operator acknowledges a firing alert with a comment
(API, the signed link in a message, the page); acknowledged, it sends no reminder and
shows who and when; it is cleared when the alert worsens, and a resolved alert that fires
again is a new, unacknowledged one. Escalation sends an alert nobody acknowledged in
time to the rule's second channel, once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts import acks, delivery
from partdash.alerts.models import Acknowledgement, Alert, AlertRule, Channel, Transition
from partdash.alerts.service import Evaluation
from partdash.health.alerting import Condition, Key
from tests import builders
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def firing(on, of=None, rule="skew", **fields) -> Alert:
    return builders.alert(on, rule=rule, of=of, **fields)


def test_an_operator_acknowledges_through_the_api(operator, viewer_api):
    db1 = builders.server("db1")
    alert = firing(db1, builders.table(db1, "shop", "orders"))
    api = token_client(operator)
    answer = api.post(f"/api/v1/alerts/{alert.pk}/ack/", {"comment": "on it, adding disks"})
    assert answer.status_code == 200, answer.content
    shown = answer.json()
    assert shown["acknowledged_by"] == "operator" and shown["ack_comment"] == "on it, adding disks"
    assert shown["acknowledged_at"] is not None
    listed = api.get("/api/v1/alerts/?state=firing").json()[0]
    assert listed["acknowledged_by"] == "operator"
    assert viewer_api.post(f"/api/v1/alerts/{alert.pk}/ack/", {}).status_code == 403
    cleared = api.delete(f"/api/v1/alerts/{alert.pk}/ack/")
    assert cleared.status_code == 200 and cleared.json()["acknowledged_at"] is None
    assert [(a.who, a.cleared) for a in Acknowledgement.objects.all()] == [
        ("operator", False),
        ("operator", True),
    ]
    resolved = firing(db1, None, "unreachable", state=Alert.State.RESOLVED)
    refused = api.post(f"/api/v1/alerts/{resolved.pk}/ack/", {"comment": "x"})
    assert refused.status_code == 400 and "not firing" in refused.json()["detail"]


def test_an_acknowledged_alert_sends_no_reminder(settings):
    settings.PARTDASH_ALERT_REPEAT_HOURS = 1
    db1 = builders.server("db1")
    table = builders.table(db1, "a", "b")
    quiet = firing(db1, table, ago=timedelta(hours=3))
    loud = firing(db1, table, "runway", ago=timedelta(hours=3))
    acks.acknowledge(quiet, None, "known", via="api")
    assert list(delivery.due_reminders(timezone.now())) == [loud]
    queued = delivery.queue_reminders()
    assert len(queued) == 1
    assert list(Transition.objects.values_list("alert_id", flat=True)) == [loud.pk]


def test_worsening_clears_the_acknowledgement_and_a_new_firing_is_unacknowledged(operator):
    db1 = builders.server("db1")
    table = builders.table(db1, "a", "b")
    alert = firing(db1, table, severity="warning", value=3.0)
    acks.acknowledge(alert, operator, "watching")
    key = Key("skew", "a", "b")

    def evaluate(severity: str) -> None:
        evaluation = Evaluation(db1, timezone.now(), list(Alert.objects.exclude(state="resolved")))
        evaluation.conditions[key] = Condition(value=3.0, limit=2.0, severity=severity)
        evaluation.run()

    evaluate("warning")  # the same: still acknowledged
    assert Alert.objects.get(pk=alert.pk).acknowledged_at is not None
    evaluate("critical")  # worse: cleared, and said so in its history
    worse = Alert.objects.get(pk=alert.pk)
    assert worse.severity == "critical" and worse.acknowledged_at is None
    assert worse.acknowledged_by is None and worse.ack_comment == ""
    last = Acknowledgement.objects.filter(alert=alert).last()
    assert last.cleared and last.via == "worsened"
    # Resolved, then firing again: a new alert, nobody's acknowledgement on it.
    acks.acknowledge(worse, operator, "again")
    Alert.objects.filter(pk=alert.pk).update(state=Alert.State.RESOLVED)
    again = firing(db1, table)
    assert again.pk != alert.pk and again.acknowledged_at is None


def test_the_signed_link_acknowledges_that_firing_only(client, settings):
    db1 = builders.server("db1")
    alert = firing(db1, builders.table(db1, "shop", "orders"))
    token = acks.link_token(alert)
    page = client.get(f"/alerts/ack/{token}/")
    assert page.status_code == 200 and b"shop.orders" in page.content
    done = client.post(f"/alerts/ack/{token}/", {"comment": "paged, looking"})
    assert done.status_code == 200 and b"Acknowledged" in done.content
    acked = Alert.objects.get(pk=alert.pk)
    assert acked.acknowledged_at is not None and acked.ack_comment == "paged, looking"
    assert acked.acknowledged_by is None
    assert Acknowledgement.objects.get().who == "someone with the link in a message"
    # Forged, another firing of it, or resolved: refused, one line, nothing changed.
    assert client.get(f"/alerts/ack/{token}x/").status_code == 400
    Alert.objects.filter(pk=alert.pk).update(fired_at=timezone.now())
    stale = client.post(f"/alerts/ack/{token}/", {"comment": "late"})
    assert stale.status_code == 400 and b"no longer firing" in stale.content
    assert Alert.objects.get(pk=alert.pk).ack_comment == "paged, looking"


def test_the_message_carries_the_link(smtp_settings, mailbox):
    from tests.alerts.mailbox import transition

    db1 = builders.server("db1")
    alert = firing(db1, builders.table(db1, "a", "b"), notified_at=None)
    transition(alert)
    delivery.deliver_evaluation(db1.pk, "eval-1")
    (email,) = mailbox.emails()
    # (A token carries when it was signed: the one in the email is read back from it.)
    prefix = "Acknowledge: https://partdash.example.com/alerts/ack/"
    (line,) = [row.strip() for row in email.text.splitlines() if row.strip().startswith(prefix)]
    token = line.removeprefix(prefix).rstrip("/")
    assert acks.alert_of_link(token).pk == alert.pk


def test_an_alert_nobody_acknowledged_escalates_once(operator):
    db1 = builders.server("db1")
    table = builders.table(db1, "a", "b")
    pager = Channel(name="pager", kind="pagerduty")
    pager.set_url("pagerduty://key@key")
    pager.save()
    AlertRule.objects.create(rule="skew", escalate_to=pager, escalate_after_minutes=30)
    late = firing(db1, table, fired_at=timezone.now() - timedelta(minutes=45))
    acked = firing(db1, table, "hotspot", fired_at=timezone.now() - timedelta(minutes=45))
    acks.acknowledge(acked, operator, "mine")
    AlertRule.objects.create(rule="hotspot", escalate_to=pager, escalate_after_minutes=30)
    firing(db1, builders.table(db1, "a", "c"), fired_at=timezone.now() - timedelta(minutes=5))

    queued = acks.escalate()
    assert acks.escalate() == []  # once
    (server_id, evaluation) = queued[0]
    (told,) = Transition.objects.filter(evaluation=evaluation)
    assert told.alert_id == late.pk and told.only_channel_id == pager.pk
    assert list(delivery.waiting(evaluation=evaluation)) == []  # not an email
