"""One poll of one server, the conductor of its stages: collect
(`partdash.collector.collect`), store (`partdash.metrics.store`), analyse
(`partdash.metrics.analysis`) and evaluate the alerts (`partdash.alerts.service`), in
this order, then record the outcome on the server. Store, analyse and evaluate share
one transaction, so a poll is stored all or nothing.

The Celery task and `manage.py poll` both call `poll_server`, so a poll behaves the
same whichever way it was started.
"""

import logging
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, cast

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, OperationalError, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from partdash.alerts.service import evaluate_after_failure, evaluate_after_poll
from partdash.collector.collect import (
    Collection,
    CollectRequest,
    Refuted,
    collect,
    table_key,
)
from partdash.lib.commands import store_unavailable
from partdash.lib.cyclic_gc import cyclic_gc_paused
from partdash.lib.secrets import SecretError
from partdash.metrics import statements
from partdash.metrics.analysis import analyse_server
from partdash.metrics.models import PartitionedTable, ServerSnapshot, UnmonitoredTable
from partdash.metrics.store import PollStore, StoreResult, UndoLog
from partdash.mysql.catalogue import DIGEST_CONSUMER_FIX, HIDDEN, Shortfall
from partdash.mysql.connection import ConnectionFailure, Target, open_session, target_for
from partdash.polling import scheduling
from partdash.polling.memory import PollMemories, PollMemory, StoredPoll
from partdash.servers.choices import ServerStatus
from partdash.servers.models import Server

log = logging.getLogger(__name__)


# What the summary's counts are, said in the line itself: a partition "changed" when its
# latest figures or rates differ from the previous poll's (its row is rewritten), and is
# "stored" when a point of its history was written (its rows or sizes moved; a change of
# rates alone writes none).
CHANGED = "figures or rates differ from the last poll"
STORED = "history points written"


@dataclass
class PollReport:
    """The outcome of one poll, as `manage.py poll` prints it. `warnings` holds one line
    per distinct fix (see `catalogue.grouped`), never one per table."""

    server: str
    ok: bool
    partitions_seen: int = 0
    changed: int = 0
    stored: int = 0
    definitions_read: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def summary(self) -> str:
        """One line, then one indented line per warning."""
        if not self.ok:
            return f"{self.server}: not polled: {self.error}"
        count = len(self.warnings)
        line = (
            f"{self.server}: {self.partitions_seen} partitions seen, {self.changed} changed "
            f"({CHANGED}), {self.stored} stored ({STORED}) in {self.seconds:.2f}s, "
            f"{count} warning{'' if count == 1 else 's'}"
        )
        return "\n".join([line, *(f"  {warning}" for warning in self.warnings)])


def known_signatures(server: Server) -> dict[tuple[str, str], str]:
    tables = PartitionedTable.objects.live().filter(server=server)
    return {
        table_key(schema, name): signature
        for schema, name, signature in tables.values_list("schema", "name", "signature")
    }


@dataclass
class PreviousPoll:
    """What the next poll needs to know of the previous one."""

    stats_since: int | None = None  # its statistics watermark, where incremental is safe
    hidden: set[tuple[str, str]] = field(default_factory=set)  # tables hidden from the account
    poll_id: str | None = None
    status: dict | None = None  # the server status it read (see `mysql.ddl`)
    # Its statement digests' read found performance_schema's digest consumer OFF.
    digest_consumer_off: bool = False


def previous_poll(server: Server) -> PreviousPoll:
    latest = (
        ServerSnapshot.objects.latest_for(server)
        .values_list(
            "stats_watermark", "files_cover_partitions", "warnings", "poll_id", "status_counters"
        )
        .first()
    )
    if latest is None:
        return PreviousPoll()
    watermark, covered, warnings, poll_id, status = latest
    hidden = {
        table_key(schema, table)
        for shortfall in map(Shortfall.from_dict, warnings or [])
        if shortfall.cause == HIDDEN
        for schema, table in shortfall.tables
    }
    shortfalls = [Shortfall.from_dict(stored) for stored in warnings or []]
    consumer_off = any(DIGEST_CONSUMER_FIX in shortfall.fixes for shortfall in shortfalls)
    return PreviousPoll(watermark if covered else None, hidden, poll_id, status, consumer_off)


