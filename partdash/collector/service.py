"""One poll of one server, the conductor of its stages: collect
(`partdash.collector.collect`), store (`partdash.metrics.store`), analyse
(`partdash.metrics.analysis`) and evaluate the alerts (`partdash.alerts.service`), in
this order, then record the outcome on the server. Store, analyse and evaluate share
one transaction, so a poll is stored all or nothing.

The Celery task and `manage.py poll` both call `poll_server`, so a poll behaves the
same whichever way it was started.
"""

import gc
import logging
import threading
import time
import uuid
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, OperationalError, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from partdash.alerts import service as alerts
from partdash.alerts.service import evaluate_after_failure, evaluate_after_poll
from partdash.collector import pollmemory
from partdash.collector.catalogue import HIDDEN, Shortfall
from partdash.collector.collect import Collection, Refuted, collect, table_key
from partdash.collector.incremental import SourceMemory
from partdash.lib.commands import store_unavailable
from partdash.lib.secrets import SecretError
from partdash.metrics import store
from partdash.metrics.analysis import analyse_server
from partdash.metrics.models import PartitionedTable, ServerSnapshot, UnmonitoredTable
from partdash.metrics.store import PollStore, StoreResult, forget_figures
from partdash.servers.choices import ServerStatus
from partdash.servers.connection import ConnectionFailure, open_session, target_for
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
    status: dict | None = None  # the server status it read (see `collector.ddl`)


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
    return PreviousPoll(watermark if covered else None, hidden, poll_id, status)


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


