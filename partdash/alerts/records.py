"""Alert rows, rule overrides and silences as `partdash.health`'s plain records: what
evaluation (`service`), the belated announcements (`belated`), escalation (`acks`) and
the channels' delivery (`channels`) all match alerts with.

It sits below all of them and imports none, so none of them imports another just to
read a key or a server's overrides: they formed one import cycle (service, acks,
belated, conditions, emails, alertmanager), held apart by imports inside functions.
"""

from django.db.models import Q
from django.utils import timezone

from partdash.alerts.models import Alert, AlertRule, Silence
from partdash.health.alert_rules import Override, SilenceScope
from partdash.health.alerting import Key
from partdash.servers.models import Server


def key_of(alert: Alert) -> Key:
    """What tells one alert of a server from another: its rule and where it holds."""
    return Key(alert.rule, alert.schema, alert.table, alert.partition)


def overrides_for(server: Server) -> list[Override]:
    """The overrides that can match this server (its own, its tags', everyone's)."""
    tags = set(server.tag_list)
    rows = AlertRule.objects.filter(Q(server=None) | Q(server=server)).prefetch_related("channels")
    return [
        Override(
            rule=r.rule,
            enabled=r.enabled,
            threshold=r.threshold,
            clear_threshold=r.clear_threshold,
            for_polls=r.for_polls,
            severity=r.severity or "",
            recipients=r.recipients or "",
            channels=tuple(sorted(channel.pk for channel in r.channels.all())),
            server=r.server_id,
            tag=r.tag,
            schema=r.schema,
            table=r.table,
            id=r.pk,
        )
        for r in rows
        if r.tag is None or r.tag in tags
    ]


def silences_for(server: Server) -> list[SilenceScope]:
    """The silences not yet ended that can hold this server's alerts (its own, its
    groups', everyone's)."""
    now = timezone.now()
    mine = (Q(server=None) & Q(group=None)) | Q(server=server) | Q(group__servers=server)
    rows = Silence.objects.filter(mine, ends_at__gt=now).distinct()
    return [
        SilenceScope(s.starts_at, s.ends_at, s.server_id, s.schema, s.table, s.rule) for s in rows
    ]
