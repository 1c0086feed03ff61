"""Alerts: rule overrides, one state per (rule, server, table, partition), the transitions
waiting to be announced (an outbox, like healthchecks' Flip), the emails that carried
them, and silences.

Evaluation (pure, `partdash.health.alerting`) turns stored health and the open alerts
into transitions; the alerts service writes them here in the poll's transaction; a Celery
task claims each server's evaluation atomically and sends one email for it.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from partdash.alerts.transports import channel_kinds
from partdash.health.kinds import registered


class RuleName(models.TextChoices):
    """The rules that judge no finding. A finding kind's rule is its kind's, named and
    labelled by its declaration (`partdash.health.kinds`): `rule_choices` lists both."""

    PARTITION_SIZE = "partition_size", "Partition size"
    TABLE_SIZE = "table_size", "Table size"
    TABLE_GROWTH = "table_growth", "Table growth per day"
    UNREACHABLE = "unreachable", "Unreachable"
    STALE_POLLS = "stale_polls", "No successful poll"
    WORKING_SET_FORECAST = "working_set_forecast", "Working set outgrows the pool (forecast)"


def rule_choices() -> list[tuple[str, str]]:
    """Every rule as (name, label): the registered finding kinds' (those with a rule),
    then the others. The rule columns take it as a callable: read when a form or a
    validation asks, so a kind registered later is among them, and the migrations name
    the function rather than its values (a new finding kind needs no migration)."""
    found = [(kind.name, kind.label) for kind in registered() if kind.alert is not None]
    return found + list(RuleName.choices)


def rule_names() -> list[str]:
    return [name for name, _ in rule_choices()]


class Severity(models.TextChoices):
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"


class AlertRule(models.Model):
    """An override of a built-in rule. Null scope fields match everything; the most
    specific rule that matches wins (table over schema over tag over server over none),
    so a disabled rule on one table switches the rule off there alone. Null figures fall
    back to the next less specific rule, then to the built-in default."""

    rule = models.CharField(max_length=20, choices=rule_choices)
    enabled = models.BooleanField(default=True)
    threshold = models.FloatField(null=True, blank=True)
    clear_threshold = models.FloatField(null=True, blank=True)
    for_polls = models.PositiveSmallIntegerField(null=True, blank=True)
    severity = models.CharField(max_length=10, choices=Severity, blank=True)
    server = models.ForeignKey(
        "servers.Server", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Null (not "") means "everywhere", as the API shows it (CONTRACT: alert rules).
    tag = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    schema = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    table = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    recipients = models.TextField(blank=True, help_text="Comma-separated email addresses.")
    # The channels this scope's alerts go to, in place of those whose own rules take
    # them (none: the default route), as `recipients` stand in for ALERT_EMAILS.
    channels = models.ManyToManyField(
        "Channel",
        blank=True,
        related_name="+",
        help_text="Send these alerts to these channels (none: every channel taking it).",
    )
    # Alerts of this rule still firing and not acknowledged this many minutes after they
    # fired are sent to this channel too, once (`partdash.alerts.acks.escalate`).
    escalate_to = models.ForeignKey(
        "Channel", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    escalate_after_minutes = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["rule", "id"]

    def __str__(self) -> str:
        scope = [f"{k}={v}" for k, v in self.scope().items() if v is not None]
        return f"{self.rule} ({', '.join(scope) or 'everywhere'})"

    def scope(self) -> dict:
        return {
            "server": self.server_id,
            "tag": self.tag,
            "schema": self.schema,
            "table": self.table,
        }


class Alert(models.Model):
    """One condition on one server (and table, and partition, where it has one). At most
    one open (pending or firing) alert per key; resolved ones are history."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        FIRING = "firing", "Firing"
        RESOLVED = "resolved", "Resolved"

    rule = models.CharField(max_length=20, choices=rule_choices)
    severity = models.CharField(max_length=10, choices=Severity, default=Severity.WARNING)
    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="alerts")
    partitioned_table = models.ForeignKey(
        "metrics.PartitionedTable",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="alerts",
    )
    # Names kept as they were, so history reads right after a table is dropped.
    schema = models.CharField(max_length=64, blank=True)
    table = models.CharField(max_length=64, blank=True)
    partition = models.CharField(max_length=130, blank=True)
    state = models.CharField(max_length=10, choices=State, default=State.PENDING)
    value = models.FloatField(null=True, blank=True)
    threshold = models.FloatField(null=True, blank=True)
    message = models.TextField(blank=True)
    fix = models.JSONField(null=True, blank=True)  # {advice, sql}, as on the finding
    held_polls = models.PositiveIntegerField(default=0)  # consecutive polls it held
    clear_polls = models.PositiveIntegerField(default=0)  # consecutive clear polls, firing
    started_at = models.DateTimeField()  # when the condition began to hold
    fired_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    notified_at = models.DateTimeField(null=True, blank=True)  # firing announced (sent)
    reminded_at = models.DateTimeField(null=True, blank=True)
    # Acknowledged while firing (`partdash.alerts.acks`): no reminders; cleared when it
    # worsens (warning to critical). Firing again after it resolved is a new alert.
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    ack_comment = models.TextField(blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)  # sent to the escalation channel
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "server", "schema", "table", "partition"],
                condition=~Q(state="resolved"),
                name="one_open_alert_per_condition",
            )
        ]
        indexes = [models.Index(fields=["server", "state"])]

    def __str__(self) -> str:
        where = f"{self.schema}.{self.table}" if self.table else str(self.server_id)
        return f"{self.state} {self.rule} {where}"