@contextmanager
def cyclic_gc_paused():
    """A poll builds about ten objects per partition and frees them all at its end. The
    cyclic collector would rescan that growing heap many times meanwhile (a fifth of a
    64,000-partition poll, measured); reference counting frees them anyway, and any
    cycles wait for the collector to resume."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# What this process remembers of each server's wide sources between polls (see
# `partdash.collector.incremental`), by server and address.
_SOURCE_MEMORY: dict[tuple[int, str, int], SourceMemory] = {}


def source_memory(server: Server) -> SourceMemory | None:
    if not settings.PARTDASH_INCREMENTAL_READS:
        return None
    key = (server.pk, server.host, server.port)
    if key not in _SOURCE_MEMORY:  # what was remembered at the server's old address goes
        _forget_sources(server.pk)
        _SOURCE_MEMORY[key] = SourceMemory()
    return _SOURCE_MEMORY[key]


def _forget_sources(server_pk: int) -> None:
    for key in [k for k in _SOURCE_MEMORY if k[0] == server_pk]:
        del _SOURCE_MEMORY[key]


# The servers this process remembers, least recently polled first, with their partition
# counts: what `bound_memory` holds to PARTDASH_REMEMBERED_PARTITIONS.
_REMEMBERED_SIZES: dict[int, int] = {}


def bound_memory(server_pk: int, partitions: int) -> list[int]:
    """Record that this process now remembers `partitions` of the server, then forget
    the least recently polled other servers while the total is over
    PARTDASH_REMEMBERED_PARTITIONS (a worker child polling many large servers would
    otherwise keep them all: about 140 MB per 64,000 partitions, traced). A forgotten server's
    next poll here reads every row once, as on a child that never polled it. Returns the
    servers forgotten."""
    _REMEMBERED_SIZES.pop(server_pk, None)
    _REMEMBERED_SIZES[server_pk] = partitions
    limit, forgotten = settings.PARTDASH_REMEMBERED_PARTITIONS, []
    while sum(_REMEMBERED_SIZES.values()) > limit and len(_REMEMBERED_SIZES) > 1:
        oldest = next(iter(_REMEMBERED_SIZES))
        del _REMEMBERED_SIZES[oldest]
        forget(oldest)
        forgotten.append(oldest)
    return forgotten


def forget(server_pk: int) -> None:
    """Drop what this process remembers of a server (its wide sources, its figures)."""
    _forget_sources(server_pk)
    forget_figures(server_pk)
    pollmemory.unheld(server_pk)


# The positions of the datetimes among a remembered partition's figures (after its id).
_FIGURE_TIMES = (1 + store.STORED.index("stats_updated_at"), 1 + store.STORED.index("changed_at"))


def restore_memory(server: Server, last_poll: str | None) -> bool:
    """Make this process remember what the server's last stored poll left, read from the
    shared poll memory (`pollmemory`) when this process did not store that poll itself.
    Returns whether it was read."""
    if last_poll is None or not settings.PARTDASH_SHARE_POLL_MEMORY:
        return False
    memory = source_memory(server)
    if memory is None or memory.basis == last_poll:
        return False  # off, or this process polled the server last: it holds the memory
    shared = pollmemory.load(server.pk, last_poll, (server.host, server.port), _FIGURE_TIMES)
    if shared is None:
        return False
    _forget_sources(server.pk)  # (a read beside still under way keeps the old object)
    memory = _SOURCE_MEMORY[(server.pk, server.host, server.port)] = SourceMemory()
    memory.sources, memory.basis = shared.sources, last_poll
    memory.started, memory.tablestats = shared.started, shared.tablestats
    memory.counted_at, memory.beside_failed_at = shared.counted_at, shared.beside_failed_at
    figures = shared.figures
    if figures is not None and shared.snapshot_id is not None:
        stored = store.StoredFigures(figures.figures, figures.specs, {})
        store._REMEMBERED[server.pk] = store._Remembered(shared.snapshot_id, stored, figures.moving)
    else:
        forget_figures(server.pk)
    if shared.evaluated_under is not None:
        alerts._EVALUATED_UNDER[server.pk] = shared.evaluated_under
    return True


def share_memory(server: Server, poll_id: str, result: StoreResult):
    """Write what this stored poll leaves for the next, for any process to continue."""
    memory = source_memory(server)
    if memory is None or not settings.PARTDASH_SHARE_POLL_MEMORY:
        return None
    remembered = store._REMEMBERED.get(server.pk)
    figures = None
    if remembered is not None and remembered.snapshot_id == result.snapshot.pk:
        stored = remembered.stored
        figures = pollmemory.Figures(stored.figures, stored.specs, remembered.moving)
    shared = pollmemory.Memory(
        poll_id=poll_id,
        snapshot_id=result.snapshot.pk,
        address=(server.host, server.port),
        sources=memory.sources,
        started=memory.started,
        counted_at=memory.counted_at,
        beside_failed_at=memory.beside_failed_at,
        tablestats=memory.tablestats,
        figures=figures,
        evaluated_under=alerts._EVALUATED_UNDER.get(server.pk),
    )
    return pollmemory.save(server.pk, shared, result.changed > 0, _FIGURE_TIMES)


_stage = threading.local()


def set_stage(doing: str) -> None:
    """Say what the poll in this thread is doing now, for a time limit's message."""
    _stage.doing = doing


def current_stage() -> str:
    """What the poll in this thread was doing ("connecting to HOST:PORT", ...)."""
    return getattr(_stage, "doing", "starting")


def poll_server(server: Server, poll_id: str | None = None) -> PollReport:
    """Poll one server now. Never raises for a server-side problem: the report and the
    server's status say what went wrong."""
    with cyclic_gc_paused():
        try:
            report = _poll(server, poll_id)
            if not report.ok:
                pollmemory.unheld(server.pk)  # a failed poll may have changed what it held
            return report
        except SoftTimeLimitExceeded:
            pollmemory.unheld(server.pk)
            raise  # the task records it, naming the limit
        except Exception as exc:  # a bug must not leave the last poll's status standing
            pollmemory.unheld(server.pk)
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


def evaluate_alerts(evaluate, server: Server, *args) -> str | None:
    """Run an alert evaluation stage in a savepoint of the poll's transaction. Should it
    fail (a bug), the poll keeps what it stored and the alerts are evaluated again by the
    next poll; the reason is logged and returned for the report."""
    try:
        with transaction.atomic():
            evaluate(server, *args)
    except Exception as exc:
        log.exception("alert evaluation for %s failed", server.name)
        return one_line(f"alert evaluation failed: {type(exc).__name__}: {exc}")
    return None


