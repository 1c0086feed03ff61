"""Builders for the stored rows alerting shows (servers, tables, alerts, silences,
notifications), written straight to the database: no MariaDB, no poll."""

from datetime import timedelta
from itertools import count

from django.utils import timezone

from partdash.alerts.models import Alert, Notification, Silence
from partdash.metrics.models import PartitionedTable
from partdash.servers.models import Server

_serial = count(1)

RUNWAY_FIX = {
    "advice": "Add monthly partitions before rows land in the catch-all.",
    "sql": "ALTER TABLE `shop`.`orders` REORGANIZE PARTITION `p_max` INTO (...)",
}


def server(name: str | None = None, **fields) -> Server:
    """A registered server that is never polled (disabled, so saving it queues nothing)."""
    name = name or f"db{next(_serial)}"
    fields = {"host": "127.0.0.1", "user": "monitor", "enabled": False, **fields}
    return Server.objects.create(name=name, **fields)


def table(on: Server, schema: str = "shop", name: str = "orders", **fields) -> PartitionedTable:
    fields = {"method": "RANGE", "partition_count": 4, "first_seen_at": timezone.now(), **fields}
    return PartitionedTable.objects.create(server=on, schema=schema, name=name, **fields)


def alert(
    on: Server,
    rule: str = "runway",
    state: str = Alert.State.FIRING,
    of: PartitionedTable | None = None,
    ago: timedelta = timedelta(hours=1),
    **fields,
) -> Alert:
    """An alert on a table (`of`), or the server's own one (no table)."""
    now = timezone.now()
    where = {"partitioned_table": of, "schema": of.schema, "table": of.name} if of else {}
    fired = {"fired_at": now - ago, "notified_at": now - ago} if state != "pending" else {}
    resolved = {"resolved_at": now} if state == Alert.State.RESOLVED else {}
    fields = {
        "severity": "critical",
        "value": 3.0,
        "threshold": 14.0,
        "message": f"{rule} on {of or on}",
        **where,
        **fired,
        **resolved,
        **fields,
    }
    return Alert.objects.create(server=on, rule=rule, state=state, started_at=now - ago, **fields)


def silence(hours: float = 4, starts_ago: float = 0, **fields) -> Silence:
    """A silence in force from `starts_ago` hours ago for `hours` hours."""
    starts_at = timezone.now() - timedelta(hours=starts_ago)
    return Silence.objects.create(
        starts_at=starts_at, ends_at=starts_at + timedelta(hours=hours), **fields
    )


def notification(on: Server, error: str = "", attempts: int = 1, **fields) -> Notification:
    serial = next(_serial)
    sent = {} if error else {"sent_at": timezone.now()}
    return Notification.objects.create(
        server=on,
        evaluation=f"eval-{serial}",
        message_id=f"<partdash-{serial}@test>",
        recipients="dba@example.com",
        subject=f"[partdash] {on.name}: FIRING runway shop.orders",
        attempts=attempts,
        last_error=error,
        **{**sent, **fields},
    )