class Acknowledgement(models.Model):
    """An alert acknowledged, or its acknowledgement cleared (`cleared`: it worsened):
    the alert's history keeps every one."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="acknowledgements")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    who = models.CharField(max_length=150, blank=True)  # as shown, kept if the user goes
    via = models.CharField(max_length=20, blank=True)  # api, page, link, worsened
    comment = models.TextField(blank=True)
    cleared = models.BooleanField(default=False)
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{'cleared' if self.cleared else 'acknowledged'} {self.alert}"


class ChannelKind(models.TextChoices):
    """The built-in channel kinds' names. What a channel's URL reaches is a registered
    transport's kind (`partdash.alerts.transports`, `channels.kind_of`); `Channel.kind`'s
    choices are the registry's (`channel_kinds`), so a new kind needs no member here and
    no migration."""

    SLACK = "slack", "Slack"
    MSTEAMS = "msteams", "Microsoft Teams"
    PAGERDUTY = "pagerduty", "PagerDuty"
    OPSGENIE = "opsgenie", "Opsgenie"
    TELEGRAM = "telegram", "Telegram"
    DISCORD = "discord", "Discord"
    MATRIX = "matrix", "Matrix"
    NTFY = "ntfy", "ntfy"
    WEBHOOK = "webhook", "JSON webhook"
    APPRISE = "apprise", "Other (Apprise URL)"


class Channel(models.Model):
    """Where alerts go besides email: a chat, a pager or a webhook, named by an Apprise
    URL (a plain http(s) URL: partdash's own JSON webhook). The URL holds the service's
    secret (a token, a routing key): it is stored encrypted like server passwords and
    never shown back. A channel receives the transitions of the rules it lists (none:
    every rule) at or above its severity."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=channel_kinds, editable=False)
    url_token = models.TextField(editable=False)  # Fernet (partdash.lib.secrets)
    # What may be shown of the URL (its scheme and host, `partdash.lib.redacted`), kept
    # when it is set so that showing a channel never decrypts its URL.
    url_shown = models.CharField(max_length=300, blank=True, editable=False)
    rules = models.JSONField(default=list, blank=True)  # rule names; [] = every rule
    min_severity = models.CharField(max_length=10, choices=Severity, default=Severity.WARNING)
    enabled = models.BooleanField(default=True)
    # When the alerts already firing were announced to it, once (`channels.welcome`).
    announced_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def set_url(self, url: str) -> None:
        from partdash.lib import secrets
        from partdash.lib.redacted import scheme_and_host

        self.url_token = secrets.encrypt(url)
        self.url_shown = scheme_and_host(url)

    def url(self) -> str:
        from partdash.lib import secrets

        try:
            return secrets.decrypt(self.url_token) if self.url_token else ""
        except secrets.SecretError:
            raise secrets.SecretError(
                f"the stored URL of channel {self.name!r} cannot be decrypted with "
                "PARTDASH_ENCRYPTION_KEYS (was a key removed before `manage.py rotate_keys` ran?)"
            ) from None

    def receives(self, rule: str, severity: str) -> bool:
        if self.rules and rule not in self.rules:
            return False
        return self.min_severity != Severity.CRITICAL or severity == Severity.CRITICAL


class Notification(models.Model):
    """One message: the transitions of one server's evaluation (or one reminder digest)
    for one set of email recipients, or for one channel (`channel`, its transitions in
    `carried`: a transition is in one email and in one message per channel).
    Claimed with a conditional UPDATE, so one worker sends it; `message_id` is fixed
    when it is created, so a resend after a crash carries the same Message-ID."""

    server = models.ForeignKey(
        "servers.Server", on_delete=models.CASCADE, related_name="notifications"
    )
    evaluation = models.CharField(max_length=64, db_index=True)
    message_id = models.CharField(max_length=255, unique=True)
    recipients = models.TextField(blank=True)
    subject = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    # When it was given up: a permanent error, or PARTDASH_ALERT_MAX_ATTEMPTS attempts.
    given_up_at = models.DateTimeField(null=True, blank=True)
    # One that had no recipients, never sent: once recipients exist, its alerts still
    # firing are announced in this evaluation instead (`alerts.belated`), and it stops
    # being listed as a failure.
    superseded_by = models.CharField(max_length=64, blank=True, default="")
    channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.SET_NULL, related_name="notifications"
    )
    # The channel's name and kind once it is deleted (`keep_deliveries`): its messages
    # stay in the alerts' histories.
    channel_name = models.CharField(max_length=100, blank=True, default="")
    channel_kind = models.CharField(max_length=20, blank=True, default="")
    carried = models.ManyToManyField("Transition", blank=True, related_name="channel_messages")

    class Meta:
        ordering = ["-created_at"]
        constraints = [  # one message per channel per evaluation: taken by its INSERT
            models.UniqueConstraint(
                fields=["channel", "evaluation"],
                condition=Q(channel__isnull=False),
                name="one_message_per_channel_evaluation",
            )
        ]

    def __str__(self) -> str:
        return self.subject or self.evaluation


