"""Alerting in the Django admin: rule overrides and silences are edited here; alerts,
their transitions and the notifications that carried them (SMTP failures included) are
read-only records."""

from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html

from partdash.alerts.models import Alert, AlertRule, Notification, Silence, Transition
from partdash.alerts.overrides import override_problems, recipient_list, recipient_problems
from partdash.alerts.silences import active_silences, silence_problems
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
        ("Who is told (blank: ALERT_EMAILS)", {"fields": ["recipients"]}),
    ]

    @admin.display(description="Scope")
    def scope_text(self, rule: AlertRule) -> str:
        scope = [f"{k}={v}" for k, v in rule.scope().items() if v is not None]
        if rule.server_id:
            scope[0] = f"server={rule.server}"
        return ", ".join(scope) or "everywhere"


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
        ended = active_silences(now).filter(pk__in=queryset.values("pk")).update(ends_at=now)
        self.message_user(request, f"{ended} silence(s) ended.", messages.SUCCESS)


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
        "attempts",
        "sent_at",
        "error",
    ]
    list_filter = [DeliveryFilter, "server"]
    search_fields = ["subject", "recipients", "last_error", "message_id"]
    list_select_related = ["server"]

    @admin.display(description="Last SMTP error", ordering="last_error")
    def error(self, notification: Notification) -> str:
        if not notification.last_error:
            return "—"
        return format_html('<span class="errornote">{}</span>', notification.last_error)
