"""A monitored MySQL or MariaDB server and its encrypted credentials."""

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from partdash.lib import secrets
from partdash.lib.fields import ClippedCharField
from partdash.mysql.choices import Flavor, TlsMode
from partdash.mysql.connection import FINGERPRINT_LENGTH, ca_file_problem, parse_fingerprint
from partdash.servers.choices import ServerStatus

MIN_POLL_INTERVAL = 10
# What the latest poll wrote: read-only everywhere a server is shown.
LATEST_POLL_FIELDS = (
    "flavor",
    "version",
    "status",
    "last_poll_at",
    "last_success_at",
    "last_error",
    "partitioned_tables",
    "partitions",
    "unmonitored_tables",
    "tls_offered",
    "tls_checked_at",
    "tls_fingerprint",
    "consecutive_failures",
    "next_poll_at",
)
# Where and as whom the stored password is sent, with the words an error names them by:
# changing any of them sends the password somewhere the admin has not approved it for.
DESTINATION_FIELDS = {
    "host": "host",
    "port": "port",
    "user": "user",
    "tls_mode": "TLS mode",
    "ssl_ca": "TLS CA file",
    # Approving a certificate sends the password to whoever holds it: a staff account
    # that does not know the password must not be able to approve its own proxy's.
    "tls_approved_fingerprint": "approved TLS certificate",
}
# How long a recorded `tls_offered` stands before it is written again.
TLS_RECHECK = timedelta(days=1)


def backoff_delay(interval: int, failures: int) -> int:
    """Seconds from a failed poll to the next one when the last `failures` polls failed
    in a row: the interval after one failure, then doubling (2x, 4x, ...) up to
    PARTDASH_POLL_BACKOFF_MAX_SECONDS, never below the interval itself."""
    if failures <= 1:
        return interval
    ceiling = max(interval, settings.PARTDASH_POLL_BACKOFF_MAX_SECONDS)
    return min(interval * 2 ** min(failures - 1, 16), ceiling)


def default_poll_interval() -> int:
    return settings.PARTDASH_DEFAULT_POLL_INTERVAL


def validate_fingerprint(text: str) -> None:
    try:
        parse_fingerprint(text)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


def split_tags(tags: str) -> list[str]:
    """Stored comma-separated tags as a list."""
    return [tag.strip() for tag in tags.split(",") if tag.strip()]


