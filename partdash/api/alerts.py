"""Alerts, alert rules, silences and notifications under /api/v1/ (CONTRACT: REST API).

Viewsets are declarative: a queryset, a serializer and a `query_class`, a serializer of
the list's query string whose `apply` filters the queryset (bad values are a 400).
"""

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from partdash.alerts import acks, channels, windows
from partdash.alerts.delivery import one_line
from partdash.alerts.history import history_of
from partdash.alerts.listing import alerts_as_shown, open_counts
from partdash.alerts.models import (
    Alert,
    AlertRule,
    Channel,
    MaintenanceWindow,
    Notification,
    Severity,
    Silence,
    rule_choices,
)
from partdash.alerts.overrides import override_problems, recipient_list, recipient_problems
from partdash.alerts.silences import active_silences, silence_problems
from partdash.alerts.testalert import (
    TestAlertLate,
    TestAlertRefused,
    TooMany,
    send_channel_tests_as,
    send_test_alert_as,
)
from partdash.alerts.transports import DeliveryError
from partdash.api.export import WITH_CSV
from partdash.api.views import FIX
from partdash.servers.models import Server, ServerGroup

MAX_ID = 2**63 - 1  # larger ids would overflow the database's integer, not just miss
MAX_LIST = 5000  # rows of one list, at most: a storm of per-partition alerts stays a page


class RuleField(serializers.ChoiceField):
    """A rule's name: one of `rule_choices` (every registered finding kind's rule and the
    others), read as each serializer is built, so a kind registered later is accepted."""

    def __init__(self, **kwargs):
        super().__init__(rule_choices(), **kwargs)


class BlankAsNull(serializers.CharField):
    """Text stored as "" where there is none, shown as null (as findings show a server's
    own finding: no schema, no table)."""

    def to_representation(self, value) -> str | None:
        return value or None


