"""The server list as the fleet page reads it at a thousand servers: narrowed by
`?status=`, `?group=` (a server group's id or name) and `?tag=`, and ordered by
`?ordering=worst` (servers with firing critical alerts first, then those with firing
warnings, then the healthy; within each, more alerts first, then by name). All of it
is done in the database, so a page of the list costs the same few queries at ten
servers as at a thousand (tests/api/test_fleet_scale.py)."""

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from rest_framework import serializers

from partdash.alerts.models import Alert, Severity
from partdash.alerts.silences import silenced_now
from partdash.servers.choices import ServerStatus
from partdash.servers.models import Server

ORDERINGS = ("worst", "name")


class FleetQuery(serializers.Serializer):
    """What `/api/v1/servers/` narrows and orders on; every field optional."""

    status = serializers.ChoiceField(choices=ServerStatus.choices, required=False)
    group = serializers.CharField(required=False, max_length=100, help_text="id or name")
    tag = serializers.CharField(required=False, max_length=100, help_text="one tag, any case")
    ordering = serializers.ChoiceField(
        choices=ORDERINGS,
        required=False,
        help_text="`worst`: firing critical alerts first, then warnings, then healthy",
    )

    def narrow(self, servers: QuerySet[Server]) -> QuerySet[Server]:
        """`servers` as the query asks for them."""
        wanted = self.validated_data
        if "status" in wanted:
            servers = servers.filter(status=wanted["status"])
        if "group" in wanted:
            # Through a subquery: a server in two matching groups is listed once.
            members = Server.objects.filter(in_group(wanted["group"])).values("pk")
            servers = servers.filter(pk__in=members)
        if "tag" in wanted:
            servers = servers.filter(tagged(wanted["tag"]))
        if wanted.get("ordering") == "worst":
            servers = worst_first(servers)
        return servers


def in_group(group: str) -> Q:
    """Members of the server group with this id or name."""
    by_name = Q(server_groups__name=group)
    return by_name | Q(server_groups__pk=int(group)) if group.isdigit() else by_name


def tagged(tag: str) -> Q:
    """Servers carrying `tag` (tags are stored as `a, b, c`; see `Server.save`)."""
    tag = tag.strip()
    return (
        Q(tags__iexact=tag)
        | Q(tags__istartswith=f"{tag},")
        | Q(tags__iendswith=f", {tag}")
        | Q(tags__icontains=f", {tag},")
    )


def firing(severity: str) -> Coalesce:
    """How many of a server's alerts of `severity` fire, no silence holding them."""
    loud = (
        Alert.objects.filter(server=OuterRef("pk"), state=Alert.State.FIRING, severity=severity)
        .annotate(is_silenced=silenced_now())
        .filter(is_silenced=False)
        .order_by()
        .values("server")
    )
    counted = loud.annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def worst_first(servers: QuerySet[Server]) -> QuerySet[Server]:
    """Critical alerts firing first, then warnings, then the healthy; more alerts first
    within each, then by name."""
    return servers.annotate(
        firing_critical=firing(Severity.CRITICAL), firing_warning=firing(Severity.WARNING)
    ).order_by("-firing_critical", "-firing_warning", "name", "pk")
