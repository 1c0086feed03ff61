"""A monitored MySQL or MariaDB server and its encrypted credentials."""

import os

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from partdash.lib import secrets
from partdash.servers.choices import Flavor, ServerStatus, TlsMode

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
    "tls_offered",
    "tls_checked_at",
)


def default_poll_interval() -> int:
    return settings.PARTDASH_DEFAULT_POLL_INTERVAL


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
    tls_mode = models.CharField(max_length=20, choices=TlsMode, default=TlsMode.PREFERRED)
    ssl_ca = models.CharField(
        "TLS CA file", max_length=500, blank=True, help_text="Path to a PEM CA bundle."
    )
    poll_interval = models.PositiveIntegerField(
        default=default_poll_interval,
        validators=[MinValueValidator(MIN_POLL_INTERVAL), MaxValueValidator(86400)],
        help_text="Seconds between polls.",
    )
    enabled = models.BooleanField(default=True)
    tags = models.CharField(max_length=500, blank=True, help_text="Comma-separated labels.")

    flavor = models.CharField(max_length=10, choices=Flavor, default=Flavor.UNKNOWN, editable=False)
    version = models.CharField(max_length=100, blank=True, editable=False)
    status = models.CharField(
        max_length=12, choices=ServerStatus, default=ServerStatus.NEVER, editable=False
    )
    # When a poll was last tried (whatever its outcome) and when one last succeeded.
    last_poll_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_success_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    next_poll_at = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)
    partitioned_tables = models.PositiveIntegerField(null=True, blank=True, editable=False)
    partitions = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Whether the server offered TLS when last looked at (None: not known yet), so a new
    # process knows without a throw-away connection; looked at again once a day.
    tls_offered = models.BooleanField(null=True, blank=True, editable=False)
    tls_checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Server {self.name} {self.host}:{self.port}>"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def has_password(self) -> bool:
        return bool(self.password_token)

    @property
    def tag_list(self) -> list[str]:
        return [tag.strip() for tag in self.tags.split(",") if tag.strip()]

    def set_password(self, password: str) -> None:
        self.password_token = secrets.encrypt(password) if password else ""

    def get_password(self) -> str:
        return secrets.decrypt(self.password_token) if self.password_token else ""

    def clean(self) -> None:
        self.tags = ", ".join(dict.fromkeys(self.tag_list))
        if self.ssl_ca and not os.access(self.ssl_ca, os.R_OK):
            raise ValidationError({"ssl_ca": f"{self.ssl_ca} is not a readable file."})
