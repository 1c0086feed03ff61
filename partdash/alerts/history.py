"""One alert's history: its transitions in order, each with the messages that carried it
(the email and each channel's, with their delivery outcome), and its acknowledgements.
The alert's page (`/alerts/{id}/`) and `GET /api/v1/alerts/{id}/history/` show it.

A firing told again later (a new channel's first message, an escalation, email once
recipients existed) is stored as a FIRING transition of its own, but it is no second
firing: its messages are shown under the transition it announces, marked `announced`.
"""

from datetime import datetime
from typing import Any

from partdash.alerts.models import Acknowledgement, Alert, Notification, Transition


def delivery_of(notification: Notification) -> dict[str, Any]:
    """A message as the history shows it: where it went and what became of it (a
    deleted channel's by the name it had)."""
    channel = notification.channel if notification.channel_id else None
    if notification.sent_at is not None:
        outcome = "sent"
    elif notification.superseded_by:
        outcome = "superseded"
    elif notification.channel_name:
        outcome = "channel deleted"
    elif not notification.recipients and notification.channel_id is None:
        outcome = "no recipients"
    elif notification.given_up_at is not None:
        outcome = "given up"  # a permanent error, or PARTDASH_ALERT_MAX_ATTEMPTS spent
    elif notification.last_error:
        outcome = "failing"
    else:
        outcome = "waiting"
    return {
        "id": notification.pk,
        "channel": channel.name if channel else notification.channel_name or None,
        "kind": channel.kind if channel else notification.channel_kind or "email",
        "recipients": [a for a in notification.recipients.split(",") if a],
        "outcome": outcome,
        "sent_at": notification.sent_at,
        "attempts": notification.attempts,
        "last_error": notification.last_error,
    }


# What each kind of announcement's evaluation starts with: `channels.welcome`,
# `acks.escalate`, `belated.announce_server`.
ANNOUNCEMENTS = {"welcome-": "welcome", "escalation-": "escalation", "belated-": "late"}


def announced_as(transition: Transition) -> str | None:
    """What kind of announcement of an earlier firing `transition` is (None: it is a
    transition of the alert's own). Announcements go to one channel alone, or to email
    alone."""
    if not (transition.only_channel_id or transition.only_channel_name or transition.email_only):
        return None
    for prefix, kind in ANNOUNCEMENTS.items():
        if transition.evaluation.startswith(prefix):
            return kind
    return "announcement"


def _deliveries(transition: Transition, announced: str | None) -> list[dict[str, Any]]:
    messages = [transition.notification] if transition.notification_id else []
    messages += list(transition.channel_messages.all())
    return [
        delivery_of(n)
        | {"announced": announced, "announced_at": transition.created_at if announced else None}
        for n in sorted(messages, key=_created)
    ]


def history_of(alert: Alert) -> dict[str, Any]:
    transitions = (
        Transition.objects.filter(alert=alert)
        .select_related("notification", "notification__channel")
        .prefetch_related("channel_messages", "channel_messages__channel")
        .order_by("created_at", "pk")
    )
    rows: list[dict[str, Any]] = []
    for transition in transitions:
        announced = announced_as(transition)
        if announced and rows:  # told again: under the firing it tells of
            rows[-1]["deliveries"] += _deliveries(transition, announced)
            continue
        rows.append(
            {
                "kind": transition.kind,
                "at": transition.created_at,
                "value": transition.value,
                "threshold": transition.threshold,
                "message": transition.message,
                "silenced": transition.silenced,
                "evaluation": transition.evaluation,
                "deliveries": _deliveries(transition, announced),
            }
        )
    acknowledgements = [
        {
            "at": ack.at,
            "who": ack.who or None,
            "via": ack.via,
            "comment": ack.comment,
            "cleared": ack.cleared,
        }
        for ack in Acknowledgement.objects.filter(alert=alert).order_by("at", "pk")
    ]
    return {"transitions": rows, "acknowledgements": acknowledgements}


def _created(notification: Notification) -> datetime:
    return notification.created_at
