"""Badges for the pages: a server's or a table's open alerts, linking to the alerts page
filtered to it, and the fleet's firing count beside "Alerts" in the top bar."""

from django import template
from django.urls import reverse

from partdash.alerts.listing import OpenCounts, alerts_as_shown, open_counts
from partdash.alerts.models import Alert
from partdash.metrics.models import PartitionedTable
from partdash.servers.models import Server

register = template.Library()


def badge_text(counts: OpenCounts) -> str:
    parts = [
        f"{counts.firing} firing" if counts.firing else "",
        f"{counts.pending} pending" if counts.pending else "",
        f"{counts.silenced} silenced" if counts.silenced else "",
    ]
    return ", ".join(part for part in parts if part) or "no open alerts"


@register.inclusion_tag("dashboard/alert_badge.html")
def alert_badge(server: Server | None = None, table: PartitionedTable | None = None) -> dict:
    """`{% alert_badge server=server %}` or `{% alert_badge table=table %}`."""
    if table is not None:
        alerts, server_id = alerts_as_shown().filter(partitioned_table=table), table.server_id
        query = f"table={table.pk}"
    else:
        alerts, server_id = alerts_as_shown().filter(server=server), server.pk
        query = f"server={server.pk}"
    counts = open_counts(alerts).get(server_id, OpenCounts())
    href = f"{reverse('alerts')}?{query}"
    return {"counts": counts, "href": href, "title": badge_text(counts)}


@register.simple_tag
def firing_total() -> int:
    """Firing alerts fleet-wide that no silence holds (on every page: one count, not a
    count per server summed)."""
    return alerts_as_shown().filter(state=Alert.State.FIRING, is_silenced=False).order_by().count()