LAST_ERROR_CHARS = 2000  # a bound, whatever a server's error message holds


def one_line(message: str) -> str:
    """A failure reason as one line."""
    return " ".join(message.split())[:LAST_ERROR_CHARS]


def record_failure(server: Server, message: str) -> None:
    """The poll was tried and failed: `last_poll_at` says when, `last_error` why;
    `last_success_at` keeps the last poll that worked. Then the alerts learn of it."""
    with transaction.atomic():
        Server.objects.filter(pk=server.pk).update(
            status=ServerStatus.UNREACHABLE,
            last_poll_at=timezone.now(),
            last_error=one_line(message),
        )
        evaluate_alerts(evaluate_after_failure, server)


def _record_success(server: Server, collection: Collection, snapshot_at) -> None:
    """`last_error` holds one line per distinct fix (the tables concerned are on the
    snapshot); `partitioned_tables` counts what the server lists, hidden tables too, and
    with `partitions` the tables of engines partdash does not monitor."""
    if collection.listed:
        partitioned_tables = len(collection.signatures)
    else:
        partitioned_tables = PartitionedTable.objects.live().filter(server=server).count()
    other = UnmonitoredTable.objects.filter(server=server).aggregate(
        tables=Count("id"), partitions=Sum("partitions")
    )
    Server.objects.filter(pk=server.pk).update(
        status=ServerStatus.DEGRADED if collection.warnings else ServerStatus.OK,
        flavor=collection.flavor,
        version=collection.version,
        last_poll_at=snapshot_at,
        last_success_at=snapshot_at,
        last_error="\n".join(collection.lines)[:LAST_ERROR_CHARS],
        partitioned_tables=partitioned_tables + other["tables"],
        partitions=len(collection.partitions) + (other["partitions"] or 0),
        unmonitored_tables=other["tables"],
    )


# What this process holds of each server's poll memory (a worker child's, for its life).
MEMORIES = PollMemories()


_stage = threading.local()


def set_stage(doing: str) -> None:
    """Say what the poll in this thread is doing now, for a time limit's message."""
    _stage.doing = doing


def current_stage() -> str:
    """What the poll in this thread was doing ("connecting to HOST:PORT", ...)."""
    return getattr(_stage, "doing", "starting")


def poll_server(
    server: Server, poll_id: str | None = None, deadline: "PollDeadline | None" = None
) -> PollReport:
    """Poll one server now. Never raises for a server-side problem: the report and the
    server's status say what went wrong. `deadline`: when its sessions end (the worker's
    task gives its own, from the task's start); else the soft limit from now."""
    with cyclic_gc_paused():
        try:
            report = _poll(server, poll_id, deadline)
            if not report.ok:
                MEMORIES.save(server, None)  # a failed poll may have changed what it held
            return report
        except SoftTimeLimitExceeded:
            MEMORIES.save(server, None)
            raise  # the task records it, naming the limit
        except Exception as exc:  # a bug must not leave the last poll's status standing
            MEMORIES.save(server, None)
            message = failure_message(server, exc)
            # The metadata store down or locked: recording the failure in it would wait
            # for it again (SQLite's 20 s busy timeout a second time), to fail anyway.
            if not isinstance(exc, OperationalError):
                with suppress(DatabaseError):  # the store may have failed all the same
                    record_failure(server, message)
            return PollReport(server=server.name, ok=False, error=message)


def failure_message(server: Server, exc: Exception) -> str:
    """Why a poll failed unexpectedly: the metadata store down or locked (said as such,
    without a traceback), or a bug (logged with its traceback)."""
    if isinstance(exc, OperationalError):
        message = store_unavailable(exc)
        log.error("poll of %s failed: %s", server.name, message)
        return message
    log.exception("poll of %s failed unexpectedly", server.name)
    return one_line(f"poll failed: {type(exc).__name__}: {exc}")


class Attempt(NamedTuple):
    """An alert evaluation stage's outcome: what it returned, or why it failed."""

    returned: Any = None
    failure: str | None = None


