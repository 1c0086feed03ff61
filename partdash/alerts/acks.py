"""Acknowledgements and escalation.

An operator acknowledges a firing alert with a comment (the alerts page, `POST
/api/v1/alerts/{id}/ack/`, or the signed link in the alert's message): it then sends no
reminders and shows who and when. The acknowledgement is cleared when the alert worsens
(warning to critical: `clear_if_worse`, from the evaluation); an alert that resolves and
fires again is a new alert, unacknowledged.

Escalation: an alert rule may name a channel (`escalate_to`) and a delay
(`escalate_after_minutes`); its alerts still firing and unacknowledged that long after
they fired are sent to that channel too, once (`escalate`, from beat).
"""

from datetime import datetime, timedelta
from uuid import uuid4

from django.core import signing
from django.db import transaction
from django.utils import timezone

from partdash.alerts.belated import announcement
from partdash.alerts.models import Acknowledgement, Alert, AlertRule, Severity, Transition
from partdash.alerts.records import key_of, overrides_for
from partdash.alerts.silences import silenced_now

LINK_SALT = "partdash.alerts.ack"
LINK_DAYS = 7  # a link in a message acknowledges for this long after it was made
COMMENT_MAX = 2000


class AckRefused(Exception):
    """The alert cannot be acknowledged (not firing, or the link is not valid): one line."""


def acknowledge(alert: Alert, user=None, comment: str = "", via: str = "api") -> Alert:
    """Acknowledge `alert`, firing; its acknowledgement is recorded in its history. An
    alert acknowledged already is acknowledged again (the latest comment stands)."""
    comment = comment.strip()[:COMMENT_MAX]
    now = timezone.now()
    who = user.get_username() if user is not None else "someone with the link in a message"
    with transaction.atomic():
        taken = Alert.objects.filter(pk=alert.pk, state=Alert.State.FIRING).update(
            acknowledged_by=user, acknowledged_at=now, ack_comment=comment, updated_at=now
        )
        if not taken:
            raise AckRefused(f"alert {alert.pk} is not firing: only a firing alert is acknowledged")
        Acknowledgement.objects.create(
            alert=alert, user=user, who=who, via=via, comment=comment, at=now
        )
    alert.refresh_from_db()
    return alert


def unacknowledge(alert: Alert, user=None, via: str = "api") -> Alert:
    """Clear the acknowledgement by hand: reminders resume."""
    now = timezone.now()
    with transaction.atomic():
        if (
            Alert.objects.filter(pk=alert.pk)
            .exclude(acknowledged_at=None)
            .update(acknowledged_by=None, acknowledged_at=None, ack_comment="", updated_at=now)
        ):
            who = user.get_username() if user is not None else ""
            Acknowledgement.objects.create(
                alert=alert, user=user, who=who, via=via, cleared=True, at=now
            )
    alert.refresh_from_db()
    return alert


def clear_if_worse(alert: Alert, severity: str, now: datetime) -> Acknowledgement | None:
    """When an acknowledged alert's severity rises to critical: its acknowledgement is
    cleared (on the row, saved by the caller) and the clearing returned for its history."""
    if alert.acknowledged_at is None or alert.severity == Severity.CRITICAL:
        return None
    if severity != Severity.CRITICAL:
        return None
    alert.acknowledged_by, alert.acknowledged_at, alert.ack_comment = None, None, ""
    return Acknowledgement(
        alert=alert, who="", via="worsened", comment=f"worsened to {severity}", cleared=True, at=now
    )


# --- the signed link ------------------------------------------------------------------


def link_token(alert: Alert) -> str:
    """A token naming this alert's firing (its id and when it fired), signed with
    SECRET_KEY: the link in its message."""
    fired = alert.fired_at.timestamp() if alert.fired_at else 0
    return signing.dumps([alert.pk, round(fired, 3)], salt=LINK_SALT, compress=False)


def alert_of_link(token: str) -> Alert:
    """The firing alert a link's token names; AckRefused when the token is forged,
    older than LINK_DAYS, or names an alert that has resolved since (or is gone)."""
    try:
        pk, fired = signing.loads(token, salt=LINK_SALT, max_age=timedelta(days=LINK_DAYS))
    except signing.SignatureExpired:
        raise AckRefused(
            f"this link is older than {LINK_DAYS} days: acknowledge on the alerts page"
        ) from None
    except (signing.BadSignature, ValueError, TypeError):
        raise AckRefused("this link is not one partdash made") from None
    alert = Alert.objects.filter(pk=pk).select_related("server").first()
    if alert is None:
        raise AckRefused("this alert is gone")
    if (
        alert.state != Alert.State.FIRING
        or (round(alert.fired_at.timestamp(), 3) if alert.fired_at else 0) != fired
    ):
        raise AckRefused("this alert is no longer firing: nothing to acknowledge")
    return alert


# --- escalation -----------------------------------------------------------------------


def escalation_of(alert: Alert, rules: list[AlertRule]) -> AlertRule | None:
    """The most specific enabled rule override matching `alert` that escalates."""
    by_id = {rule.pk: rule for rule in rules}
    key = key_of(alert)
    tags = set(alert.server.tag_list)
    matching = sorted(
        (o for o in overrides_for(alert.server) if o.matches(alert.server_id, tags, key)),
        key=lambda o: o.specificity(),
    )
    for override in matching:
        rule = by_id.get(override.id)
        if rule is not None and rule.escalate_to_id is not None:
            return rule
    return None


def escalate(now: datetime | None = None) -> list[tuple[int, str]]:
    """Alerts firing, unacknowledged and not escalated yet, past their rule's
    `escalate_after_minutes` since they fired, and not silenced: one FIRING transition
    each for the escalation channel alone (taken by the UPDATE of `escalated_at`, so one
    sweep does it). Returns the (server, evaluation) pairs to deliver."""
    now = now or timezone.now()
    rules = list(AlertRule.objects.filter(enabled=True).exclude(escalate_to=None))
    if not rules:
        return []
    candidates = (
        Alert.objects.filter(state=Alert.State.FIRING, acknowledged_at=None, escalated_at=None)
        .annotate(is_silenced=silenced_now(now))
        .filter(is_silenced=False)
        .select_related("server")
    )
    by_server: dict[int, list[tuple[Alert, AlertRule]]] = {}
    for alert in candidates.order_by("server_id", "pk"):
        rule = escalation_of(alert, rules)
        if rule is None or alert.fired_at is None:
            continue
        if alert.fired_at + timedelta(minutes=rule.escalate_after_minutes or 0) > now:
            continue
        by_server.setdefault(alert.server_id, []).append((alert, rule))
    queued = []
    for server_id, due in by_server.items():
        evaluation = f"escalation-{uuid4().hex}"
        with transaction.atomic():
            told = []
            for alert, rule in due:
                taken = Alert.objects.filter(
                    pk=alert.pk, escalated_at=None, acknowledged_at=None, state=Alert.State.FIRING
                ).update(escalated_at=now)
                if taken:
                    transition = announcement(alert, evaluation, "", now)
                    transition.only_channel_id = rule.escalate_to_id
                    told.append(transition)
            Transition.objects.bulk_create(told)
        if told:
            queued.append((server_id, evaluation))
    return queued