def _store_analyse_evaluate(
    server: Server, collection: Collection, poll_id: str, seconds: float
) -> tuple[StoreResult, str | None]:
    """The stages after collecting, in one transaction. A retried task's poll was
    stored already (no snapshot): nothing to analyse or evaluate. Returns the store's
    result and why the alert evaluation failed, if it did.

    A collection assembled on a `Speculation` (the tablespace list still being read) is
    confirmed between the stages and before the commit: should the list have changed,
    the transaction rolls back, the store's memory of the server is restored and
    `Refuted` raised (the caller stores the collection assembled again)."""
    failed = None
    speculation = collection.speculation
    confirm = speculation.confirm if speculation is not None else lambda wait=True: None
    store = PollStore(server, collection, poll_id, seconds)
    try:
        with transaction.atomic():
            result = store.save()
            if result.snapshot is not None:
                confirm(wait=False)  # refuted already: no analysis to throw away
                analyse_server(
                    server, result.snapshot, result.changed_tables, result.stored_figures
                )
                confirm(wait=False)
                failed = evaluate_alerts(evaluate_after_poll, server, result.snapshot)
            confirm()
    except Refuted:
        store.restore()
        raise
    return result, failed


def _store(
    server: Server, collection: Collection, poll_id: str, started: float
) -> tuple[StoreResult, str | None]:
    """`_store_analyse_evaluate`, once more on the collection assembled again with the
    tablespace list read should a speculation be refuted (the poll's sessions still
    open: definitions may have to be read)."""
    speculation = collection.speculation
    try:
        return _store_analyse_evaluate(server, collection, poll_id, time.monotonic() - started)
    except Refuted as refuted:
        log.debug("poll of %s stored again: %s", server.name, refuted)
        collection = speculation.redo()
        return _store_analyse_evaluate(server, collection, poll_id, time.monotonic() - started)


def _poll(server: Server, poll_id: str | None) -> PollReport:
    started = time.monotonic()
    poll_id = poll_id or uuid.uuid4().hex
    try:
        set_stage("reading the previous poll")
        previous = previous_poll(server)
        set_stage("reading the shared poll memory")
        restore_memory(server, previous.poll_id)
        set_stage(f"connecting to {server.host}:{server.port}")
        target = target_for(server)
        with open_session(target) as session:
            set_stage("reading the statistics")
            collection = collect(
                session,
                known_signatures(server),
                previous.stats_since,
                previous.hidden,
                source_memory(server),
                previous.poll_id,
                (lambda: open_session(target)) if settings.PARTDASH_SECOND_SESSION else None,
                speculate=settings.PARTDASH_STORE_WHILE_READING,
                status_before=previous.status,
            )
            stored = None
            if collection.speculation is not None:  # stored while the session is open
                set_stage("storing and analysing the snapshot")
                stored = _store(server, collection, poll_id, started)
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
        stored = _store_analyse_evaluate(server, collection, poll_id, time.monotonic() - started)
    result, evaluation_failed = stored
    if result.snapshot is not None:
        _record_success(server, collection, result.snapshot.taken_at)
        if (memory := source_memory(server)) is not None:
            memory.stored(poll_id)  # the next poll continues this one
        bound_memory(server.pk, result.partitions_seen)
        set_stage("sharing the poll memory")
        share_memory(server, poll_id, result)
    else:
        pollmemory.unheld(server.pk)
    report = PollReport(
        server=server.name,
        ok=True,
        partitions_seen=result.partitions_seen,
        changed=result.changed,
        stored=result.stored,
        definitions_read=len(collection.definitions),
        seconds=time.monotonic() - started,
        warnings=collection.lines + [evaluation_failed] * bool(evaluation_failed),
    )
    log.debug("%s", report.summary)
    return report