class Server(models.Model):
    """A MySQL/MariaDB server partdash polls. Its password is stored encrypted (Fernet)
    and is never shown back; `status` and the counts reflect the latest poll."""

    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[RegexValidator(r"^[\w.@+-]+$", "Letters, digits and . @ + - _ only.")],
    )
    host = models.CharField(max_length=255)
    port = models.PositiveIntegerField(
        default=3306, validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    user = models.CharField(max_length=80)
    password_token = models.TextField(blank=True, editable=False)
    tls_mode = models.CharField(
        "TLS mode", max_length=20, choices=TlsMode, default=TlsMode.PREFERRED
    )
    ssl_ca = models.CharField(
        "TLS CA file", max_length=500, blank=True, help_text="Path to a PEM CA bundle."
    )
    # Over TLS that no CA verified (`preferred`), the password itself (clear text, or
    # sha256 full authentication) goes only to a server presenting this certificate.
    tls_approved_fingerprint = models.CharField(
        "approved TLS certificate",
        max_length=FINGERPRINT_LENGTH + 32,  # room for OpenSSL's colons before `clean`
        blank=True,
        validators=[validate_fingerprint],
        help_text="SHA256:… of the server's certificate, as Test connection shows it. Accounts "
        "whose authentication sends the password itself (PAM, LDAP, sha256_password, "
        "caching_sha2_password full authentication) are answered over TLS only when a CA "
        "(verify_ca) or this approval vouches for the certificate.",
    )
    poll_interval = models.PositiveIntegerField(
        default=default_poll_interval,
        validators=[MinValueValidator(MIN_POLL_INTERVAL), MaxValueValidator(86400)],
        help_text="Seconds between polls.",
    )
    enabled = models.BooleanField(default=True)
    # Statements' plans from the server's own EXPLAIN (`mysql.sources.explain`): needs
    # SELECT on the tables, which the least-privilege account lacks, so an operator opts in.
    explain_statements = models.BooleanField(
        default=False,
        help_text="EXPLAIN sampled statements to count the partitions they read exactly "
        "(needs SELECT on the tables; never executes them).",
    )
    # /metrics's series budget (docs/metrics.md): per-table series only for tables with a
    # finding or opted in; this opts every table of the server in.
    export_tables = models.BooleanField(
        default=False,
        help_text="Show every table of the server in /metrics, not only those with a "
        "finding or opted in.",
    )
    tags = models.CharField(max_length=500, blank=True, help_text="Comma-separated labels.")

    flavor = models.CharField(max_length=10, choices=Flavor, default=Flavor.UNKNOWN, editable=False)
    version = ClippedCharField(max_length=100, blank=True, editable=False)
    status = models.CharField(
        max_length=12, choices=ServerStatus, default=ServerStatus.NEVER, editable=False
    )
    # When a poll was last tried (whatever its outcome) and when one last succeeded.
    last_poll_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_success_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    next_poll_at = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)
    # Polls failed in a row (0 after a success): from the second on, the server is polled
    # less often (backoff_delay, applied by polling.scheduling) and only in its share of slots.
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    partitioned_tables = models.PositiveIntegerField(null=True, blank=True, editable=False)
    partitions = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Of `partitioned_tables`, those of engines partdash does not monitor (MyISAM, Aria,
    # MEMORY...): counted, with their partitions in `partitions`, but not analysed.
    unmonitored_tables = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Whether the server offered TLS when last looked at (None: not known yet), so a new
    # process knows without a throw-away connection; looked at again once a day.
    tls_offered = models.BooleanField("TLS offered", null=True, blank=True, editable=False)
    tls_checked_at = models.DateTimeField("TLS checked at", null=True, blank=True, editable=False)
    # The certificate the server presented when last connected to (`SHA256:` + hex), ""
    # before any TLS connection: what an operator approves.
    tls_fingerprint = models.CharField(
        "TLS certificate", max_length=FINGERPRINT_LENGTH, blank=True, editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        # "Poll now" and "Test connection" (API and admin): operators and admins.
        permissions = [("poll_server", "Can poll a server now and test its connection")]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Server {self.name} {self.host}:{self.port}>"

    def save(self, *args, **kwargs) -> None:
        super().save(*args, **kwargs)
        self._remember_stored()

    @classmethod
    def from_db(cls, db, field_names, values) -> "Server":
        server = super().from_db(db, field_names, values)
        server._remember_stored()
        return server

    def refresh_from_db(self, *args, **kwargs) -> None:
        super().refresh_from_db(*args, **kwargs)
        self._remember_stored()

    def _remember_stored(self) -> None:
        """What the database holds, for `destination_changes` (deferred fields are left
        out: they cannot have been changed without being loaded first)."""
        self._stored = {
            name: self.__dict__[name]
            for name in (*DESTINATION_FIELDS, "password_token")
            if name in self.__dict__
        }

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def backoff(self) -> str | None:
        """Why the server is polled less often than its interval, or None if it is not."""
        delay = backoff_delay(self.poll_interval, self.consecutive_failures)
        if delay <= self.poll_interval:
            return None
        return (
            f"{self.consecutive_failures} polls failed in a row: polled every {delay} s "
            f"instead of every {self.poll_interval} s until a poll succeeds"
        )

    def not_polled_seconds(self, now=None) -> float | None:
        """Seconds since the server was last polled (tried, success or not; since its
        registration if never) when that is past PARTDASH_ALERT_STALE_POLL_INTERVALS of
        its gaps between polls (its interval, or its back-off): its polls stopped (a
        worker or beat down), and the pages say "not polled for N min". None otherwise,
        and for a server switched off."""
        if not self.enabled or self.created_at is None:
            return None
        now = now or timezone.now()
        since = (now - (self.last_poll_at or self.created_at)).total_seconds()
        gap = backoff_delay(self.poll_interval, self.consecutive_failures)
        return since if since > settings.PARTDASH_ALERT_STALE_POLL_INTERVALS * gap else None

    @property
    def has_password(self) -> bool:
        return bool(self.password_token)

    @property
    def tag_list(self) -> list[str]:
        return split_tags(self.tags)

    def set_password(self, password: str) -> None:
        self.password_token = secrets.encrypt(password) if password else ""

    def get_password(self) -> str:
        return secrets.decrypt(self.password_token) if self.password_token else ""

    def destination_changes(self) -> list[str]:
        """The `DESTINATION_FIELDS` changed since the server was loaded or saved."""
        stored = getattr(self, "_stored", None)
        if self._state.adding or stored is None:
            return []
        return [
            name
            for name in DESTINATION_FIELDS
            if name in stored
            and getattr(self, name) != stored[name]
            # Withdrawing an approval sends the password to nobody new.
            and not (name == "tls_approved_fingerprint" and not getattr(self, name))
        ]

    def password_reuse(self) -> list[str]:
        """The destination fields changed while the stored password is kept as it is: a
        poll would send that password to a place nobody approved it for. Giving the
        password again (or clearing it) approves the new place."""
        stored = getattr(self, "_stored", {})
        if not self.password_token or self.password_token != stored.get("password_token"):
            return []
        return self.destination_changes()

    def same_address(self) -> list[str]:
        """Names of the other servers registered at this host and port."""
        others = Server.objects.filter(host__iexact=self.host, port=self.port)
        return list(others.exclude(pk=self.pk).values_list("name", flat=True))

    def same_address_warning(self) -> str | None:
        names = self.same_address()
        if not names:
            return None
        return f"{self.address} is also registered as {', '.join(names)}: it will be polled twice"

    def record_tls(self, offered: bool | None, fingerprint: str = "") -> None:
        """Remember whether the server's greeting offered TLS and the certificate it
        presented (`fingerprint`, "" where none was seen): written when either changed or
        is over a day old (every connection reads the greeting, so this costs no
        connection), and never when no greeting arrived."""
        if offered is None:
            return
        fingerprint = (fingerprint or self.tls_fingerprint) if offered else ""
        now = timezone.now()
        checked = self.tls_checked_at
        same = offered == self.tls_offered and fingerprint == self.tls_fingerprint
        if same and checked and now - checked < TLS_RECHECK:
            return
        Server.objects.filter(pk=self.pk).update(
            tls_offered=offered, tls_checked_at=now, tls_fingerprint=fingerprint
        )
        self.tls_offered, self.tls_checked_at, self.tls_fingerprint = offered, now, fingerprint

    def clean(self) -> None:
        self.tags = ", ".join(dict.fromkeys(self.tag_list))
        try:
            self.tls_approved_fingerprint = parse_fingerprint(self.tls_approved_fingerprint)
        except ValueError:
            pass  # the field's validator says so
        errors = {
            name: f"changing the {DESTINATION_FIELDS[name]} needs the password again"
            for name in self.password_reuse()
        }
        problem = ca_file_problem(self.ssl_ca) if self.ssl_ca else None
        if problem:
            errors.setdefault("ssl_ca", problem)
        if errors:
            raise ValidationError(errors)


class DemoRegistration(models.Model):
    """That this install registered the demo server (under `name`): `make up` registers
    it once, so a user who deleted or renamed it does not get it back, and with it the
    alerts they had silenced, on the next start."""

    name = models.CharField(max_length=100, unique=True)
    registered_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"demo registered as {self.name}"


# Schemas a group leaves out unless told otherwise: the demo partdash creates on every
# server it can, and the servers' own (each differs by version and plugins, so each
# made a "the reference lacks this table" finding on a mixed group).
DEFAULT_EXCLUDED_SCHEMAS = "partdash_demo, sys, mysql, performance_schema, information_schema"
MAX_SCHEMA_PATTERNS = 50
MAX_SCHEMA_PATTERN_LENGTH = 128  # a schema name is at most 64 characters; room for [..]
EXCLUDED_SCHEMAS_LENGTH = 1000  # the stored list, comma-separated


def schema_patterns(text: str) -> list[str]:
    """The patterns of a comma-separated list, blanks dropped."""
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def schema_patterns_problem(patterns: list[str]) -> str | None:
    """Why these schema patterns cannot stand, in one line, or None."""
    if len(patterns) > MAX_SCHEMA_PATTERNS:
        return f"at most {MAX_SCHEMA_PATTERNS} schema patterns"
    if len(", ".join(patterns)) > EXCLUDED_SCHEMAS_LENGTH:
        return f"the schema patterns take more than {EXCLUDED_SCHEMAS_LENGTH} characters"
    for pattern in patterns:
        if len(pattern) > MAX_SCHEMA_PATTERN_LENGTH:
            return f"the schema pattern {pattern[:20]!r}... is longer than a schema name can be"
        if "," in pattern or not pattern.isprintable():
            return f"the schema pattern {pattern!r} holds a comma or a control character"
    return None


def validate_schema_patterns(text: str) -> None:
    problem = schema_patterns_problem(schema_patterns(text))
    if problem:
        raise ValidationError(problem)


class ServerGroup(models.Model):
    """Servers that should hold the same partitioned tables laid out the same way: the
    replicas of one primary, or the shards of one schema. Each member's tables are
    compared with the group's (`partdash.metrics.drift`): with the reference member's
    where one is set, else with the layout most members share."""

    class Kind(models.TextChoices):
        REPLICAS = "replicas", "Replicas of one primary"
        SHARDS = "shards", "Shards of one schema"

    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[RegexValidator(r"^[\w.@+-]+$", "Letters, digits and . @ + - _ only.")],
    )
    kind = models.CharField(max_length=10, choices=Kind, default=Kind.REPLICAS)
    servers = models.ManyToManyField(Server, related_name="server_groups", blank=True)
    reference = models.ForeignKey(
        Server,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The member the others are compared with; empty: the layout most members share.",
    )
    excluded_schemas = models.CharField(
        max_length=EXCLUDED_SCHEMAS_LENGTH,
        blank=True,
        default=DEFAULT_EXCLUDED_SCHEMAS,
        validators=[validate_schema_patterns],
        help_text="Schemas left out of the comparison, comma-separated, with * ? [..] "
        "wildcards, any case (demo_*, sys); empty: every schema is compared.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def excluded_schema_patterns(self) -> list[str]:
        """The patterns of the schemas left out of the comparison."""
        return schema_patterns(self.excluded_schemas)

    def reference_problem(self, members) -> str | None:
        """Why `reference` cannot stand with these members (ids or servers), or None."""
        ids = {getattr(m, "pk", m) for m in members}
        if self.reference_id is not None and self.reference_id not in ids:
            return f"the reference {self.reference} is not a member of the group"
        return None