class NullableScope(serializers.CharField):
    """A scope field (tag, schema, table) where null, or "", means everywhere."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, allow_blank=True, required=False, default=None, **kwargs)

    def run_validation(self, data=serializers.empty) -> str | None:
        return super().run_validation(data) or None


class QueryFilteredMixin:
    """Filters a list from its query string through `query_class` (a serializer with an
    `apply(queryset)`); other actions see the whole queryset."""

    query_class: type[serializers.Serializer] | None = None

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if self.action != "list" or self.query_class is None:
            return queryset
        query = self.query_class(data=self.request.query_params.dict())
        query.is_valid(raise_exception=True)
        return query.apply(queryset)


# --- alerts ---------------------------------------------------------------------------


class AlertSerializer(serializers.ModelSerializer):
    server_id = serializers.IntegerField(read_only=True)
    server = serializers.CharField(source="server.name", read_only=True)
    table_id = serializers.IntegerField(source="partitioned_table_id", allow_null=True)
    schema = BlankAsNull(allow_null=True)
    table = BlankAsNull(allow_null=True)
    partition = BlankAsNull(allow_null=True)
    fix = FIX  # as on findings: one schema component
    silenced = serializers.BooleanField(
        source="is_silenced", help_text="A silence in force matches this alert now."
    )
    acknowledged_by = serializers.SerializerMethodField(
        help_text="Who acknowledged it (null: nobody, or acknowledged through a message's link)"
    )

    class Meta:
        model = Alert
        fields = [
            "id",
            "rule",
            "severity",
            "server_id",
            "server",
            "table_id",
            "schema",
            "table",
            "partition",
            "state",
            "value",
            "threshold",
            "message",
            "fix",
            "started_at",
            "resolved_at",
            "notified_at",
            "silenced",
            "acknowledged_by",
            "acknowledged_at",
            "ack_comment",
        ]
        read_only_fields = fields

    def get_acknowledged_by(self, alert: Alert) -> str | None:
        if alert.acknowledged_at is None:
            return None
        user = alert.acknowledged_by
        return user.get_username() if user is not None else None


# What `/alerts/?ordering=` takes, and the column each orders on.
ALERT_ORDERING = {
    "started_at": "started_at",
    "resolved_at": "resolved_at",
    "severity": "severity",
    "rule": "rule",
    "value": "value",
    "server": "server__name",
}


class AlertQuery(serializers.Serializer):
    state = serializers.ChoiceField(Alert.State.choices, required=False)
    server = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="a server's id"
    )
    table = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="a partitioned table's id"
    )
    rule = RuleField(required=False)
    silenced = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="held by a silence now"
    )
    severity = serializers.ChoiceField(Severity.choices, required=False)
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_LIST, default=1000, help_text="at most"
    )
    ordering = serializers.ChoiceField(
        [f"{sign}{name}" for name in ALERT_ORDERING for sign in ("", "-")],
        required=False,
        help_text="`-` for descending; default: critical first, then newest",
    )

    def apply(self, alerts):
        query = self.validated_data
        filters = {
            "severity": query.get("severity"),
            "state": query.get("state"),
            "server_id": query.get("server"),
            "partitioned_table_id": query.get("table"),
            "rule": query.get("rule"),
            "is_silenced": query.get("silenced"),
        }
        alerts = alerts.filter(**{k: v for k, v in filters.items() if v is not None})
        # History reads newest first; open alerts critical first, then newest.
        if query.get("ordering"):
            name = query["ordering"].removeprefix("-")
            sign = "-" if query["ordering"].startswith("-") else ""
            alerts = alerts.order_by(f"{sign}{ALERT_ORDERING[name]}", "-id")
        elif query.get("state") == Alert.State.RESOLVED:
            alerts = alerts.order_by("-resolved_at", "-id")
        else:
            alerts = alerts.order_by("severity", "-started_at", "-id")
        return alerts[: query["limit"]]


class OpenCountsSerializer(serializers.Serializer):
    server_id = serializers.IntegerField()
    server = serializers.CharField()
    firing = serializers.IntegerField(help_text="firing, not silenced")
    pending = serializers.IntegerField(help_text="pending, not silenced")
    silenced = serializers.IntegerField(help_text="open (pending or firing) and silenced")


class DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    channel = serializers.CharField(allow_null=True, help_text="null: the email")
    kind = serializers.CharField(help_text="email, or the channel's kind")
    recipients = serializers.ListField(child=serializers.CharField())
    outcome = serializers.ChoiceField(
        ["sent", "failing", "given up", "waiting", "no recipients", "superseded", "channel deleted"]
    )
    sent_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField()
    last_error = serializers.CharField(allow_blank=True)
    announced = serializers.ChoiceField(
        ["welcome", "escalation", "late", "announcement"],
        allow_null=True,
        help_text="null: the transition's own message; else this firing told again later: "
        "a new channel's first message, an escalation, or email once recipients existed",
    )
    announced_at = serializers.DateTimeField(allow_null=True)


class HistoryTransitionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(["firing", "resolved", "reminder"])
    at = serializers.DateTimeField()
    value = serializers.FloatField(allow_null=True)
    threshold = serializers.FloatField(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    silenced = serializers.BooleanField()
    evaluation = serializers.CharField()
    deliveries = DeliverySerializer(many=True)


class HistoryAckSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    who = serializers.CharField(allow_null=True)
    via = serializers.CharField()
    comment = serializers.CharField(allow_blank=True)
    cleared = serializers.BooleanField()


class AlertHistorySerializer(serializers.Serializer):
    alert = AlertSerializer()
    transitions = HistoryTransitionSerializer(many=True)
    acknowledgements = HistoryAckSerializer(many=True)


class AckSerializer(serializers.Serializer):
    comment = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        default="",
        help_text="Why, or what is being done about it",
    )


class TestAlertSerializer(serializers.Serializer):
    sent_to = serializers.ListField(child=serializers.EmailField(), help_text="its recipients")


@extend_schema_view(list=extend_schema(parameters=[AlertQuery]))
class AlertViewSet(QueryFilteredMixin, viewsets.ReadOnlyModelViewSet):
    """Alerts, open and resolved: `?state=firing|pending|resolved`, `server`, `table`,
    `rule`, `silenced=true|false`, `limit`."""

    serializer_class = AlertSerializer
    query_class = AlertQuery
    renderer_classes = WITH_CSV
    csv_name = "alerts"

    def get_queryset(self):
        return alerts_as_shown().select_related("acknowledged_by")

    @extend_schema(responses=OpenCountsSerializer(many=True))
    @action(detail=False, methods=["get"])
    def counts(self, request) -> Response:
        """Open alerts per server (only servers that have some), for badges."""
        counts = open_counts(alerts_as_shown())
        # Every server's name, not those of an IN list of up to 1,000 ids (5 ms to plan).
        names = dict(Server.objects.values_list("pk", "name"))
        # Already in OpenCountsSerializer's shape (ints and names): a row per server with
        # open alerts, 1,000 of them at 1,000 servers, not passed through it again.
        rows = [
            {"server_id": pk, "server": names.get(pk, ""), **vars(count)}
            for pk, count in sorted(counts.items())
        ]
        return Response(rows)

    @extend_schema(responses=AlertHistorySerializer)
    @action(detail=True, methods=["get"])
    def history(self, request, pk=None) -> Response:
        """The alert, its transitions (each with the email and channel messages that
        carried it, and their outcome) and its acknowledgements, oldest first."""
        alert = self.get_object()
        shown = {"alert": alert, **history_of(alert)}
        return Response(AlertHistorySerializer(shown).data)

    @extend_schema(request=AckSerializer, responses=AlertSerializer, methods=["POST"])
    @extend_schema(request=None, responses=AlertSerializer, methods=["DELETE"])
    @action(detail=True, methods=["post", "delete"], url_path="ack")
    def ack(self, request, pk=None) -> Response:
        """Operators: acknowledge this firing alert with a comment (POST `{comment}`): no
        reminders while it is; cleared if it worsens. DELETE clears it. 400 when the
        alert is not firing."""
        alert = self.get_object()
        if request.method == "DELETE":
            acks.unacknowledge(alert, request.user)
        else:
            body = AckSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            try:
                acks.acknowledge(alert, request.user, body.validated_data["comment"])
            except acks.AckRefused as refused:
                return Response({"detail": str(refused)}, status=400)
        return Response(AlertSerializer(self.get_queryset().get(pk=alert.pk)).data)

    @extend_schema(request=None, responses=TestAlertSerializer)
    @action(detail=False, methods=["post"], url_path="test")
    def send_test(self, request) -> Response:
        """Operators: send a test alert now, one email to ALERT_EMAILS and every enabled
        rule's recipients. 200 with `sent_to`; 400 when there is nobody to send to; 429
        with `Retry-After` past the user's limits; 502 with the SMTP server's answer when
        it could not be sent; 504 past PARTDASH_TEST_ALERT_SECONDS."""
        try:
            recipients = send_test_alert_as(request.user)
        except TestAlertRefused as refused:
            return Response({"detail": str(refused)}, status=400)
        except TooMany as limited:
            return too_many(limited)
        except TestAlertLate as late:
            return Response({"detail": f"test alert not confirmed: {late}"}, status=504)
        except Exception as error:  # noqa: BLE001 SMTP, network, TLS: said, not raised
            return Response({"detail": f"test alert not sent: {one_line(error)}"}, status=502)
        return Response({"sent_to": recipients})


def too_many(limited: TooMany) -> Response:
    """429, the reason, and `Retry-After` in seconds (as the API's rate limits answer)."""
    headers = {"Retry-After": str(limited.retry_after)}
    return Response({"detail": str(limited)}, status=429, headers=headers)


# --- alert rules ----------------------------------------------------------------------


class RecipientsField(serializers.ListField):
    """Email addresses: a list (or one comma-separated string) in, a list out; stored
    comma-separated."""

    child = serializers.CharField()

    def to_internal_value(self, data) -> str:
        if isinstance(data, str):
            addresses = recipient_list(data)
        else:
            addresses = super().to_internal_value(data)
        problems = recipient_problems(addresses)
        if problems:
            raise serializers.ValidationError(problems)
        return ", ".join(recipient_list(" ".join(addresses)))

    def to_representation(self, value: str) -> list[str]:
        return recipient_list(value)


class AlertRuleSerializer(serializers.ModelSerializer):
    rule = RuleField()
    server = serializers.PrimaryKeyRelatedField(
        queryset=Server.objects.all(), allow_null=True, required=False, default=None
    )
    tag = NullableScope(max_length=100)
    schema = NullableScope(max_length=64)
    table = NullableScope(max_length=64)
    severity = serializers.ChoiceField(
        Severity.choices, allow_null=True, allow_blank=True, required=False
    )
    for_polls = serializers.IntegerField(allow_null=True, required=False)
    recipients = RecipientsField(required=False)
    channels = serializers.PrimaryKeyRelatedField(
        queryset=Channel.objects.all(),
        many=True,
        required=False,
        help_text="The channels this scope's alerts go to, in place of those whose own rules "
        "take them (empty: every channel taking the rule), as recipients stand in for "
        "ALERT_EMAILS",
    )
    escalate_to = serializers.PrimaryKeyRelatedField(
        queryset=Channel.objects.all(),
        allow_null=True,
        required=False,
        help_text="A channel that also receives this rule's alerts nobody acknowledged "
        "within escalate_after_minutes of firing",
    )
    escalate_after_minutes = serializers.IntegerField(
        allow_null=True, required=False, min_value=0, max_value=100_000
    )

    class Meta:
        model = AlertRule
        fields = [
            "id",
            "rule",
            "enabled",
            "threshold",
            "clear_threshold",
            "for_polls",
            "severity",
            "server",
            "tag",
            "schema",
            "table",
            "recipients",
            "channels",
            "escalate_to",
            "escalate_after_minutes",
        ]

    def to_representation(self, instance: AlertRule) -> dict:
        shown = super().to_representation(instance)
        shown["severity"] = shown["severity"] or None
        return shown

    def validate_severity(self, value: str | None) -> str:
        return value or ""

    def validate(self, attrs: dict) -> dict:
        merged = {**self._stored(), **attrs}
        problems = override_problems(
            merged.get("rule"),
            merged.get("threshold"),
            merged.get("clear_threshold"),
            merged.get("for_polls"),
        )
        if problems:
            raise serializers.ValidationError(problems)
        if (merged.get("escalate_to") is None) != (merged.get("escalate_after_minutes") is None):
            raise serializers.ValidationError(
                {"escalate_to": "escalate_to and escalate_after_minutes go together"}
            )
        self._refuse_a_second_rule_for_one_scope(merged)
        return attrs

    def _stored(self) -> dict:
        if self.instance is None:
            return {}
        fields = ["rule", "threshold", "clear_threshold", "for_polls", "tag", "schema", "table"]
        fields += ["escalate_to", "escalate_after_minutes"]
        return {"server": self.instance.server, **{f: getattr(self.instance, f) for f in fields}}

    def _refuse_a_second_rule_for_one_scope(self, merged: dict) -> None:
        """Two overrides of one rule with one scope would leave "the most specific wins"
        without a winner."""
        scope = {f: merged.get(f) for f in ("rule", "server", "tag", "schema", "table")}
        twins = AlertRule.objects.filter(**scope)
        if self.instance is not None:
            twins = twins.exclude(pk=self.instance.pk)
        twin = twins.first()
        if twin is not None:
            raise serializers.ValidationError(
                {"non_field_errors": [f"rule {twin.pk} already overrides {twin}: edit that one"]}
            )


class AlertRuleViewSet(viewsets.ModelViewSet):
    """Overrides of the built-in rules; viewers read, operators write."""

    queryset = AlertRule.objects.select_related("server")
    serializer_class = AlertRuleSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]