def evaluate_alerts(evaluate, server: Server, *args) -> Attempt:
    """Run an alert evaluation stage in a savepoint of the poll's transaction. Should it
    fail (a bug), the poll keeps what it stored and the alerts are evaluated again by the
    next poll; the reason is logged and returned for the report."""
    try:
        with transaction.atomic():
            return Attempt(returned=evaluate(server, *args))
    except Exception as exc:
        log.exception("alert evaluation for %s failed", server.name)
        return Attempt(failure=one_line(f"alert evaluation failed: {type(exc).__name__}: {exc}"))


class Stored(NamedTuple):
    """What the stages after collecting did: the store's result, why the alert
    evaluation failed (None: it did not), and the collection stored (the one assembled
    again, where a speculation was refuted)."""

    result: StoreResult
    evaluation_failed: str | None
    collection: Collection


def _store_analyse_evaluate(
    server: Server,
    collection: Collection,
    poll_id: str,
    seconds: float,
    memory: PollMemory | None = None,
) -> Stored:
    """The stages after collecting, in one transaction. A retried task's poll was
    stored already (no snapshot): nothing to analyse or evaluate. What the store and the
    evaluation return for the next poll is kept in `memory` once committed (given none,
    in a memory of this call only).

    A collection assembled on a `Speculation` (the tablespace list still being read) is
    confirmed between the stages and before the commit: should the list have changed,
    the transaction rolls back, the memory of the server's figures is restored and
    `Refuted` raised (the caller stores the collection assembled again)."""
    failed = None
    speculation = collection.speculation
    confirm = speculation.confirm if speculation is not None else lambda wait=True: None
    memory = memory if memory is not None else PollMemory((server.host, server.port), None)
    # A collection resting on the speculation is undone should it be refuted.
    undo = UndoLog(speculation.confirm) if speculation is not None else None
    store = PollStore(
        server=server,
        collection=collection,
        poll_id=poll_id,
        seconds=seconds,
        remembered=memory.take_figures(),
        undo=undo,
    )
    try:
        with transaction.atomic():
            result = store.save()
            # What the stages return for the next poll is kept once it is the database's.
            transaction.on_commit(partial(setattr, memory, "figures", result.remembered))
            if result.snapshot is not None:
                confirm(wait=False)  # refuted already: no analysis to throw away
                judged = _store_statements(server, collection)
                changed = result.changed_tables
                analyse_server(
                    server,
                    result.snapshot,
                    None if changed is None else changed | judged,
                    result.stored_figures,
                )
                confirm(wait=False)
                evaluated, failed = evaluate_alerts(
                    evaluate_after_poll, server, result.snapshot, memory.evaluated_under
                )
                if failed is None:
                    version = evaluated.rules_version
                    transaction.on_commit(partial(setattr, memory, "evaluated_under", version))
            confirm()
    except Refuted:
        memory.figures = store.restore()
        raise
    except BaseException:
        memory.figures = store.untaken()
        raise
    return Stored(result, failed, collection)


def _store_statements(server: Server, collection: Collection) -> set[int]:
    """The statement digests read this poll, judged against the tables just stored
    (before the analysis, whose `pruning` finding reads them); returns the tables whose
    statements changed, due for analysis."""
    judged = set()
    if collection.statements is not None:
        judged = statements.store(server, collection.statements, collection.plans)
    if collection.statements_due:  # read or tried
        statements.record_read(server, collection.statements_watermark)
    return judged


def _store(
    server: Server, collection: Collection, poll_id: str, started: float, memory: PollMemory
) -> Stored:
    """`_store_analyse_evaluate`, once more on the collection assembled again with the
    tablespace list read should a speculation be refuted (the poll's sessions still
    open: definitions may have to be read)."""
    speculation = collection.speculation
    try:
        seconds = time.monotonic() - started
        return _store_analyse_evaluate(server, collection, poll_id, seconds, memory)
    except Refuted as refuted:
        log.debug("poll of %s stored again: %s", server.name, refuted)
        assert speculation is not None  # refuted: there was one
        collection = speculation.redo()
        seconds = time.monotonic() - started
        return _store_analyse_evaluate(server, collection, poll_id, seconds, memory)


# The poll's sessions end this long before its soft time limit, so that a server that
# never finishes answering (a greeting a byte every 3 s resets every socket timeout) fails
# the poll with the connection's own line naming the server, and that line is stored,
# before Celery's soft limit: it fires once, wherever the task is, and at 0.5 s it fired
# inside the failure's store transaction, which left a SQLite store locked (make test).
DEADLINE_MARGIN = 2.0


