"""Alerting in the Django admin: rule overrides and silences are edited here; alerts,
their transitions and the notifications that carried them (SMTP failures included) are
read-only records."""

from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html

from partdash.accounts.permissions import SEND_TEST_ALERT, can
from partdash.alerts import channels, windows
from partdash.alerts.models import (
    Alert,
    AlertRule,
    Channel,
    MaintenanceWindow,
    Notification,
    Silence,
    Transition,
    rule_choices,
)
from partdash.alerts.overrides import override_problems, recipient_list, recipient_problems
from partdash.alerts.silences import active_silences, silence_problems
from partdash.alerts.testalert import (
    MAX_CHANNELS_PER_TEST,
    TestAlertLate,
    TooMany,
    send_channel_tests_as,
)
from partdash.alerts.transports import DeliveryError
from partdash.lib.shown import shown


class AlertRuleForm(forms.ModelForm):
    """The API's checks (`partdash.alerts.overrides`), and one override per scope."""

    class Meta:
        model = AlertRule
        fields = [
            "rule",
            "enabled",
            "server",
            "tag",
            "schema",
            "table",
            "threshold",
            "clear_threshold",
            "for_polls",
            "severity",
            "recipients",
            "channels",
            "escalate_to",
            "escalate_after_minutes",
        ]

    def clean_recipients(self) -> str:
        addresses = recipient_list(self.cleaned_data.get("recipients", ""))
        problems = recipient_problems(addresses)
        if problems:
            raise forms.ValidationError(problems)
        return ", ".join(addresses)

    def clean(self) -> dict:
        cleaned = super().clean()
        if not cleaned.get("rule"):
            return cleaned  # the field's own error says so
        problems = override_problems(
            cleaned.get("rule"),
            cleaned.get("threshold"),
            cleaned.get("clear_threshold"),
            cleaned.get("for_polls"),
        )
        for field, problem in problems.items():
            self.add_error(field if field in self.fields else None, problem)
        if (cleaned.get("escalate_to") is None) != (cleaned.get("escalate_after_minutes") is None):
            self.add_error("escalate_to", "Set both the channel and the minutes, or neither.")
        scope = {f: cleaned.get(f) for f in ("rule", "server", "tag", "schema", "table")}
        twin = AlertRule.objects.filter(**scope).exclude(pk=self.instance.pk).first()
        if twin is not None and not problems:
            raise forms.ValidationError(f"Rule {twin.pk} already overrides {twin}: edit that one.")
        return cleaned


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = AlertRuleForm
    list_display = [
        "rule",
        "enabled",
        "scope_text",
        "threshold",
        "clear_threshold",
        "for_polls",
        "severity",
        "recipients",
    ]
    list_filter = ["rule", "enabled", "server"]
    search_fields = ["tag", "schema", "table", "recipients"]
    fieldsets = [
        (None, {"fields": ["rule", "enabled"]}),
        ("Where (blank: everywhere)", {"fields": ["server", "tag", "schema", "table"]}),
        (
            "Figures (blank: the less specific rule's, then the built-in default)",
            {"fields": ["threshold", "clear_threshold", "for_polls", "severity"]},
        ),
        (
            "Who is told (blank: ALERT_EMAILS, and every channel taking the rule)",
            {"fields": ["recipients", "channels"]},
        ),
        (
            "Escalation: unacknowledged alerts also go to a channel",
            {"fields": ["escalate_to", "escalate_after_minutes"]},
        ),
    ]
    filter_horizontal = ["channels"]

    @admin.display(description="Scope")
    def scope_text(self, rule: AlertRule) -> str:
        scope = [f"{k}={v}" for k, v in rule.scope().items() if v is not None]
        if rule.server_id:
            scope[0] = f"server={rule.server}"
        return ", ".join(scope) or "everywhere"