class Transition(models.Model):
    """An alert's change, waiting to be announced: the outbox. Written in the poll's
    transaction; a transition belongs to exactly one notification."""

    class Kind(models.TextChoices):
        FIRING = "firing", "Firing"
        RESOLVED = "resolved", "Resolved"
        REMINDER = "reminder", "Still firing"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="transitions")
    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind)
    # The evaluation (one per poll of the server, or one reminder run) it came from: its
    # transitions go out together, one email per server per evaluation and recipients.
    evaluation = models.CharField(max_length=64, db_index=True)
    recipients = models.TextField(blank=True)  # resolved when evaluated; "" = ALERT_EMAILS
    # The channel ids its rule's override picked when evaluated (null: the default
    # route, each channel's own rules and severity).
    channels = models.JSONField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True)
    threshold = models.FloatField(null=True, blank=True)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField()
    silenced = models.BooleanField(default=False)  # held back by a silence: never sent
    # For this channel only (its announcement of what was firing when it was added);
    # null: for email and every channel that receives it.
    only_channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # That channel's name once it is deleted: the announcement stays in the alert's
    # history and goes to nobody else.
    only_channel_name = models.CharField(max_length=100, blank=True, default="")
    # For email only: an alert announced late to email recipients (`belated`), which
    # the channels heard when it fired.
    email_only = models.BooleanField(default=False)
    notification = models.ForeignKey(
        Notification,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="transitions",
    )

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["server", "notification"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.alert}"


class MaintenanceWindow(models.Model):
    """A recurring silence: every occurrence of `rrule` (RFC 5545, in `timezone`) holds
    the alerts it matches back for `duration_minutes`, as a silence would; it is one, made
    ahead of time (`partdash.alerts.windows.plan`). Null fields match everything."""

    name = models.CharField(max_length=100, unique=True)
    rrule = models.TextField(help_text="e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=0")
    duration_minutes = models.PositiveIntegerField()
    timezone = models.CharField(max_length=64, default="UTC")
    server = models.ForeignKey(
        "servers.Server", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Or every member of a server group (as it is at each occurrence), not both.
    group = models.ForeignKey(
        "servers.ServerGroup", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    schema = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    table = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    rule = models.CharField(max_length=20, choices=rule_choices, null=True, blank=True)  # noqa: DJ001
    comment = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The next starts (UTC, ISO 8601) as the last plan found them, so that reading a
    # window never expands its rule (`windows.stored_next`).
    upcoming_starts = models.JSONField(default=list, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Silence(models.Model):
    """Holds notifications back while it lasts. Null fields match everything."""

    server = models.ForeignKey(
        "servers.Server", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Null means "every" (CONTRACT: silences).
    schema = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    table = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    rule = models.CharField(max_length=20, choices=rule_choices, null=True, blank=True)  # noqa: DJ001
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    comment = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # A group window's occurrence: every member of the group (with `server` null).
    group = models.ForeignKey(
        "servers.ServerGroup", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # One occurrence of a maintenance window (made by `windows.plan`), else null.
    window = models.ForeignKey(
        MaintenanceWindow, null=True, blank=True, on_delete=models.CASCADE, related_name="silences"
    )

    class Meta:
        ordering = ["-ends_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["window", "starts_at"],
                condition=Q(window__isnull=False),
                name="one_silence_per_window_occurrence",
            )
        ]

    def __str__(self) -> str:
        return f"silence until {self.ends_at:%Y-%m-%d %H:%M} UTC"


@receiver(pre_delete, sender=Channel)
def keep_deliveries(sender, instance: Channel, **kwargs) -> None:
    """Before a channel goes (its foreign keys set to null): its name and kind on its
    messages and on its own announcements, so alert histories keep what it delivered."""
    Notification.objects.filter(channel=instance).update(
        channel_name=instance.name, channel_kind=instance.kind
    )
    Transition.objects.filter(only_channel=instance).update(only_channel_name=instance.name)
