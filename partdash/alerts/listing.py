"""Alerts as users see them (API, alerts page, badges): each with whether a silence holds
it now, and the open ones counted per server or table."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, QuerySet

from partdash.alerts.models import Alert
from partdash.alerts.silences import silenced_now

OPEN = (Alert.State.PENDING, Alert.State.FIRING)


def alerts_as_shown(now: datetime | None = None) -> QuerySet[Alert]:
    """Every alert with its server and `is_silenced`: a silence in force matches it."""
    return Alert.objects.select_related("server").annotate(is_silenced=silenced_now(now))


@dataclass(frozen=True)
class OpenCounts:
    """Open alerts of one server (or table): firing and pending count those no silence
    holds; `silenced` counts the open ones a silence holds."""

    firing: int = 0
    pending: int = 0
    silenced: int = 0


def open_counts(alerts: QuerySet[Alert], by: str = "server_id") -> dict[int, OpenCounts]:
    """`alerts` (from `alerts_as_shown`) that are open, counted per value of `by`."""
    loud = Q(is_silenced=False)
    rows = (
        alerts.filter(state__in=OPEN)
        .values(by)
        .annotate(
            firing=Count("id", filter=loud & Q(state=Alert.State.FIRING)),
            pending=Count("id", filter=loud & Q(state=Alert.State.PENDING)),
            silenced=Count("id", filter=Q(is_silenced=True)),
        )
        .order_by()
    )
    return {
        row[by]: OpenCounts(row["firing"], row["pending"], row["silenced"])
        for row in rows
        if row[by] is not None
    }
