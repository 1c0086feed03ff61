"""Choice constants for monitored servers (how one is reached: `partdash.mysql.choices`)."""

from django.db import models


class ServerStatus(models.TextChoices):
    NEVER = "never", "Never polled"
    OK = "ok", "OK"
    DEGRADED = "degraded", "Degraded"
    UNREACHABLE = "unreachable", "Unreachable"
