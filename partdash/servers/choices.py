"""Choice constants for monitored servers."""

from django.db import models


class Flavor(models.TextChoices):
    UNKNOWN = "unknown", "Unknown"
    MARIADB = "mariadb", "MariaDB"
    MYSQL = "mysql", "MySQL"


class ServerStatus(models.TextChoices):
    NEVER = "never", "Never polled"
    OK = "ok", "OK"
    DEGRADED = "degraded", "Degraded"
    UNREACHABLE = "unreachable", "Unreachable"


class TlsMode(models.TextChoices):
    """Named after the MySQL client's --ssl-mode values."""

    DISABLED = "disabled", "Disabled"
    PREFERRED = "preferred", "Preferred (encrypt, no verification)"
    VERIFY_CA = "verify_ca", "Verify CA"
    VERIFY_IDENTITY = "verify_identity", "Verify CA and host name"
