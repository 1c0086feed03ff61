"""Alert channels besides email: Slack, Teams, PagerDuty, Opsgenie, Telegram, Discord,
Matrix, ntfy (through Apprise) and partdash's own JSON webhook. Each kind is a transport
(`transports`, declared in `channel_kinds`); a URL's kind is the registered transport
that claims its host or scheme (`kind_of`). Here: routing, grouping, the messages' text
and document, the URL checks and the sender process the transports share.

A channel keeps the email's guarantees (`delivery`): an evaluation's transitions that a
channel receives go out in one message for that channel, taken by the INSERT of that
message (unique per channel and evaluation), so two workers never split or share it; the
message is claimed, sent, retried with backoff and swept like an email. What it carries
is fixed when it is made (`Notification.carried`).

Each message is sent by a process of its own (`channel_send`, `run_sender`): the URL
goes to it on stdin and the error comes back without it.

A channel's URL is an operator's choice of host, port and bytes on the wire, so (issue
37) `admissible` refuses at save and again before each send: a scheme not among the
services the docs list (IRC's plugin wrote a CR/LF-laden nick into a Redis), CR, LF or
NUL anywhere in the URL once decoded, and a host the address policy refuses; the
sender then connects only to addresses that policy admits (`channel_policy`).
"""

import json
import logging
import re
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit
from uuid import uuid4

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from partdash.alerts import emails
from partdash.alerts.belated import announcement
from partdash.alerts.models import Alert, Channel, ChannelKind, Notification, Transition
from partdash.alerts.records import key_of, silences_for
from partdash.alerts.transports import by_host, by_scheme, registered
from partdash.health.alert_rules import silenced_keys
from partdash.health.fixes import stored_fix
from partdash.lib.addresses import (
    POLICY_REFUSED,
    AddressPolicy,
    channel_policy,
    holds_control_characters,
    plain,
)
from partdash.lib.times import iso

log = logging.getLogger(__name__)

SENDER = Path(__file__).with_name("channel_send.py")
DOCUMENT_VERSION = 1

# What no retry changes (`ChannelRefused.permanent`): the URL refused as it stands, or the
# service refusing the message itself (a malformed request, an endpoint gone, too large).
PERMANENT = re.compile(
    r"line break or NUL|^scheme \S+ is not a channel|^not a URL|HTTP (400|404|410|413|422)$"
)


WEB = {"http", "https"}


class ChannelRefused(Exception):
    """A channel URL no sender takes, or a sender that failed: one line, no secret."""

    @property
    def permanent(self) -> bool:
        """Whether no later attempt at the same message can succeed (`PERMANENT`)."""
        return bool(PERMANENT.search(str(self)))


def apprise_schemes() -> list[str]:
    """The URL schemes of the registered transports that Apprise sends, for the
    sender's own check."""
    return sorted({s for t in registered() if t.via_apprise for s in t.schemes})