class ChannelForm(forms.ModelForm):
    """The URL is write-only (it holds the service's secret): required for a new
    channel, kept when left blank on edit; checked by the sender before it is stored."""

    url = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="An Apprise URL (slack://, msteams://, pagerduty://, opsgenie://, tgram://, "
        "discord://, matrix://, ntfy://...), a service's own webhook URL, or any other "
        "https:// URL for partdash's JSON webhook. Stored encrypted, never shown back; "
        "leave blank to keep the stored one.",
    )
    rules = forms.MultipleChoiceField(
        choices=rule_choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The rules it receives; none ticked: every rule.",
    )

    class Meta:
        model = Channel
        fields = ["name", "url", "rules", "min_severity", "enabled"]

    def clean_url(self) -> str:
        url = (self.cleaned_data.get("url") or "").strip()
        if not url:
            if self.instance.pk is None:
                raise forms.ValidationError("A new channel needs its URL.")
            return ""
        try:
            self.kind = channels.check_url(url)
        except channels.ChannelRefused as refused:
            raise forms.ValidationError(str(refused)) from None
        return url

    def clean_rules(self) -> list[str]:
        return sorted(set(self.cleaned_data.get("rules") or []))

    def save(self, commit: bool = True) -> Channel:
        channel = super().save(commit=False)
        if url := self.cleaned_data.get("url"):
            channel.set_url(url)
            channel.kind = self.kind
        if commit:
            channel.save()
        return channel


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    """Channels: the URL is entered, never shown; everyone who may see a channel sees its
    scheme and host (`Channel.url_shown`), and nothing here decrypts the URL."""

    form = ChannelForm
    list_display = ["name", "kind", "address", "receives", "min_severity", "enabled"]
    list_display += ["last_failure"]
    list_filter = ["kind", "enabled"]
    search_fields = ["name"]
    readonly_fields = ["address"]
    actions = ["send_test"]

    def get_fields(self, request, obj=None) -> list[str]:
        """The URL's box only for who may change the channel: a read-only field would
        show `Channel.url()`, the decrypted URL."""
        fields = ["name", "address", "url", "rules", "min_severity", "enabled"]
        if obj is None:
            fields.remove("address")  # a new channel: nothing stored yet
        elif not self.has_change_permission(request, obj):
            fields.remove("url")
        return fields

    @admin.display(description="URL (scheme and host)")
    def address(self, channel: Channel) -> str:
        return channel.url_shown or "—"

    @admin.display(description="Rules")
    def receives(self, channel: Channel) -> str:
        return ", ".join(channel.rules) or "every rule"

    @admin.display(description="Last failed message")
    def last_failure(self, channel: Channel) -> str:
        failed = channel.notifications.exclude(last_error="").filter(sent_at=None).first()
        if failed is None:
            return "—"
        return format_html('<span class="errornote">{}</span>', failed.last_error)

    def has_send_test_permission(self, request) -> bool:
        """Test alerts: whoever may edit the alert rules (operators, admins), as on the
        alerts page and the API; not staff status or view permission alone."""
        return can(request.user, SEND_TEST_ALERT)

    @admin.action(
        description="Send a test alert through the selected channels", permissions=["send_test"]
    )
    def send_test(self, request, queryset) -> None:
        chosen = list(queryset.order_by("name")[: MAX_CHANNELS_PER_TEST + 1])
        if len(chosen) > MAX_CHANNELS_PER_TEST:
            self.message_user(
                request,
                f"Select at most {MAX_CHANNELS_PER_TEST} channels to test at a time "
                f"({queryset.count()} selected).",
                messages.ERROR,
            )
            return
        try:
            outcomes = send_channel_tests_as(request.user, chosen)
        except TooMany as limited:
            self.message_user(request, f"No test alert sent: {limited}", messages.ERROR)
            return
        for channel, outcome in zip(chosen, outcomes, strict=True):
            self._say_tested(request, channel, outcome)

    def _say_tested(self, request, channel: Channel, outcome: str | BaseException) -> None:
        if isinstance(outcome, TestAlertLate):
            self.message_user(
                request, f"{channel.name}: test alert not confirmed: {outcome}", messages.WARNING
            )
        elif isinstance(outcome, DeliveryError):
            self.message_user(
                request, f"{channel.name}: test alert not sent: {outcome}", messages.ERROR
            )
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            self.message_user(request, f"{channel.name}: test alert sent ({outcome})")


