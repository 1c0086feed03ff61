"""What an alert email says: one notification (one server's evaluation, for one set of
recipients) rendered from a trio of templates (subject, text, HTML).

Subject and lines follow CONTRACT.md ("Alerts"): `[partdash] SERVER: FIRING RULE
SCHEMA.TABLE` for a single transition, else `[partdash] SERVER: N firing, M resolved`; in
the text part one line per transition, `FIRING RULE SCHEMA.TABLE value V threshold T`,
with its details under it. Firing first, then resolved; within each the worst first
(severity, then how far the value is past its threshold). A storm shows the first
`PARTDASH_ALERT_EMAIL_DETAILED` in full and counts the rest, with a link.

Names come from the monitored servers and are hostile input: the HTML part escapes
everything (Django's autoescape), and control and formatting characters in names are
shown as escapes everywhere, so a name can neither break a line nor reorder one.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import make_msgid
from urllib.parse import urlencode

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from partdash.alerts.acks import link_token
from partdash.alerts.models import Alert, Notification, Severity, Transition
from partdash.health.fixes import safety_words, stored_fix
from partdash.health.shapes import stored_health
from partdash.lib.shown import shown

SUBJECT_MAX = 500  # Notification.subject's length
# Rules whose figure is bytes (shown as a number and in binary units), and rules where a
# lower value is the worse one (days of runway left).
BYTE_RULES = {"partition_size": "", "table_size": "", "table_growth": "/day"}
LOWER_IS_WORSE = {"runway", "working_set_forecast"}
KIND_ORDER = {Transition.Kind.FIRING: 0, Transition.Kind.REMINDER: 0, Transition.Kind.RESOLVED: 1}


def figure(value: float | None) -> str:
    """A value as a plain number: integers without a decimal point, others to two
    decimals (three under 1), trailing zeros dropped."""
    if value is None or not math.isfinite(value):
        return "none"
    if float(value).is_integer():
        return str(int(value))
    text = f"{value:.{3 if abs(value) < 1 else 2}f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def binary_size(value: float) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def reading(rule: str, value: float | None) -> str:
    """A value as the line shows it: the plain number, and for byte rules the size."""
    plain = figure(value)
    if rule in BYTE_RULES and value is not None and math.isfinite(value):
        return f"{plain} ({binary_size(value)}{BYTE_RULES[rule]})"
    return plain


def excess(rule: str, value: float | None, threshold: float | None) -> float:
    """How far past its threshold a value is (1.0 at the threshold): the worse, the
    larger."""
    if value is None or threshold is None:
        return 0.0
    if rule in LOWER_IS_WORSE:
        value, threshold = threshold, value
    if threshold <= 0:
        return math.inf if value > 0 else 0.0
    return value / threshold


def when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""


def link(path: str, query: dict | None = None) -> str:
    url = f"{settings.PARTDASH_BASE_URL}{path}"
    return f"{url}?{urlencode(query)}" if query else url


def page_of(alert: Alert) -> str:
    """The alert's table page, or its server's for a server rule."""
    if alert.partitioned_table_id:
        return link(f"/tables/{alert.partitioned_table_id}/")
    return link(f"/servers/{alert.server_id}/")


def silence_link(alert: Alert) -> str:
    """The silence page prefilled for this alert (D's page: server, schema, table, rule)."""
    query = {"server": alert.server_id}
    if alert.table:
        query |= {"schema": alert.schema, "table": alert.table}
    return link("/alerts/silence/", query | {"rule": alert.rule})


def partitions_involved(alert: Alert) -> list[str]:
    """The alert's own partition, else the partitions the table's health names for its
    rule (hot ones, the largest of a skewed table)."""
    if alert.partition:
        return [alert.partition]
    health = stored_health(alert.partitioned_table.health if alert.partitioned_table else None)
    if alert.rule == "hotspot":
        return list(health.get("hotspots") or [])
    if alert.rule == "skew":
        largest = (health.get("skew") or {}).get("largest")
        return [largest] if largest else []
    return []


@dataclass
class Line:
    """One transition as the email shows it."""

    transition: Transition
    alert: Alert
    server_name: str
    state: str = field(init=False)
    where: str = field(init=False)

    def __post_init__(self) -> None:
        resolved = self.transition.kind == Transition.Kind.RESOLVED
        self.state = "RESOLVED" if resolved else "FIRING"
        table = f"{shown(self.alert.schema)}.{shown(self.alert.table)}"
        self.where = table if self.alert.table else self.server_name

    @property
    def value_shown(self) -> str:
        return reading(self.alert.rule, self.transition.value)

    @property
    def threshold_shown(self) -> str:
        return reading(self.alert.rule, self.transition.threshold)

    @property
    def text(self) -> str:
        """The contract's line: state, rule, where, value, threshold."""
        return (
            f"{self.state} {self.alert.rule} {self.where} value {self.value_shown} "
            f"threshold {self.threshold_shown}"
        )

    @property
    def is_reminder(self) -> bool:
        return self.transition.kind == Transition.Kind.REMINDER

    @property
    def message(self) -> str:
        return shown(self.transition.message or self.alert.message)

    @property
    def fix(self) -> dict:
        return stored_fix(self.alert.fix) or {}

    @property
    def advice(self) -> str:
        return (self.fix.get("advice") or "").strip()

    @property
    def advice_block(self) -> str:
        """The advice with its further lines indented under `Fix: `, so no line of it
        can pass for a transition's line."""
        return "\n       ".join(shown(row) for row in self.advice.splitlines())

    @property
    def sql(self) -> str:
        """The fix's statement, a name's bidi or control characters shown escaped: what
        a line seems to say is what it holds."""
        statement = (self.fix.get("sql") or "").strip()
        return "\n".join(shown(row) for row in statement.splitlines())

    @property
    def safety(self) -> str:
        """What running the statement does, in one line (`copies ~1,200 rows, 5.0 MiB`)."""
        fix = self.fix
        return safety_words(fix.get("safety"), fix.get("rows"), fix.get("bytes"))

    @property
    def sql_block(self) -> str:
        """The statement indented under its line, as it is to be run."""
        return "\n".join(f"    {row}" for row in self.sql.splitlines())

    @property
    def partitions(self) -> str:
        return ", ".join(shown(name) for name in partitions_involved(self.alert))

    @property
    def since(self) -> str:
        return when(self.alert.started_at)

    @property
    def resolved_at(self) -> str:
        return when(self.alert.resolved_at or self.transition.created_at)

    @property
    def page(self) -> str:
        return page_of(self.alert)

    @property
    def silence(self) -> str:
        return silence_link(self.alert)

    @property
    def ack(self) -> str:
        """The signed link that acknowledges this firing (`acks.link_token`)."""
        return link(f"/alerts/ack/{link_token(self.alert)}/")

    def worst_first(self) -> tuple:
        critical = self.alert.severity == Severity.CRITICAL
        rule = self.alert.rule
        return (
            KIND_ORDER[self.transition.kind],
            0 if critical else 1,
            -excess(rule, self.transition.value, self.transition.threshold),
            self.where,
            self.transition.pk,
        )


def lines_of(notification: Notification) -> list[Line]:
    # (a channel's message carries its transitions; an email holds them)
    held = notification.carried if notification.channel_id else notification.transitions
    transitions = held.select_related("alert", "alert__partitioned_table").order_by("id")
    lines = [Line(t, t.alert, notification.server.name) for t in transitions]
    return sorted(lines, key=Line.worst_first)


def subject_of(server_name: str, lines: list[Line]) -> str:
    """CONTRACT: the single transition named, else the counts."""
    if len(lines) == 1:
        only = lines[0]
        summary = f"{only.state} {only.alert.rule} {only.where}"
    else:
        firing = sum(line.state == "FIRING" for line in lines)
        summary = f"{firing} firing, {len(lines) - firing} resolved"
    context = {"server_name": server_name, "summary": summary}
    subject = " ".join(render_to_string("alerts/email/subject.txt", context).split())
    return subject if len(subject) <= SUBJECT_MAX else subject[: SUBJECT_MAX - 1] + "…"


def context_of(notification: Notification, lines: list[Line], subject: str) -> dict:
    detailed = settings.PARTDASH_ALERT_EMAIL_DETAILED
    rest = lines[detailed:]
    firing = sum(line.state == "FIRING" for line in lines)
    server = notification.server
    return {
        "subject": subject,
        "server_name": server.name,
        "server_page": link(f"/servers/{server.pk}/"),
        "lines": lines[:detailed],
        "firing": firing,
        "resolved": len(lines) - firing,
        "reminder": bool(lines) and all(line.is_reminder for line in lines),
        "repeat_hours": figure(settings.PARTDASH_ALERT_REPEAT_HOURS),
        "more": len(rest),
        "more_firing": sum(line.state == "FIRING" for line in rest),
        "more_resolved": sum(line.state == "RESOLVED" for line in rest),
        "alerts_page": link("/alerts/", {"server": server.pk}),
        "evaluation": notification.evaluation,
    }


def new_message_id() -> str:
    """A Message-ID fixed when the notification is created, so any resend repeats it."""
    domain = settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip("> ") or "partdash"
    return make_msgid("partdash", domain=domain)


def recipients_of(notification: Notification) -> list[str]:
    return [address for address in notification.recipients.split(",") if address]


def build_message(notification: Notification) -> EmailMultiAlternatives:
    """The email for `notification`: text and HTML parts, its fixed Message-ID."""
    lines = lines_of(notification)
    subject = notification.subject or subject_of(notification.server.name, lines)
    context = context_of(notification, lines, subject)
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string("alerts/email/body.txt", context),
        to=recipients_of(notification),
        headers={
            "Message-ID": notification.message_id,
            "Auto-Submitted": "auto-generated",  # RFC 3834: no vacation replies
            "X-Partdash-Server": notification.server.name,
            "X-Partdash-Evaluation": notification.evaluation,
        },
    )
    message.attach_alternative(render_to_string("alerts/email/body.html", context), "text/html")
    return message