# --- silences -------------------------------------------------------------------------


class SilenceSerializer(serializers.ModelSerializer):
    server = serializers.PrimaryKeyRelatedField(
        queryset=Server.objects.all(), allow_null=True, required=False, default=None
    )
    schema = NullableScope(max_length=64)
    table = NullableScope(max_length=64)
    rule = RuleField(allow_null=True, allow_blank=True, required=False, default=None)
    starts_at = serializers.DateTimeField(required=False, help_text="default: now")
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Silence
        fields = [
            "id",
            "server",
            "schema",
            "table",
            "rule",
            "starts_at",
            "ends_at",
            "comment",
            "created_by",
        ]

    def validate_rule(self, value: str | None) -> str | None:
        return value or None

    def validate(self, attrs: dict) -> dict:
        now = timezone.now()
        attrs.setdefault("starts_at", now)
        problems = silence_problems(attrs["starts_at"], attrs["ends_at"], now)
        if problems:
            raise serializers.ValidationError(problems)
        return attrs


class SilenceQuery(serializers.Serializer):
    active = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="in force now (or not)"
    )

    def apply(self, silences):
        active = self.validated_data.get("active")
        if active is None:
            return silences
        in_force = active_silences().values("pk")
        return silences.filter(pk__in=in_force) if active else silences.exclude(pk__in=in_force)


