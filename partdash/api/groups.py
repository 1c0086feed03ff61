"""Server groups (`/api/v1/server-groups/`): replicas of one primary or shards of one
schema, whose tables partdash compares after each member's poll (docs/groups.md)."""

from django.db.models.fields.json import KeyTransform
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, viewsets

from partdash.metrics.models import ServerSnapshot
from partdash.servers.models import (
    DEFAULT_EXCLUDED_SCHEMAS,
    Server,
    ServerGroup,
    schema_patterns,
    schema_patterns_problem,
)


class SchemaPatternsField(serializers.ListField):
    """The schemas a group leaves out, as a list of patterns (stored comma-separated)."""

    child = serializers.CharField(allow_blank=False, trim_whitespace=True)

    def to_representation(self, data):
        return schema_patterns(data)

    def to_internal_value(self, data):
        patterns = super().to_internal_value(data)
        problem = schema_patterns_problem(patterns)
        if problem:
            raise serializers.ValidationError(problem)
        return ", ".join(patterns)


class MemberDriftSerializer(serializers.Serializer):
    server = serializers.IntegerField()
    name = serializers.CharField()
    drifting_tables = serializers.IntegerField(
        help_text="its tables laid out unlike the group's (each has a drift finding)"
    )
    missing_tables = serializers.IntegerField(help_text="the group's tables it lacks")
    compared = serializers.BooleanField(help_text="false until its first poll in the group")


class ServerGroupSerializer(serializers.ModelSerializer):
    servers = serializers.PrimaryKeyRelatedField(
        queryset=Server.objects.all(), many=True, required=False, help_text="the members' ids"
    )
    reference = serializers.PrimaryKeyRelatedField(
        queryset=Server.objects.all(),
        allow_null=True,
        required=False,
        default=None,
        help_text="the member the others are compared with; null: the layout most share",
    )
    excluded_schemas = SchemaPatternsField(
        required=False,
        help_text="schema patterns (* ? [..], any case) left out of the comparison; "
        f"[]: every schema; when not given: {DEFAULT_EXCLUDED_SCHEMAS}",
    )
    members = serializers.SerializerMethodField(
        help_text="Each member's drift as its latest poll judged it"
    )

    class Meta:
        model = ServerGroup
        fields = ["id", "name", "kind", "servers", "reference", "excluded_schemas", "members"]

    def validate(self, attrs):
        before = getattr(self.instance, "reference", None)
        group = ServerGroup(reference=attrs.get("reference", before))
        if "servers" in attrs:
            members = attrs["servers"]
        else:
            members = list(self.instance.servers.all()) if self.instance else []
        problem = group.reference_problem(members)
        if problem:
            raise serializers.ValidationError({"reference": problem})
        return attrs

    @extend_schema_field(MemberDriftSerializer(many=True))
    def get_members(self, group: ServerGroup) -> list[dict]:
        return member_drift(group)


def member_drift(group: ServerGroup) -> list[dict]:
    """Each member's drift as stored by its latest poll (`pressure["drift"]`)."""
    rows = []
    for server in group.servers.order_by("name"):
        drift = (
            ServerSnapshot.objects.latest_for(server)
            .values_list(KeyTransform("drift", "pressure"), flat=True)
            .first()
        ) or {}
        compared = group.name in (drift.get("groups") or [])
        rows.append(
            {
                "server": server.pk,
                "name": server.name,
                "drifting_tables": len(drift.get("tables") or []),
                "missing_tables": sum(
                    1 for m in drift.get("missing") or [] if m.get("group") == group.name
                ),
                "compared": compared,
            }
        )
    return rows


class ServerGroupViewSet(viewsets.ModelViewSet):
    """Server groups; viewers read, operators write. A member's drift is judged after
    its next poll (the group's change counts as one: every member compares again)."""

    queryset = ServerGroup.objects.prefetch_related("servers").select_related("reference")
    serializer_class = ServerGroupSerializer
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]