class MaintenanceWindowForm(forms.ModelForm):
    class Meta:
        model = MaintenanceWindow
        fields = [
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
        ]
        # Both model fields are named for a rule: the recurrence and the alert rule it
        # silences; one "Rule:" label each left a DBA guessing which was which.
        labels = {"rrule": "Recurrence (RRULE)", "rule": "Alert rule"}
        help_texts = {"rule": "Empty: every alert rule."}

    def clean(self) -> dict:
        cleaned = super().clean()
        probe = MaintenanceWindow(
            **{f: cleaned.get(f) for f in ("rrule", "duration_minutes", "timezone")},
            server=cleaned.get("server"),
            group=cleaned.get("group"),
            created_at=self.instance.created_at,
        )
        for field, problem in windows.problems(probe).items():
            self.add_error(field, problem)
        return cleaned


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(admin.ModelAdmin):
    form = MaintenanceWindowForm
    list_display = [
        "name",
        "rrule",
        "duration_minutes",
        "timezone",
        "server",
        "group",
        "next_starts",
    ]
    search_fields = ["name", "comment"]

    @admin.display(description="Next occurrences (UTC)")
    def next_starts(self, window: MaintenanceWindow) -> str:
        starts = windows.stored_next(window)[:3]  # (as the last plan found them)
        return ", ".join(f"{start:%Y-%m-%d %H:%M}" for start in starts) or "none"

    def save_model(self, request, obj: MaintenanceWindow, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        windows.plan(obj)


class SilenceForm(forms.ModelForm):
    class Meta:
        model = Silence
        fields = ["server", "schema", "table", "rule", "starts_at", "ends_at", "comment"]

    def clean(self) -> dict:
        cleaned = super().clean()
        starts_at, ends_at = cleaned.get("starts_at"), cleaned.get("ends_at")
        if starts_at and ends_at:
            keeping_its_end = self.instance.pk and "ends_at" not in self.changed_data
            problems = silence_problems(starts_at, ends_at, timezone.now(), keeping_its_end)
            for field, problem in problems.items():
                self.add_error(field, problem)
        return cleaned


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    form = SilenceForm
    list_display = [
        "__str__",
        "server",
        "schema",
        "table",
        "rule",
        "starts_at",
        "ends_at",
        "in_force",
        "created_by",
        "comment",
    ]
    list_filter = ["rule", "server"]
    search_fields = ["schema", "table", "comment"]
    readonly_fields = ["created_by", "created_at"]
    actions = ["end_now"]

    def get_changeform_initial_data(self, request) -> dict:
        return {"starts_at": timezone.now(), **super().get_changeform_initial_data(request)}

    @admin.display(boolean=True, description="In force")
    def in_force(self, silence: Silence) -> bool:
        return silence.starts_at <= timezone.now() < silence.ends_at

    def save_model(self, request, obj: Silence, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.action(description="End the selected silences now", permissions=["change"])
    def end_now(self, request, queryset) -> None:
        now = timezone.now()
        ending = list(active_silences(now).filter(pk__in=queryset.values("pk")))
        for silence in ending:  # one by one, each in the audit trail
            silence.ends_at = now
            silence.save(update_fields=["ends_at"])
        self.message_user(request, f"{len(ending)} silence(s) ended.", messages.SUCCESS)


class ReadOnlyAdmin(admin.ModelAdmin):
    """A record of what happened: viewed, never written here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class TransitionInline(admin.TabularInline):
    model = Transition
    fields = ["kind", "created_at", "value", "threshold", "silenced", "notification"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(ReadOnlyAdmin):
    list_display = [
        "state",
        "rule",
        "severity",
        "server",
        "where",
        "value",
        "threshold",
        "started_at",
        "resolved_at",
        "notified_at",
    ]
    list_filter = ["state", "rule", "severity", "server"]
    search_fields = ["schema", "table", "partition", "message"]
    date_hierarchy = "started_at"
    list_select_related = ["server"]
    inlines = [TransitionInline]

    @admin.display(description="Where", ordering="table")
    def where(self, alert: Alert) -> str:
        if not alert.table:
            return "(the server)"
        name = f"{shown(alert.schema)}.{shown(alert.table)}"  # bidi characters escaped
        return f"{name} {shown(alert.partition)}" if alert.partition else name


class DeliveryFilter(admin.SimpleListFilter):
    title = "delivery"
    parameter_name = "delivery"

    def lookups(self, request, model_admin):
        return [
            ("failed", "Failed (not sent yet)"),
            ("errors", "Any SMTP error"),
            ("sent", "Sent"),
        ]

    def queryset(self, request, queryset):
        if self.value() == "failed":
            return queryset.exclude(last_error="").filter(sent_at=None)
        if self.value() == "errors":
            return queryset.exclude(last_error="")
        if self.value() == "sent":
            return queryset.exclude(sent_at=None)
        return queryset


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "server",
        "subject",
        "recipients",
        "channel",
        "attempts",
        "sent_at",
        "error",
    ]
    list_filter = [DeliveryFilter, "server", "channel"]
    search_fields = ["subject", "recipients", "last_error", "message_id"]
    list_select_related = ["server", "channel"]

    @admin.display(description="Last error", ordering="last_error")
    def error(self, notification: Notification) -> str:
        if not notification.last_error:
            return "—"
        return format_html('<span class="errornote">{}</span>', notification.last_error)
