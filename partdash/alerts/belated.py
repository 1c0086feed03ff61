"""Alerts that fired while nobody was to be told, announced once somebody is.

An alert that fires with no recipients (no ALERT_EMAILS, none on its rule) goes into a
notification that is never sent ("not sent: no recipients"). When recipients appear
(ALERT_EMAILS set and partdash restarted, or recipients put on a rule), the sweeper
(`tasks.sweep_outbox`, every PARTDASH_ALERT_SWEEP_SECONDS) finds those notifications,
claims them with one conditional UPDATE (`superseded_by` = a new evaluation, so two
sweepers never both announce them), and writes one FIRING transition for each of their
alerts still firing and not silenced now, to the recipients resolved now. The
evaluation is then delivered like any other: one email per server and recipients. The
superseded notifications stop being listed as failures; alerts resolved meanwhile are
not announced at all.
"""

from datetime import datetime
from uuid import uuid4

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from partdash.alerts.models import Alert, AlertRule, Notification, Transition
from partdash.alerts.records import key_of, overrides_for, silences_for
from partdash.alerts.rules import catalogue
from partdash.health.alert_rules import Override, rule_in_force, silenced_keys
from partdash.servers.models import Server

ANNOUNCING = (Transition.Kind.FIRING, Transition.Kind.REMINDER)


def unaddressed() -> QuerySet[Notification]:
    """Notifications that went to nobody and have not been superseded."""
    return Notification.objects.filter(
        recipients="", channel=None, channel_name="", sent_at=None, superseded_by=""
    )


def anyone_to_tell() -> bool:
    """Whether any recipient is configured at all: where none is (an install without
    email), the sweeper looks no further."""
    return bool(settings.ALERT_EMAILS) or AlertRule.objects.exclude(recipients="").exists()


def recipients_now(alert: Alert, overrides: list[Override], rules: dict) -> str:
    """Whom `alert` would be sent to if it fired now ("" for nobody)."""
    if alert.rule not in rules:
        return ",".join(settings.ALERT_EMAILS)
    server = alert.server
    rule = rule_in_force(
        rules[alert.rule].defaults,
        overrides,
        server.pk,
        server.tag_list,
        key_of(alert),
        ",".join(settings.ALERT_EMAILS),
    )
    return rule.recipients


def announce_belated(now: datetime | None = None) -> list[tuple[int, str]]:
    """Every server's belated announcements; returns the (server, evaluation) pairs to
    deliver."""
    if not anyone_to_tell():
        return []
    now = now or timezone.now()
    server_ids = sorted(set(unaddressed().values_list("server_id", flat=True)))
    queued = []
    for server in Server.objects.filter(pk__in=server_ids):
        evaluation = announce_server(server, now)
        if evaluation is not None:
            queued.append((server.pk, evaluation))
    return queued


def announce_server(server: Server, now: datetime) -> str | None:
    """Supersede the server's unaddressed notifications that now have somebody to go
    to, and write the FIRING transitions of their alerts still firing."""
    overrides, rules = overrides_for(server), catalogue()
    stale = Transition.objects.filter(notification__in=unaddressed().filter(server=server))
    addressed = {
        t.notification_id
        for t in stale.select_related("alert__server")
        if recipients_now(t.alert, overrides, rules)
    }
    if not addressed:
        return None  # still nobody to tell: the failure stands
    evaluation = f"belated-{uuid4().hex}"
    with transaction.atomic():
        taken = unaddressed().filter(pk__in=addressed).update(superseded_by=evaluation)
        if not taken:
            return None  # another sweeper took them
        owned = Transition.objects.filter(
            notification__superseded_by=evaluation, kind__in=ANNOUNCING
        )
        firing = Alert.objects.filter(
            pk__in=owned.values("alert_id"), state=Alert.State.FIRING
        ).select_related("server")
        alerts = list(firing.order_by("pk"))
        silenced = silenced_keys(silences_for(server), server.pk, [key_of(a) for a in alerts], now)
        transitions = [
            announcement(alert, evaluation, recipients_now(alert, overrides, rules), now)
            for alert in alerts
            if key_of(alert) not in silenced
        ]
        for transition in transitions:  # (the channels heard them when they fired)
            transition.email_only = True
        Transition.objects.bulk_create(transitions)
    return evaluation if transitions else None


def announcement(alert: Alert, evaluation: str, recipients: str, now: datetime) -> Transition:
    """The FIRING transition that announces `alert` late, with its figures as of now."""
    return Transition(
        alert=alert,
        server_id=alert.server_id,
        kind=Transition.Kind.FIRING,
        evaluation=evaluation,
        recipients=recipients,
        value=alert.value,
        threshold=alert.threshold,
        message=alert.message,
        created_at=now,
    )
