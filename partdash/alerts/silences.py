"""Which silences hold now, and which alerts they match: one definition for the API's
`silenced`, the alerts page and the admin.

A silence's null fields match everything; a non-null field matches only its own value, so
a silence on a schema never matches a server's own alerts (`unreachable`), which have
no schema. A maintenance window's silence on a server group matches its members' alerts.
"""

from datetime import datetime, timedelta

from django.db.models import BooleanField, Exists, OuterRef, Q, QuerySet, Value
from django.utils import timezone

from partdash.alerts.models import Silence

# Longer than a week-long maintenance with room to spare, short enough that a forgotten
# silence does not hide a table for good.
MAX_SILENCE = timedelta(days=30)
# The choices of the silence page and its links (CONTRACT: "a duration choice").
DURATIONS = {
    "1h": ("1 hour", timedelta(hours=1)),
    "4h": ("4 hours", timedelta(hours=4)),
    "24h": ("24 hours", timedelta(hours=24)),
    "7d": ("7 days", timedelta(days=7)),
}


def active_silences(now: datetime | None = None) -> QuerySet[Silence]:
    """Silences in force at `now` (default: this moment)."""
    now = now or timezone.now()
    return Silence.objects.filter(starts_at__lte=now, ends_at__gt=now)


def matching(silences: QuerySet[Silence], prefix: str = "") -> QuerySet[Silence]:
    """`silences` narrowed to those matching the alert at `OuterRef(prefix + field)`."""

    def field(name: str) -> Q:
        outer = OuterRef(f"{prefix}{name}")
        return Q(**{f"{name}__isnull": True}) | Q(**{name: outer})

    member = Q(group__isnull=True) | Q(group__servers=OuterRef(f"{prefix}server"))
    return silences.filter(
        field("server"), field("schema"), field("table"), field("rule"), member
    ).distinct()


def alerts_matched_by(alerts: QuerySet, **scope) -> QuerySet:
    """`alerts` that a silence with `scope` (server, schema, table, rule; None matches
    everything) would match: the other side of `matching`."""
    return alerts.filter(**{field: value for field, value in scope.items() if value is not None})


def silenced_now(now: datetime | None = None) -> Exists | Value:
    """An annotation for an Alert queryset: whether a silence in force matches it. With
    none in force (most of the time), `False` without asking each alert: the question
    is a subquery per alert, 40 ms of a thousand servers' 7,000 open alerts."""
    in_force = active_silences(now)
    if not in_force.exists():
        return Value(False, output_field=BooleanField())
    return Exists(matching(in_force))


def silence_problems(
    starts_at: datetime, ends_at: datetime, now: datetime, ended_is_fine: bool = False
) -> dict[str, str]:
    """What is wrong with a silence's time box, by field. A new silence must end in the
    future; `ended_is_fine` lets an ended one be kept (its comment edited)."""
    if ends_at <= starts_at:
        return {"ends_at": "must be after starts_at"}
    if ends_at <= now and not ended_is_fine:
        return {"ends_at": "is in the past: this silence would hold nothing back"}
    if ends_at - starts_at > MAX_SILENCE:
        return {"ends_at": f"a silence lasts at most {MAX_SILENCE.days} days"}
    return {}
