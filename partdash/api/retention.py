"""Retention policies under /api/v1/retention-policies/ (CONTRACT: Retention): viewers
read, operators write. A policy keeps days or partitions, exactly one; a bad one is a 400
with one line saying why (`metrics.models.policy_problem`)."""

from rest_framework import serializers, viewsets

from partdash.metrics.models import RetentionPolicy, policy_problem
from partdash.servers.models import Server


class RetentionPolicySerializer(serializers.ModelSerializer):
    pattern = serializers.CharField(
        max_length=200,
        help_text="schema.table, with * ? [..] wildcards (shop.events_*, *.audit): the "
        "schema part matches the schema, the table part the table, case-sensitively where "
        "the server's lower_case_table_names is 0; the most specific matching policy wins",
    )
    keep_days = serializers.IntegerField(
        min_value=1, allow_null=True, required=False, default=None, help_text="time RANGE tables"
    )
    keep_partitions = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        required=False,
        default=None,
        help_text="the newest partitions holding rows to keep (id RANGE tables)",
    )
    server = serializers.PrimaryKeyRelatedField(
        queryset=Server.objects.all(),
        allow_null=True,
        required=False,
        default=None,
        help_text="null: every server",
    )

    class Meta:
        model = RetentionPolicy
        fields = [
            "id",
            "pattern",
            "keep_days",
            "keep_partitions",
            "server",
            "name",
            "comment",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def validate(self, attrs: dict) -> dict:
        names = ("pattern", "keep_days", "keep_partitions")
        merged = {n: getattr(self.instance, n) for n in names} if self.instance else {}
        merged.update(attrs)
        # A PATCH giving one of the two switches the policy to it.
        for given, other in (names[1:], names[:0:-1]):
            if self.partial and attrs.get(given) is not None and other not in attrs:
                merged[other] = attrs[other] = None
        problem = policy_problem(
            merged.get("pattern"), merged.get("keep_days"), merged.get("keep_partitions")
        )
        if problem:
            raise serializers.ValidationError(problem)
        if "pattern" in attrs:
            attrs["pattern"] = attrs["pattern"].strip()
        return attrs


class RetentionPolicyViewSet(viewsets.ModelViewSet):
    """Retention policies; viewers read, operators write. partdash only shows the
    partitions past them and the DROP PARTITION that enforces them: it drops nothing."""

    queryset = RetentionPolicy.objects.select_related("server")
    serializer_class = RetentionPolicySerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
