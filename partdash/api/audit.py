"""`GET /api/v1/audit/`: the audit trail (`partdash.accounts.audit`), newest first, in
pages; admins only (`accounts.view_auditentry`). Read-only: nothing in partdash edits or
deletes an entry."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.pagination import LimitOffsetPagination

from partdash.accounts.models import AuditEntry
from partdash.api.pagination import MAX_LIMIT


class AuditQuery(serializers.Serializer):
    """What the trail narrows on."""

    since = serializers.DateTimeField(required=False, help_text="entries at or after this")
    user = serializers.CharField(required=False, max_length=150, help_text="a user name")
    object = serializers.RegexField(
        r"^[a-z_]{1,100}(:[^\s]{1,255})?$",
        required=False,
        help_text='a kind of object ("server", "user", "alertrule") or one ("server:3")',
    )


class AuditEntrySerializer(serializers.ModelSerializer):
    at = serializers.DateTimeField(source="timestamp")
    user = serializers.CharField(source="username")
    address = serializers.IPAddressField(source="remote_addr", allow_null=True)
    action = serializers.CharField(
        source="event", help_text="create, update, delete, sign_in, poll_now..."
    )
    object_type = serializers.CharField(source="content_type.model")
    object_id = serializers.CharField(source="object_pk", help_text='"" for no one object')
    object = serializers.CharField(source="object_repr")
    changes = serializers.JSONField(
        help_text='field: [before, after]; a secret\'s as "(changed)", never its value'
    )

    class Meta:
        model = AuditEntry
        fields = ["id", "at", "user", "address", "action", "object_type", "object_id"]
        fields += ["object", "changes"]


class AuditPages(LimitOffsetPagination):
    default_limit = 100
    max_limit = MAX_LIMIT


class AuditView(generics.ListAPIView):
    """Who did what, when, from which address: every change people and tokens made,
    sign-ins and failed sign-ins, Poll now, test alerts and plan downloads, newest
    first. `?since=` (ISO 8601), `?user=` (a user name), `?object=` (`server` or
    `server:3`); `?limit=`, `?offset=` (100 a page by default)."""

    serializer_class = AuditEntrySerializer
    pagination_class = AuditPages
    read_permission = "accounts.view_auditentry"
    queryset = AuditEntry.objects.select_related("content_type")

    @extend_schema(parameters=[AuditQuery])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = AuditQuery(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        wanted = query.validated_data
        entries = super().get_queryset()
        if "since" in wanted:
            entries = entries.filter(timestamp__gte=wanted["since"])
        if "user" in wanted:
            entries = entries.filter(username=wanted["user"])
        if "object" in wanted:
            kind, _, pk = wanted["object"].partition(":")
            entries = entries.filter(content_type__model=kind)
            if pk:
                entries = entries.filter(object_pk=pk)
        return entries
