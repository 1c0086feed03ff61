"""Choice constants for what a MySQL-compatible server is and how partdash reaches it."""

from django.db import models


class Flavor(models.TextChoices):
    UNKNOWN = "unknown", "Unknown"
    MARIADB = "mariadb", "MariaDB"
    MYSQL = "mysql", "MySQL"


class TlsMode(models.TextChoices):
    """Named after the MySQL client's --ssl-mode values."""

    DISABLED = "disabled", "Disabled"
    PREFERRED = "preferred", "Preferred (encrypt, no verification)"
    VERIFY_CA = "verify_ca", "Verify CA"
    VERIFY_IDENTITY = "verify_identity", "Verify CA and host name"