@extend_schema_view(list=extend_schema(parameters=[SilenceQuery]))
class SilenceViewSet(
    QueryFilteredMixin,
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Time-boxed silences: notifications of the alerts they match are held back while
    they last. `created_by` is whoever created it."""

    queryset = Silence.objects.select_related("created_by")
    serializer_class = SilenceSerializer
    query_class = SilenceQuery

    def perform_create(self, serializer: SilenceSerializer) -> None:
        serializer.save(created_by=self.request.user)


# --- channels -------------------------------------------------------------------------


class ChannelSerializer(serializers.ModelSerializer):
    url = serializers.CharField(
        write_only=True,
        max_length=2000,
        trim_whitespace=True,
        help_text="An Apprise URL (slack://, msteams://, pagerduty://, opsgenie://, tgram://, "
        "discord://, matrix://, ntfy://...), a service's own webhook URL, or any other "
        "https:// URL for partdash's JSON webhook. Stored encrypted; never shown back.",
    )
    rules = serializers.ListField(
        child=RuleField(),
        required=False,
        default=list,
        help_text="The rules it receives; empty: every rule.",
    )
    min_severity = serializers.ChoiceField(Severity.choices, required=False)

    class Meta:
        model = Channel
        fields = ["id", "name", "kind", "url", "rules", "min_severity", "enabled"]
        read_only_fields = ["id", "kind"]

    def validate_url(self, url: str) -> str:
        try:
            self._kind = channels.check_url(url)
        except channels.ChannelRefused as refused:
            raise serializers.ValidationError(str(refused)) from None
        return url

    def validate_rules(self, rules: list[str]) -> list[str]:
        return sorted(set(rules))

    def validate(self, attrs: dict) -> dict:
        if self.instance is None and "url" not in attrs:
            raise serializers.ValidationError({"url": "This field is required."})
        return attrs

    def _with_url(self, channel: Channel, attrs: dict) -> Channel:
        url = attrs.pop("url", None)
        for name, value in attrs.items():
            setattr(channel, name, value)
        if url is not None:
            channel.set_url(url)
            channel.kind = self._kind
        channel.save()
        return channel

    def create(self, validated_data: dict) -> Channel:
        return self._with_url(Channel(), validated_data)

    def update(self, instance: Channel, validated_data: dict) -> Channel:
        return self._with_url(instance, validated_data)


class ChannelTestSerializer(serializers.Serializer):
    sent_to = serializers.CharField(help_text="the channel's name")
    service = serializers.CharField(help_text="the service it reached (Apprise's name)")


class ChannelViewSet(viewsets.ModelViewSet):
    """Where alerts go besides email. The URL is write-only: it holds the service's
    secret. Viewers read; operators add, change, delete and test."""

    queryset = Channel.objects.all()
    serializer_class = ChannelSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    @extend_schema(request=None, responses=ChannelTestSerializer)
    @action(detail=True, methods=["post"], url_path="test")
    def send_test(self, request, pk=None) -> Response:
        """Operators: send a test message through this channel now. 200 with the service
        reached; 429 with `Retry-After` past the user's limits; 502 with the service's
        answer (never the URL) when it failed; 504 past PARTDASH_TEST_ALERT_SECONDS."""
        channel = self.get_object()
        try:
            (outcome,) = send_channel_tests_as(request.user, [channel])
        except TooMany as limited:
            return too_many(limited)
        if isinstance(outcome, TestAlertLate):
            return Response({"detail": f"test alert not confirmed: {outcome}"}, status=504)
        if isinstance(outcome, DeliveryError):
            return Response({"detail": f"test alert not sent: {outcome}"}, status=502)
        if isinstance(outcome, BaseException):
            raise outcome
        return Response({"sent_to": channel.name, "service": outcome})


# --- maintenance windows --------------------------------------------------------------


class MaintenanceWindowSerializer(serializers.ModelSerializer):
    server = serializers.PrimaryKeyRelatedField(
        queryset=Server.objects.all(), allow_null=True, required=False, default=None
    )
    group = serializers.PrimaryKeyRelatedField(
        queryset=ServerGroup.objects.all(),
        allow_null=True,
        required=False,
        default=None,
        help_text="A server group: the window holds every member's alerts (not with server)",
    )
    schema = NullableScope(max_length=64)
    table = NullableScope(max_length=64)
    rule = RuleField(allow_null=True, required=False, default=None)
    timezone = serializers.CharField(max_length=64, required=False, default="UTC")
    rrule = serializers.CharField(
        max_length=windows.MAX_RRULE_CHARS,
        help_text="e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=0 (at most hourly, 400 a year)",
    )
    next_occurrences = serializers.SerializerMethodField(
        help_text="The next starts (UTC), the one under way first if it is"
    )
    in_force = serializers.SerializerMethodField()

    class Meta:
        model = MaintenanceWindow
        fields = [
            "id",
            "name",
            "rrule",
            "duration_minutes",
            "timezone",
            "server",
            "group",
            "schema",
            "table",
            "rule",
            "comment",
            "next_occurrences",
            "in_force",
        ]

    # Both from the starts the last plan stored (on save, then hourly): a list of
    # windows never expands a rule (the finding: 27 s per GET of rules that never occur).
    def get_next_occurrences(self, window: MaintenanceWindow) -> list[str]:
        return [moment.isoformat().replace("+00:00", "Z") for moment in windows.stored_next(window)]

    def get_in_force(self, window: MaintenanceWindow) -> bool:
        return windows.stored_in_force(window)

    def validate(self, attrs: dict) -> dict:
        merged = MaintenanceWindow(
            **{**({} if self.instance is None else self._fields_of(self.instance)), **attrs}
        )
        if self.instance is not None:
            merged.created_at = self.instance.created_at
        problems = windows.problems(merged)
        if problems:
            raise serializers.ValidationError(problems)
        return attrs

    @staticmethod
    def _fields_of(window: MaintenanceWindow) -> dict:
        names = ["name", "rrule", "duration_minutes", "timezone", "schema", "table", "rule"]
        scope = {"server": window.server, "group": window.group}
        return {**scope, **{name: getattr(window, name) for name in names}}

    def create(self, validated_data: dict) -> MaintenanceWindow:
        user = self.context["request"].user
        window = super().create({**validated_data, "created_by": user})
        windows.plan(window)
        return window

    def update(self, instance: MaintenanceWindow, validated_data: dict) -> MaintenanceWindow:
        window = super().update(instance, validated_data)
        windows.plan(window)
        return window


class MaintenanceWindowViewSet(viewsets.ModelViewSet):
    """Recurring silences; viewers read, operators write. Each occurrence is a silence
    made ahead of time (listed with the silences, comment "maintenance window NAME")."""

    queryset = MaintenanceWindow.objects.select_related("server")
    serializer_class = MaintenanceWindowSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]


# --- notifications --------------------------------------------------------------------


class NotificationSerializer(serializers.ModelSerializer):
    server_id = serializers.IntegerField(read_only=True)
    server = serializers.CharField(source="server.name", read_only=True)
    recipients = RecipientsField(read_only=True)
    channel = serializers.SerializerMethodField(
        help_text="the channel it went through (its name then, if deleted); null for an email"
    )

    class Meta:
        model = Notification
        fields = [
            "id",
            "server_id",
            "server",
            "subject",
            "recipients",
            "channel",
            "created_at",
            "sent_at",
            "attempts",
            "last_error",
        ]
        read_only_fields = fields

    def get_channel(self, notification: Notification) -> str | None:
        if notification.channel_id is not None:
            return notification.channel.name
        return notification.channel_name or None


class NotificationQuery(serializers.Serializer):
    failed = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="an SMTP attempt failed"
    )
    server = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="a server's id"
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)

    def apply(self, notifications):
        query = self.validated_data
        if query.get("failed") is not None:
            # One superseded (its alerts announced once recipients existed) is history.
            failed = notifications.exclude(last_error="").filter(superseded_by="")
            # An email to nobody is no failure where a channel carried its evaluation.
            by_channel = Q(channel__isnull=False) | ~Q(channel_name="")
            carried = Notification.objects.filter(by_channel).values("evaluation")
            failed = failed.exclude(
                recipients="", channel=None, channel_name="", evaluation__in=carried
            )
            notifications = failed if query["failed"] else notifications.filter(last_error="")
        if query.get("server") is not None:
            notifications = notifications.filter(server_id=query["server"])
        return notifications.order_by("-created_at", "-id")[: query["limit"]]


@extend_schema_view(list=extend_schema(parameters=[NotificationQuery]))
class NotificationViewSet(QueryFilteredMixin, viewsets.ReadOnlyModelViewSet):
    """Alert emails, newest first: `?failed=true` lists those whose last SMTP attempt
    failed, with the error."""

    queryset = Notification.objects.select_related("server", "channel")
    serializer_class = NotificationSerializer
    query_class = NotificationQuery