def kind_of(url: str) -> str:
    """What `url` reaches: the kind of the registered transport that claims its host (a
    service's own webhook URL) or its scheme; any other http(s) URL is partdash's JSON
    webhook."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        raise ChannelRefused("not a URL") from None
    scheme = parts.scheme.lower()
    if not scheme or "://" not in url:
        raise ChannelRefused(
            "not a URL: give SCHEME://… (an Apprise URL, or https://… for a webhook)"
        )
    transport = by_host(host) if scheme in WEB else None
    transport = transport or by_scheme(scheme)
    if transport is not None:
        return transport.kind
    raise ChannelRefused(
        f"scheme {scheme}:// is not a channel partdash sends through: one of "
        f"{', '.join(sorted({s for t in registered() for s in t.schemes} - WEB))}, "
        "or http(s):// for a webhook"
    )


def refuse_control_characters(url: str) -> None:
    """CR, LF or NUL in `url` (`holds_control_characters`): a line-based service (IRC,
    SMTP, Redis) would read the rest as a command."""
    if holds_control_characters(url):
        raise ChannelRefused("the URL holds a line break or NUL (CR, LF or NUL, maybe %-encoded)")


def policy() -> AddressPolicy:
    """Where channels may connect (PARTDASH_CONNECT_ALLOW/DENY, PARTDASH_CHANNEL_ALLOW)."""
    return channel_policy(
        settings.PARTDASH_CONNECT_ALLOW,
        settings.PARTDASH_CONNECT_DENY,
        settings.PARTDASH_CHANNEL_ALLOW,
    )


def refuse_host(url: str, kind: str) -> None:
    """A host the policy refuses, where the URL names a network host: a webhook's
    (resolved here, once), or a literal address in any scheme. Apprise's other URLs
    carry tokens where the host goes, never looked up; their sender checks each
    connection."""
    host = urlsplit(url.strip()).hostname or ""
    try:
        found = [str(plain(host))]
    except ValueError:
        if kind != ChannelKind.WEBHOOK:
            return
        try:
            found = [a[4][0] for a in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)]
        except (socket.gaierror, UnicodeError):
            raise ChannelRefused(f"cannot resolve the webhook's host {host!r}") from None
    reasons = [policy().refusal(address) for address in found]
    if all(reasons):
        raise ChannelRefused(f"{POLICY_REFUSED}: {reasons[0]}")


def admissible(url: str) -> str:
    """The kind of `url` if partdash may send through it (see the module's docstring);
    else ChannelRefused with one line. Run at save and before every send."""
    refuse_control_characters(url)
    kind = kind_of(url)
    refuse_host(url, kind)
    return kind


def run_sender(request: dict, timeout: float | None = None) -> str:
    """Run `channel_send` on `request`; returns the service's name, or raises
    ChannelRefused with its one-line error. The process is killed at the timeout."""
    limit = timeout if timeout is not None else settings.PARTDASH_ALERT_CHANNEL_TIMEOUT_SECONDS
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(SENDER)],
            input=json.dumps(
                {
                    **request,
                    "timeout": limit,
                    "policy": policy().as_lists(),
                    "schemes": apprise_schemes(),
                }
            ),
            capture_output=True,
            text=True,
            timeout=limit + 15,  # (its own start, and Apprise's import)
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ChannelRefused(f"no answer within {limit:.0f} s") from None
    try:
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        # (stderr is never shown: a crash's traceback may quote the request)
        raise ChannelRefused(f"the sender failed (exit status {done.returncode})") from None
    if not outcome.get("ok"):
        raise ChannelRefused(outcome.get("error") or "no detail")
    return outcome.get("service") or ""


def check_url(url: str) -> str:
    """The kind of `url` once a sender took it (Apprise parses it: a Slack URL without
    its tokens is refused here, not at the first alert)."""
    kind = admissible(url)
    run_sender({"action": "check", "url": url.strip(), "kind": kind}, timeout=20)
    return kind


# --- routing: which transitions a channel receives ------------------------------------


def for_channel(channel: Channel, transitions: QuerySet[Transition]) -> list[Transition]:
    """Of an evaluation's transitions, those `channel` receives: not silenced, for every
    channel or for this one, routed to it (`routed`)."""
    candidates = transitions.filter(silenced=False, email_only=False).filter(
        Q(only_channel=None, only_channel_name="") | Q(only_channel=channel)
    )
    return [  # (one for this channel alone was chosen for it: an escalation, its welcome)
        t
        for t in candidates.select_related("alert").order_by("id")
        if t.only_channel_id == channel.pk or routed(channel, t)
    ]


def routed(channel: Channel, transition: Transition) -> bool:
    """Whether the transition's route takes this channel: the channels its rule's
    override picked, else (the default route) the channel's own rules and severity."""
    if transition.channels is not None:
        return channel.pk in transition.channels
    return channel.receives(transition.alert.rule, transition.alert.severity)


def group_evaluation(server_id: int, evaluation: str) -> list[Notification]:
    """One message per enabled channel that receives any of the evaluation's transitions
    and has none for it yet; returns the messages this call made."""
    transitions = Transition.objects.filter(server_id=server_id, evaluation=evaluation)
    first = transitions.order_by("created_at").values_list("created_at", flat=True).first()
    if first is None:
        return []
    taken = Notification.objects.filter(evaluation=evaluation, channel__isnull=False)
    channels = Channel.objects.filter(enabled=True, created_at__lte=first).exclude(
        pk__in=taken.values("channel_id")
    )
    made = []
    for channel in channels:
        carried = for_channel(channel, transitions)
        if carried:
            notification = _take(channel, server_id, evaluation, carried)
            if notification is not None:
                made.append(notification)
    return made


def _take(channel: Channel, server_id: int, evaluation: str, carried: list[Transition]):
    try:
        with transaction.atomic():
            notification = Notification.objects.create(
                server_id=server_id,
                evaluation=evaluation,
                channel=channel,
                message_id=f"{channel.kind}-{uuid4().hex}",
            )
            notification.carried.set(carried)
            notification.subject = emails.subject_of(
                notification.server.name, emails.lines_of(notification)
            )
            notification.save(update_fields=["subject"])
    except IntegrityError:  # another worker made this channel's message first
        return None
    return notification


def leftovers(now: datetime) -> list[tuple[int, str]]:
    """Evaluations of the last day, older than a lease, with transitions some enabled
    channel receives that no message of that channel carries: what a killed worker left
    ungrouped (`delivery.sweep`)."""
    lease = timedelta(seconds=settings.PARTDASH_ALERT_CLAIM_LEASE_SECONDS)
    found: set[tuple[int, str]] = set()
    for channel in Channel.objects.filter(enabled=True):
        since = max(channel.created_at, now - timedelta(days=1))
        waiting = (
            Transition.objects.filter(silenced=False, email_only=False, created_at__gte=since)
            .filter(created_at__lt=now - lease)
            .filter(Q(only_channel=None, only_channel_name="") | Q(only_channel=channel))
            .exclude(evaluation__in=channel.notifications.values("evaluation"))
        )
        for server_id, evaluation, rule, severity, picked in waiting.values_list(
            "server_id", "evaluation", "alert__rule", "alert__severity", "channels"
        ):
            takes = channel.pk in picked if picked is not None else channel.receives(rule, severity)
            if takes:
                found.add((server_id, evaluation))
    return sorted(found)


# --- the message ----------------------------------------------------------------------


def alert_document(alert: Alert, silenced: bool = False) -> dict:
    """An alert with the fields the API's alert has, and the link to its page."""
    return {
        "id": alert.pk,
        "rule": alert.rule,
        "severity": alert.severity,
        "server_id": alert.server_id,
        "server": alert.server.name,
        "table_id": alert.partitioned_table_id,
        "schema": alert.schema or None,
        "table": alert.table or None,
        "partition": alert.partition or None,
        "state": alert.state,
        "value": alert.value,
        "threshold": alert.threshold,
        "message": alert.message,
        "fix": stored_fix(alert.fix),
        "started_at": iso(alert.started_at),
        "resolved_at": iso(alert.resolved_at),
        "notified_at": iso(alert.notified_at),
        "silenced": silenced,
        "acknowledged_by": _acknowledger(alert),
        "acknowledged_at": iso(alert.acknowledged_at),
        "ack_comment": alert.ack_comment,
        "url": emails.page_of(alert),
    }


def _acknowledger(alert: Alert) -> str | None:
    if alert.acknowledged_at is None or alert.acknowledged_by is None:
        return None
    return alert.acknowledged_by.get_username()


def document_of(notification: Notification, lines: list[emails.Line]) -> dict:
    """The webhook's JSON body (docs/alerts.md, "Webhook"): one per message."""
    server = notification.server
    return {
        "version": DOCUMENT_VERSION,
        "source": "partdash",
        "evaluation": notification.evaluation,
        "subject": notification.subject,
        "server": {"id": server.pk, "name": server.name},
        "alerts_url": emails.link("/alerts/", {"server": server.pk}),
        "transitions": [
            {
                "kind": line.transition.kind,
                "state": line.state,
                "at": iso(line.transition.created_at),
                "value": line.transition.value,
                "threshold": line.transition.threshold,
                "message": line.transition.message or line.alert.message,
                "alert": alert_document(line.alert),
            }
            for line in lines
        ],
    }


def body_of(notification: Notification, lines: list[emails.Line]) -> str:
    """A chat message: one line per transition (FIRING or RESOLVED, the rule, the table,
    the value and threshold) and the link to its page; past PARTDASH_ALERT_EMAIL_DETAILED
    lines, how many more and the alerts page."""
    detailed = settings.PARTDASH_ALERT_EMAIL_DETAILED
    rows = []
    if lines and all(line.is_reminder for line in lines):
        rows.append(f"Still firing after {emails.figure(settings.PARTDASH_ALERT_REPEAT_HOURS)} h:")
    for line in lines[:detailed]:
        rows += [line.text, f"  {line.page}"]
        if line.state == "FIRING":
            rows.append(f"  acknowledge: {line.ack}")
    if len(lines) > detailed:
        link = emails.link("/alerts/", {"server": notification.server_id})
        rows.append(f"and {len(lines) - detailed} more: {link}")
    return "\n".join(rows)


# --- a new channel's first message: what is firing already ----------------------------


def unannounced() -> QuerySet[Channel]:
    return Channel.objects.filter(enabled=True, announced_at=None)


def welcome(now: datetime | None = None) -> list[tuple[int, str]]:
    """For each enabled channel not yet told, the alerts firing now that it receives, no
    silence holds, and whose transitions all came before it was added, announced to it
    alone, once (taken by the UPDATE of its `announced_at`); an alert with a transition
    since reached it in that transition's evaluation. Returns the (server, evaluation)
    pairs to deliver."""
    now = now or timezone.now()
    queued = []
    for channel in unannounced():
        with transaction.atomic():
            if not unannounced().filter(pk=channel.pk).update(announced_at=now):
                continue  # another sweeper took it
            # (an alert with a transition since the channel was added reaches it there)
            firing = (
                Alert.objects.filter(state=Alert.State.FIRING)
                .exclude(transitions__created_at__gte=channel.created_at)
                .select_related("server")
            )
            by_server: dict[int, list[Alert]] = {}
            for alert in firing.order_by("server_id", "pk"):
                if channel.receives(alert.rule, alert.severity):
                    by_server.setdefault(alert.server_id, []).append(alert)
            for server_id, alerts in by_server.items():
                server = alerts[0].server
                held = silenced_keys(
                    silences_for(server), server_id, [key_of(a) for a in alerts], now
                )
                evaluation = f"welcome-{uuid4().hex}"
                told = [
                    announcement(alert, evaluation, "", now)
                    for alert in alerts
                    if key_of(alert) not in held
                ]
                for transition in told:
                    transition.only_channel = channel
                Transition.objects.bulk_create(told)
                if told:
                    queued.append((server_id, evaluation))
    return queued