# Of a poll's time (to its deadline), the share definitions may take; the tables past it
# are read by the next polls, so a slow server's first poll still ends and stores.
DEFINITIONS_SHARE = 0.5


@dataclass(frozen=True)
class PollDeadline:
    """When a poll's sessions end, whatever the server does: its soft time limit
    (`scheduling.time_limits`), counted from the poll's start, for the worker's polls and
    `manage.py poll` alike (which no Celery limit bounds)."""

    at: float  # time.monotonic()
    limit: int  # the soft limit, seconds

    @classmethod
    def of(cls, server: Server, started: float, soft: int | None = None) -> "PollDeadline":
        """From `started` (time.monotonic()): the worker's task start, with the soft
        limit Celery runs it under; else the poll's own start and `time_limits`."""
        if soft is None:
            soft, _ = scheduling.time_limits(server.poll_interval)
        return cls(started + max(soft - DEADLINE_MARGIN, 1.0), soft)

    def session(self, target: Target):
        """`open_session` ended at this deadline, its failure naming the limit."""
        left = max(self.at - time.monotonic(), 0.001)
        return open_session(target, left, f"the poll's time limit of {self.limit} s")


def _poll(server: Server, poll_id: str | None, deadline: PollDeadline | None) -> PollReport:
    started = time.monotonic()
    deadline = deadline or PollDeadline.of(server, started)
    poll_id = poll_id or uuid.uuid4().hex
    try:
        set_stage("reading the previous poll")
        previous = previous_poll(server)
        set_stage("reading the shared poll memory")
        memory = MEMORIES.load(server, previous.poll_id)
        set_stage(f"connecting to {server.host}:{server.port}")
        target = target_for(server)
        with deadline.session(target) as session:
            set_stage("reading the statistics")
            request = CollectRequest(
                known=known_signatures(server),
                stats_since=previous.stats_since,
                hidden=frozenset(previous.hidden),
                memory=memory.sources,
                last_poll=previous.poll_id,
                open_beside=(
                    (lambda: deadline.session(target)) if settings.PARTDASH_SECOND_SESSION else None
                ),
                speculate=settings.PARTDASH_STORE_WHILE_READING,
                status_before=previous.status,
                statements_since=statements.since(server),
                statements_consumer_off=previous.digest_consumer_off,
                explain=server.explain_statements,
                definitions_until=started + (deadline.at - started) * DEFINITIONS_SHARE,
            )
            collection = collect(session, request, memory.take_kept())
            stored = None
            if collection.speculation is not None:  # stored while the session is open
                set_stage("storing and analysing the snapshot")
                stored = _store(server, collection, poll_id, started, memory)
    except (ConnectionFailure, SecretError) as failure:
        message = str(failure)
        log.warning("poll of %s failed: %s", server.name, message)
        record_failure(server, message)
        server.record_tls(
            getattr(failure, "tls_offered", None), getattr(failure, "tls_fingerprint", "")
        )
        return PollReport(server=server.name, ok=False, error=message)
    server.record_tls(session.tls_offered, session.tls_fingerprint)
    set_stage("storing and analysing the snapshot")
    if stored is None:
        seconds = time.monotonic() - started
        stored = _store_analyse_evaluate(server, collection, poll_id, seconds, memory)
    result, evaluation_failed = stored.result, stored.evaluation_failed
    if result.snapshot is not None:
        _record_success(server, collection, result.snapshot.taken_at)
        set_stage("sharing the poll memory")
        MEMORIES.save(
            server,
            StoredPoll(
                memory=memory,
                poll_id=poll_id,
                snapshot_id=result.snapshot.pk,
                partitions=result.partitions_seen,
                kept=stored.collection.reusable,
            ),
        )
    else:
        MEMORIES.save(server, None)
    report = PollReport(
        server=server.name,
        ok=True,
        partitions_seen=result.partitions_seen,
        changed=result.changed,
        stored=result.stored,
        definitions_read=len(collection.definitions),
        seconds=time.monotonic() - started,
        warnings=collection.lines + [cast(str, evaluation_failed)] * bool(evaluation_failed),
    )
    log.debug("%s", report.summary)
    return report
