"""One poll of one server: connect, collect, store, record the outcome.

The Celery task and `manage.py poll` both call `poll_server`, so a poll behaves the
same whichever way it was started.
"""

import logging
import time
import uuid
from dataclasses import dataclass, field

import pymysql
from django.db import transaction
from django.utils import timezone

from partdash.collector.facts import count_partitions, read_facts
from partdash.lib.secrets import SecretError
from partdash.metrics.models import ServerSnapshot
from partdash.servers.choices import ServerStatus
from partdash.servers.connection import ConnectionFailure, open_session, target_for
from partdash.servers.models import Server

log = logging.getLogger(__name__)


@dataclass
class PollReport:
    """The outcome of one poll, as `manage.py poll` prints it."""

    server: str
    ok: bool
    partitions_seen: int = 0
    changed: int = 0
    stored: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def summary(self) -> str:
        if not self.ok:
            return f"{self.server}: not polled: {self.error}"
        line = (
            f"{self.server}: {self.partitions_seen} partitions seen, {self.changed} changed, "
            f"{self.stored} stored in {self.seconds:.2f}s, {len(self.warnings)} warning(s)"
        )
        return line + "".join(f"; {warning}" for warning in self.warnings)


def _warnings_for(facts) -> list[str]:
    warnings = []
    if not facts.is_on("performance_schema"):
        warnings.append(
            "performance_schema is OFF: no per-partition I/O; set performance_schema=ON in "
            "my.cnf and restart"
        )
    return warnings


def _collect(server: Server, poll_id: str, started: float) -> tuple[ServerSnapshot, list[str]]:
    with open_session(target_for(server)) as session:
        facts = read_facts(session)
        warnings = _warnings_for(facts)
        try:
            tables, partitions = count_partitions(session)
        except pymysql.MySQLError as exc:
            tables = partitions = None
            warnings.append(f"cannot read mysql.innodb_table_stats: {exc.args[-1]}")
        snapshot = ServerSnapshot(
            server=server,
            taken_at=timezone.now(),
            poll_id=poll_id,
            flavor=session.flavor,
            version=session.version,
            variables=facts.variables,
            status_counters=facts.status,
            partitioned_tables=tables,
            partitions=partitions,
            warnings=warnings,
            seconds=time.monotonic() - started,
        )
    return snapshot, warnings


def record_failure(server: Server, message: str) -> None:
    Server.objects.filter(pk=server.pk).update(
        status=ServerStatus.UNREACHABLE, last_poll_at=timezone.now(), last_error=message
    )


def _store(server: Server, snapshot: ServerSnapshot, warnings: list[str]) -> bool:
    """Save the snapshot and the server's latest state; False if this poll id was stored
    already (a retried task)."""
    with transaction.atomic():
        created = not ServerSnapshot.objects.filter(poll_id=snapshot.poll_id).exists()
        if created:
            snapshot.save()
        Server.objects.filter(pk=server.pk).update(
            status=ServerStatus.DEGRADED if warnings else ServerStatus.OK,
            flavor=snapshot.flavor,
            version=snapshot.version,
            last_poll_at=snapshot.taken_at,
            last_error="; ".join(warnings),
            partitioned_tables=snapshot.partitioned_tables,
            partitions=snapshot.partitions,
        )
    return created


def poll_server(server: Server, poll_id: str | None = None) -> PollReport:
    """Poll one server now. Never raises for a server-side problem: the report and the
    server's status say what went wrong."""
    started = time.monotonic()
    poll_id = poll_id or uuid.uuid4().hex
    try:
        snapshot, warnings = _collect(server, poll_id, started)
    except (ConnectionFailure, SecretError) as failure:
        message = str(failure)
        log.warning("poll of %s failed: %s", server.name, message)
        record_failure(server, message)
        return PollReport(server=server.name, ok=False, error=message)
    created = _store(server, snapshot, warnings)
    report = PollReport(
        server=server.name,
        ok=True,
        partitions_seen=snapshot.partitions or 0,
        changed=int(created),
        stored=int(created),
        seconds=time.monotonic() - started,
        warnings=warnings,
    )
    log.debug("%s", report.summary)
    return report
