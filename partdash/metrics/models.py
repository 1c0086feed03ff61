"""Stored snapshots of what polls saw."""

from django.db import models


class ServerSnapshot(models.Model):
    """Server-level figures from one poll: settings and status counters that the
    health checks compare partition counts and sizes against."""

    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="snapshots")
    taken_at = models.DateTimeField(db_index=True)
    poll_id = models.CharField(max_length=64, unique=True)
    flavor = models.CharField(max_length=10)
    version = models.CharField(max_length=100)
    variables = models.JSONField(default=dict)
    status_counters = models.JSONField(default=dict)
    partitioned_tables = models.PositiveIntegerField(null=True)
    partitions = models.PositiveIntegerField(null=True)
    warnings = models.JSONField(default=list)
    seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["-taken_at"]
        get_latest_by = "taken_at"

    def __str__(self) -> str:
        return f"{self.server} at {self.taken_at:%Y-%m-%d %H:%M:%S}"
