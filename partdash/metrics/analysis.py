"""The health of a server's tables, computed after each poll with `partdash.health` and
stored on each table (and the server's snapshot), so the API, the pages and the alerts
read one row per table instead of recomputing over every partition.

Hotspots and compression failure rates use the activity inside a window (default the
last hour, `PARTDASH_HOTSPOT_WINDOW_SECONDS`), which the store keeps on each partition
as per-slot deltas (`partdash.health.recent`). A table is analysed again only when its
figures changed this poll, when a slot of its activity leaves the window, or when it
was last analysed on an earlier (UTC) day, since runway and ages count down with the
calendar, or when a retention policy naming it changed (`partdash.metrics.policies`); a
quiet server's poll analyses nothing. What the API and the pages derive from
the stored results on each request is in `partdash.metrics.readings`.
"""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import date, datetime, timedelta
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from django.conf import settings
from django.db import connection
from django.db.models import Sum
from django.db.models.fields.json import KeyTransform

from partdash.health import coverage, recent
from partdash.health import findings as rules
from partdash.health.compression import api_fields, table_compression
from partdash.health.estimates import statistics_age_of
from partdash.health.fixes import TableFacts
from partdash.health.forecast import forecast
from partdash.health.hotspots import (
    SIGNAL_LAG,
    UNKNOWN_SIGNALS,
    Hold,
    PartitionActivity,
    Signals,
    Source,
    choose_source,
    find_hotspots,
    hold_for,
    written_partitions,
)
from partdash.health.kinds import Observed, registered
from partdash.health.partitions import PartitionState
from partdash.health.pressure import (
    WORKING_SET_RATIO,
    as_number,
    fragmentation,
    level_of,
    may_be_fragmented,
    recalculates_statistics,
    server_limits,
    stale_partitions,
    with_file_rows,
    working_set,
    written_against_pool,
)
from partdash.health.pruning import StatementVerdict
from partdash.health.retention import (
    Policy,
    Retention,
    matching_policy,
    names_case_sensitive,
    table_retention,
)
from partdash.health.runway import table_runway
from partdash.health.shapes import (
    ActivitySignal,
    RetentionShape,
    ServerPressure,
    SkewShape,
    TableHealth,
    stored_health,
)
from partdash.health.skew import SkewFinding, judge_skew
from partdash.lib.bulk import update_each
from partdash.metrics import drift
from partdash.metrics.drift import keep_drift
from partdash.metrics.models import (
    Partition,
    PartitionedTable,
    ServerSnapshot,
    UnmonitoredTable,
    aware,
)
from partdash.metrics.policies import server_policies
from partdash.metrics.statements import stored_verdicts
from partdash.mysql.catalogue import CMP_PER_INDEX, INNODB_CMP, TABLESPACES, Shortfall

if TYPE_CHECKING:
    from partdash.metrics.store import StoredFigures

log = logging.getLogger(__name__)

STATE_FIELDS = tuple(f.name for f in fields(PartitionState))  # its constructor's order
_STATS_UPDATED = STATE_FIELDS.index("stats_updated_at")
# What an analysis writes on each table, in this order: `health` a `TableHealth`,
# `activity` an `ActivitySignal`.
RESULT_FIELDS = (
    "health",
    "activity",
    "score",
    "total_rows",
    "total_data_bytes",
    "total_index_bytes",
    "total_file_bytes",
    "analysed_at",
)
TABLES_PER_BATCH = 100  # tables analysed (and their partitions held) at a time


def window() -> timedelta:
    return timedelta(seconds=settings.PARTDASH_HOTSPOT_WINDOW_SECONDS)


def hold_seconds() -> int:
    """`PARTDASH_HOTSPOT_HOLD_SECONDS`, by default one slot of the window (a twelfth of
    it), so it scales with the window. settings.py refuses a hold longer than the window
    at start-up; one set later (a test's override) is clamped to it, and said once."""
    seconds = window().total_seconds()
    hold = settings.PARTDASH_HOTSPOT_HOLD_SECONDS
    if hold is None:
        return recent.slot_seconds(seconds)
    if hold > seconds:
        _say_clamped(hold, int(seconds))
        return int(seconds)
    return hold


@cache
def _say_clamped(hold: int, seconds: int) -> None:
    log.warning(
        "PARTDASH_HOTSPOT_HOLD_SECONDS (%s) is longer than PARTDASH_HOTSPOT_WINDOW_SECONDS "
        "(%s): hotspots are held for the window instead",
        hold,
        seconds,
    )


def hotspot_hold(poll_seconds: float | None = None) -> Hold:
    """The hold, in slots of the window, for a server polled every `poll_seconds`
    (`health.hotspots.hold_for`)."""
    return hold_for(window().total_seconds(), hold_seconds(), poll_seconds)


def signals_of(snapshot: ServerSnapshot) -> tuple[Signals, str | None]:
    """The activity signals a poll gave (`ServerSnapshot.sources`), and why rows changed
    were not among them (None where they were, or it is not known). Rows changed are
    read, kept (no row written since they were read), not read because the read would
    load tables into InnoDB's dictionary cache, or switched off (`tablestats.plan`).
    A poll that does not say (stored before) is judged on what its figures hold."""
    sources = snapshot.sources or {}
    plan, disk = sources.get("tablestats_plan"), sources.get("file_io")
    blind = rows_changed_blind(snapshot)
    if plan not in ("read", "kept", "off", "uncached"):
        return Signals(disk=disk), None
    if blind is None:
        return Signals(rows_changed=True, disk=disk), None
    return Signals(rows_changed=False, disk=disk), blind.why


def _shortfall_of(snapshot: ServerSnapshot, source: str) -> Shortfall | None:
    """The poll's warning about `source` (its message and fix), if any."""
    for stored in snapshot.warnings or []:
        shortfall = Shortfall.from_dict(stored)
        if source in shortfall.sources:
            return shortfall
    return None


def _from_shortfall(shortfall: Shortfall | None, fallback: str) -> coverage.Blind:
    if shortfall is None:
        return coverage.Blind(fallback)
    return coverage.Blind(shortfall.message, shortfall.fixes[0] if shortfall.fixes else None)


def rows_changed_blind(snapshot: ServerSnapshot) -> coverage.Blind | None:
    """Why the latest poll did not read rows changed and what would have it read them;
    None where it did (or a poll stored before did not say)."""
    sources = snapshot.sources or {}
    plan = sources.get("tablestats_plan")
    if plan in ("read", "kept"):
        if sources.get("tablestats", True):
            return None
        return _from_shortfall(
            _shortfall_of(snapshot, "tablestats"),
            "INNODB_SYS_TABLESTATS could not be read (see the server page)",
        )
    if plan == "off":
        return coverage.TABLESTATS_OFF
    if plan == "uncached":
        cache = as_number((snapshot.variables or {}).get("table_definition_cache"))
        partitions = snapshot.partitions or 0
        tables = sources.get("dictionary_tables") or partitions
        return coverage.uncached(cache, tables, partitions)
    return None


def disk_blind(snapshot: ServerSnapshot) -> coverage.Blind | None:
    """Why the latest poll did not read disk I/O (performance_schema OFF, or not
    readable by the account) and its fix; None where it did or it is not known."""
    if (snapshot.sources or {}).get("file_io", True):
        return None
    return _from_shortfall(
        _shortfall_of(snapshot, "file_io"), "performance_schema could not be read"
    )


def coverage_of(snapshot: ServerSnapshot | None) -> list[coverage.CoverageShape]:
    """What the server's latest poll measured and what not, why, and what enables it
    (`health.coverage`); other sources it could not read follow, with their fix. Empty
    before a poll."""
    if snapshot is None:
        return []
    others = []
    for source in (TABLESPACES, INNODB_CMP, CMP_PER_INDEX):
        shortfall = _shortfall_of(snapshot, source.key)
        if shortfall is not None and (snapshot.sources or {}).get(source.key) is False:
            others.append((source.key, source.loses, _from_shortfall(shortfall, "")))
    return coverage.coverage(rows_changed_blind(snapshot), disk_blind(snapshot), tuple(others))


# Why a write signal stands in for rows changed, and how late it is, for the pages.
_STANDS_IN = {
    "disk": "disk writes stand in: page flushes, minutes after the application's writes, "
    "and flushes of pages dirtied long ago",
    "growth": "row growth stands in: it moves only when InnoDB recalculates a partition's "
    "statistics (after about 10% of its rows changed)",
}


def activity_signal(
    source: Source | None, signals: Signals, seconds: float, why: str | None = None
) -> ActivitySignal | None:
    """What a table's write hotspots were judged on, for the API and the pages: the
    signal, its typical lag, and where rows changed were not, why (`why`, from
    `signals_of`) and which signal stands in."""
    if source is None:
        return None
    note = None
    if source != "rows_changed":
        missing = f"rows changed are not read ({why})" if why else "no rows changed are known yet"
        note = f"{missing}; {_STANDS_IN[source]}."
    return {
        "source": source,
        "window_seconds": seconds,
        "estimated": source == "growth",
        "lag_seconds": SIGNAL_LAG[source],
        "stands_in": note,
        "reads": "disk" if signals.disk is not False else None,
    }


def plain(value: Any) -> Any:
    """Dataclasses, dates and tuples as JSON-ready values. (Not through `asdict`, which
    deep-copies every value on the way: a tenth of the analysis after writes, profiled.)"""
    if is_dataclass(value) and not isinstance(value, type):
        return {name: plain(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 6)
    return value


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


# -- window activity -------------------------------------------------------------------


def window_sums(text: str | None, now: datetime) -> dict[str, int | None]:
    """A partition's activity summed over the window ending at `now`."""
    return recent.window_sums(recent.loads(text), now.timestamp(), window().total_seconds())


def activity_of(label: str, sums: Mapping[str, int | None]) -> PartitionActivity:
    return PartitionActivity(
        name=label,
        write_bytes=sums["write_bytes"],
        read_bytes=sums["read_bytes"],
        modified=sums["modified"],
        rows_added=sums["rows_added"],
        bytes_added=sums["bytes_added"],
    )


def slot_activity(
    labels: list[str], entries: list[list[recent.Entry]], now: datetime
) -> list[list[PartitionActivity]]:
    """What the partitions did in each slot of the window ending at `now`, oldest slot
    first, each slot listing only the partitions that did something in it: what the
    hotspot rules judge persistence on."""
    seconds = window().total_seconds()
    by_start: dict[int, list[PartitionActivity]] = {}
    for label, partition_entries in zip(labels, entries, strict=True):
        for start, figures in recent.window_slots(partition_entries, now.timestamp(), seconds):
            by_start.setdefault(start, []).append(activity_of(label, figures))
    return [by_start[start] for start in sorted(by_start)]


def with_window_compression(state: PartitionState, sums: dict) -> PartitionState:
    """Compression counters as deltas over the window where there were any, else the
    totals (a table nobody wrote lately is judged on its lifetime)."""
    if not sums["compress_ops"]:
        return state
    return replace(
        state, compress_ops=sums["compress_ops"], compress_ops_ok=sums["compress_ops_ok"] or 0
    )


# -- one table -------------------------------------------------------------------------


def _skew(finding: SkewFinding) -> SkewShape | None:
    if finding.skew is None:
        return None
    figure = finding.skew  # field by field
    return {
        "max_mean_ratio": plain(figure.max_mean_ratio),
        "cv": plain(figure.cv),
        "gini": plain(figure.gini),
        "is_finding": finding.is_finding,
        "judged": finding.judged,
        "reason": finding.reason,
        "threshold": finding.threshold,
        "largest": finding.largest,
        "judged_on": len(finding.judged_on),
        "measure": finding.measure,
        "estimated": finding.estimated,
        "as_of": plain(finding.as_of),
    }


RETENTION_NAMES = 20  # partitions past a retention policy named in the stored health


def _overdue_seen_at(table: PartitionedTable, policy: Policy | None) -> datetime | None:
    """When the table's previous analysis saw partitions past this (keep_partitions)
    policy, still in force: how long they have been overdue is not in an id's bounds."""
    before = stored_health(table.health).get("retention")
    if policy is None or not before or before.get("policy_id") != policy.id:
        return None
    since = before.get("overdue_since")
    if before.get("keep_partitions") != policy.keep_partitions or not since:
        return None
    return datetime.fromisoformat(since)


def _retention_shape(retention: Retention) -> RetentionShape:
    policy, overdue = retention.policy, retention.overdue
    return {
        "policy_id": policy.id,
        "pattern": policy.pattern,
        "keep_days": policy.keep_days,
        "keep_partitions": policy.keep_partitions,
        "overdue_partitions": len(overdue),
        "partitions": [p.name for p in overdue[:RETENTION_NAMES]],
        "rows": retention.rows,
        "bytes": retention.bytes,
        "oldest_partition": overdue[0].name if overdue else None,
        "oldest_age_days": retention.oldest_age_days,
        "overdue_days": retention.overdue_days,
        "overdue_since": plain(retention.overdue_since),
        "reason": retention.reason,
    }


# The window sums a `PartitionActivity` is made of (what `find_hotspots` reads).
_ACTIVITY_FIGURES = ("write_bytes", "read_bytes", "modified", "rows_added", "bytes_added")


def _partition_names(states: list[PartitionState], labels: set[str]) -> list[str]:
    """The partitions (a subpartition's parent) of the given labels, in order."""
    if not labels:  # the usual case: no walk over every partition
        return []
    return list(dict.fromkeys(s.name for s in states if s.label in labels))


class Window(NamedTuple):
    """A partition's window as last summed. A tuple (NamedTuple adds no per-instance
    storage), not the sums' dict: on 64,000 partitions with activity, the memo costs
    about 19 MB rather than 30 (traced)."""

    sums: tuple  # in `recent.FIGURES` order
    ends: int | None  # when they change with nothing written (`recent.window_ends`)
    summed_at: float
    seconds: float  # the window's length


def _windows(
    recents: list[str | None], at: float, seconds: float, memo: dict[str, Window] | None
) -> tuple[dict[int, dict], list, dict[str, Window]]:
    """The window sums (by partition index) and ends of the partitions with stored
    activity. A partition whose activity (its text) is as when last summed keeps those
    sums until its oldest slot leaves the window: slots only leave as time passes, and
    a partition written since has new text. After writes that touch most of a server's
    tables, most of their partitions are such (summing them all again was most of the
    analysis, measured on 64,000 partitions). Returns the sums, the ends, and the memo
    of the texts seen here."""
    sums, ends, seen = {}, [], {}
    for i, text in enumerate(recents):
        if not text:
            continue
        known = memo.get(text) if memo else None
        if known is None or not (
            known.seconds == seconds
            and known.summed_at <= at
            and (known.ends is None or at < known.ends)
        ):
            entries = recent.loads(text)
            summed = tuple(recent.window_sums(entries, at, seconds).values())
            known = Window(summed, recent.window_ends(entries, at, seconds), at, seconds)
        seen[text] = known
        sums[i] = dict(zip(recent.FIGURES, known.sums, strict=True))
        ends.append(known.ends)
    return sums, ends, seen


# What judging skew reads of each partition (`health.skew.judge_skew`): verdicts kept
# between polls (`_skews`) are judged again when one of these changed.
_SKEW_INPUTS = attrgetter(
    "name",
    "subpartition",
    "ordinal",
    "description",
    "rows",
    "data_bytes",
    "index_bytes",
    "stats_updated_at",
)


def _skews(
    method: str, states: list[PartitionState], memo: dict | None
) -> tuple[SkewFinding, SkewFinding]:
    """The skew of rows and of bytes. Kept in `memo` with what they were judged on, and
    judged again only when that changed: writes move most partitions' I/O counters and
    activity, their statistics seldom (InnoDB recalculates them after 10% of a partition
    changed), and judging each written table's skew again was a third of its analysis
    (measured on 64,000 partitions after 1% written). What they were judged on is kept
    as its hash (keeping it whole cost the polling process 10 MB on 64,000 partitions):
    a change that leaves the hash equal goes unseen with a chance of about 2^-64, and
    the hash of the names is keyed per process, which a server cannot aim at."""
    on = (method, len(states), hash(tuple(map(_SKEW_INPUTS, states))))
    if memo is not None and memo.get("on") == on:
        return memo["skews"]
    skews = judge_skew(method, states, "rows"), judge_skew(method, states, "bytes")
    if memo is not None:
        memo["on"], memo["skews"] = on, skews
    return skews


@dataclass(frozen=True)
class PollConditions:
    """What every table of a server is analysed under at one poll: when (`now`), its
    InnoDB page size, buffer pool and innodb_stats_auto_recalc, the activity signals its
    poll read and why rows changed were not among them (`signals_of`), and the hotspot
    hold for its poll interval (`hotspot_hold`; None: the default interval's)."""

    now: datetime
    page_size: int = 16384
    buffer_pool: int | str | None = None
    signals: Signals = UNKNOWN_SIGNALS
    why: str | None = None
    hold: Hold | None = None
    auto_recalc: str | None = None


def table_health(
    table: PartitionedTable,
    conditions: PollConditions,
    *,
    states: list[PartitionState],
    recents: list[str | None],
    windows: dict[str, Window] | None = None,
    skews: dict | None = None,
    policy: Policy | None = None,
    statements: list[StatementVerdict] | None = None,
) -> TableHealth:
    """Every health figure of one table, as stored in `PartitionedTable.health`.
    `states` in definition order, `recents` their stored recent activity; `windows`: a
    memo of their window sums (see `_windows`), updated in place when given; `skews`: a
    memo of its skew verdicts (see `_skews`), likewise; `policy`:
    the retention policy matching the table (`health.retention.matching_policy`);
    `statements`: its statement digests with their verdicts (None: never read)."""
    if len(recents) != len(states):
        raise ValueError(f"{len(states)} partitions but {len(recents)} recent activities")
    now, page_size = conditions.now, conditions.page_size
    seconds, at = window().total_seconds(), now.timestamp()
    # Only partitions with stored activity (a few per table) have window sums and ends;
    # the rest sum to None throughout, as `recent.window_sums([])` would say.
    sums, ends, seen = _windows(recents, at, seconds, windows)
    if windows is not None:
        windows.clear()
        windows.update(seen)
    entries = {i: recents[i] for i in sums}  # parsed only if the hotspot rules need slots
    hotspots, written_labels = None, set()
    # Rows changed where the server gives them, even with none in the window.
    source = choose_source([], conditions.signals)
    if any(w[f] is not None for w in sums.values() for f in _ACTIVITY_FIGURES):
        # Without any, `find_hotspots` has no source (None) and nothing was written.
        labels = [s.label for s in states]
        activity = [
            activity_of(label, sums[i]) if i in sums else PartitionActivity.quiet(label)
            for i, label in enumerate(labels)
        ]
        hotspots = find_hotspots(
            activity,  # slots: the partitions without entries have none to add
            lambda: slot_activity(
                [labels[i] for i in entries], [recent.loads(t) for t in entries.values()], now
            ),
            conditions.signals,
            conditions.hold or hotspot_hold(),
        )
        source = hotspots.source if hotspots else None
        written_labels = set(written_partitions(activity, source))
    rows_added = sum(w["rows_added"] or 0 for w in sums.values())
    fill_rate = rows_added * 86400 / seconds if rows_added > 0 else None
    runway = table_runway(table.method, table.expression, states, now, fill_rate_per_day=fill_rate)
    windowed = list(states)
    for i, w in sums.items():
        windowed[i] = with_window_compression(states[i], w)
    compression = table_compression(windowed, table.create_options, page_size)
    skew_rows, skew_bytes = _skews(table.method, states, skews)
    written = working_set(states, written_labels, conditions.buffer_pool)
    stale = stale_partitions(
        states, now, recalculates_statistics(conditions.auto_recalc, table.create_options)
    )
    # A rewritten partition's statistics say it is empty, its file full: not free space.
    rewritten = {s.name for s in stale if s.file_rows}
    fragments = [
        f
        for f in map(fragmentation, may_be_fragmented(states))
        if f.is_finding and f.name not in rewritten
    ]
    retention = table_retention(
        policy,
        table.method,
        table.expression,
        states,
        now,
        overdue_seen_at=_overdue_seen_at(table, policy),
    )
    facts = TableFacts(
        schema=table.schema,
        name=table.name,
        method=table.method,
        expression=table.expression,
        partitions=with_file_rows(states, stale),
        now=now,
        create_options=table.create_options,
        runway=runway,
        compression=compression,
        page_size=page_size,
        fragmented=_partition_names(states, {f.name for f in fragments}),
        fragmented_bytes=sum(f.data_free or 0 for f in fragments),
        stale=_partition_names(states, {s.name for s in stale}),
        retention=retention,
    )
    observed = Observed(
        facts,
        states,
        skew=skew_rows,
        hotspots=hotspots,
        compression=compression,
        runway=runway,
        fragments=fragments,
        stale=stale,
        retention=retention,
        now=now,
        statements=statements,
    )
    found = sorted(
        (rules.with_fix(f, facts) for f in _candidates(observed) if f), key=lambda f: -f.score
    )
    health: TableHealth = {
        "skew": _skew(skew_rows),
        "skew_bytes": _skew(skew_bytes),
        "hotspots": hotspots.hot if hotspots else [],
        # Why each is hot: kind (write or read), window share, slots hot of active ones.
        "hotspot_detail": [plain(d) for d in hotspots.detail] if hotspots else [],
        "active": hotspots is not None,
        # What the activity came from (its detail is `activity_signal`'s, stored apart).
        "activity_source": source,
        "compression": None if compression is None else plain(api_fields(compression)),
        # How old the totals' statistics are, and whose: the oldest partition's.
        "statistics": plain(
            statistics_age_of(lambda at: states[at].label, [s.stats_updated_at for s in states])
        ),
        "runway": plain(runway),
        "findings": [plain(f) for f in found],
        "score": rules.table_score(found),
        "written": {"partitions": len(written.partitions), "bytes": written.bytes},
        "fragmented": len(fragments),
        "stale": len(stale),
        # When the window's sums change with nothing written: the next analysis is due.
        "window_ends": min((e for e in ends if e is not None), default=None),
    }
    for kind in registered():
        if kind.stores is not None:
            cast(dict, health)[kind.name] = plain(kind.stores(observed))
    if retention is not None:
        health["retention"] = _retention_shape(retention)
        # Due again when the overdue partitions pass the grace: the `retention` alert
        # then pages within a poll, not at the next day's analysis.
        stalls_at = _stalls_at(retention)
        if stalls_at is not None and stalls_at > now.timestamp():
            ends = [e for e in (health["window_ends"], stalls_at) if e is not None]
            health["window_ends"] = min(ends)
    return health


def _candidates(seen: Observed) -> list[rules.Finding | None]:
    """Each registered kind's finding of the table (`health.kinds`), None where it has
    none; kinds found elsewhere (a server's pressure, a group's drift) are skipped."""
    return [kind.analyse(seen) for kind in registered() if kind.analyse is not None]


def _stalls_at(retention: Retention) -> int | None:
    """When partitions past the policy have been so for the grace (epoch seconds)."""
    if not retention.overdue or retention.overdue_since is None:
        return None
    grace = timedelta(days=settings.PARTDASH_RETENTION_GRACE_DAYS)
    return int((retention.overdue_since + grace).timestamp()) + 1


# -- a server --------------------------------------------------------------------------


def _is_due(
    pk: int, analysed_at: datetime | None, window_ends, changed_tables: set[int] | None, now
) -> bool:
    """Changed this poll, never analysed, analysed on an earlier day (runway and ages
    count down with the calendar), or a slot of its activity left the window."""
    if changed_tables is None or pk in changed_tables or analysed_at is None:
        return True
    if analysed_at.date() != now.date():
        return True
    return window_ends is not None and window_ends <= now.timestamp()


_ANALYSED_FIELDS = (
    "id",
    "schema",
    "name",
    "method",
    "expression",
    "create_options",
    "analysed_at",
    "health",
)
_IN_LIST = 900  # ids in one `IN (...)`; more due tables are picked out here instead


def health_key(*keys: str) -> KeyTransform:
    """`health__<keys>` as an expression. Named as a lookup ("health__stale"), Django
    resolves it by first failing to join on `health`, and the FieldError it keeps holds
    every frame above it, the poll's own among them: all the poll built (a first poll of
    64,000 partitions: 230,000 objects) then waits for the cyclic collector, paused
    during polls, instead of being freed on return."""
    expression: Any = "health"
    for key in keys:
        expression = KeyTransform(key, expression)
    return expression


def _tables_to_analyse(
    server, changed_tables: set[int] | None, now: datetime
) -> list[PartitionedTable]:
    """The tables due (see `_is_due`), told apart without decoding every table's health."""
    tables = PartitionedTable.objects.live().filter(server=server)
    if changed_tables is None:
        return list(tables.only(*_ANALYSED_FIELDS))
    ends = tables.values_list("id", "analysed_at", health_key("window_ends"))
    due = {pk for pk, at, end in ends if _is_due(pk, at, end, changed_tables, now)}
    if not due:
        return []
    if len(due) <= _IN_LIST:
        tables = tables.filter(pk__in=due)
    return [t for t in tables.only(*_ANALYSED_FIELDS) if t.pk in due]


def _partitions_of(table_ids: list[int]) -> dict[int, list[tuple[PartitionState, str | None]]]:
    """Each table's live partitions in definition order, with their recent activity (one
    plain query: the ORM's per-row conversions cost more than the analysis itself)."""
    by_table: dict[int, list] = {table_id: [] for table_id in table_ids}
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in ("table_id", "recent", *STATE_FIELDS))
    sql = (
        f"SELECT {columns} FROM {quote(Partition._meta.db_table)} "
        f"WHERE dropped_at IS NULL AND table_id IN ({', '.join(['%s'] * len(table_ids))}) "
        "ORDER BY table_id, ordinal, subpartition_ordinal, subpartition"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, table_ids)
        rows = cursor.fetchall()
    for table_id, text, *values in rows:
        values[_STATS_UPDATED] = aware(values[_STATS_UPDATED])
        by_table[table_id].append((PartitionState(*values), text))
    return by_table


def _total(states: list[PartitionState], field: str) -> int | None:
    values = [v for v in map(attrgetter(field), states) if v is not None]
    return sum(values) if values else None


def _write_results(tables: list[PartitionedTable]) -> None:
    update_each(PartitionedTable, tables, RESULT_FIELDS)


def _analyse(
    tables: list[PartitionedTable],
    conditions: PollConditions,
    stored: "StoredFigures | None",
    *,
    policies: Sequence[Policy],
    case_sensitive: bool,
) -> None:
    """Analyse `tables` of one server and write their results; `policies` the server's
    retention policies, matched case-sensitively as `lower_case_table_names` says."""
    seconds = window().total_seconds()
    table_ids = [t.pk for t in tables]
    by_table = stored and stored.partitions_of(table_ids) or _partitions_of(table_ids)
    verdicts = stored_verdicts(tables[0].server_id, table_ids) if tables else None
    for table in tables:
        members = by_table[table.pk]
        states = [state for state, _ in members]
        policy = (
            matching_policy(policies, table.schema, table.name, case_sensitive)
            if policies
            else None
        )
        health = table_health(
            table,
            conditions,
            states=states,
            recents=[text for _, text in members],
            windows=stored.windows.setdefault(table.pk, {}) if stored else None,
            skews=stored.skews.setdefault(table.pk, {}) if stored else None,
            policy=policy,
            statements=None if verdicts is None else verdicts[table.pk],
        )
        health = keep_drift(table.health, health)  # the group's comparison writes it
        table.health = health
        # Where the shares come from; the shares themselves are derived when asked for
        # (`activity_shares`), which keeps a busy table's stored row from growing.
        table.activity = activity_signal(
            health["activity_source"], conditions.signals, seconds, conditions.why
        )
        table.score = health["score"]
        table.total_rows = _total(states, "rows")
        table.total_data_bytes = _total(states, "data_bytes")
        table.total_index_bytes = _total(states, "index_bytes")
        table.total_file_bytes = _total(states, "file_bytes")
        table.analysed_at = conditions.now
    _write_results(tables)


def poll_conditions(server, snapshot: ServerSnapshot) -> PollConditions:
    """What the server's tables are analysed under after the poll `snapshot`."""
    variables = snapshot.variables or {}
    signals, why = signals_of(snapshot)
    return PollConditions(
        now=snapshot.taken_at,
        page_size=as_number(variables.get("innodb_page_size")) or 16384,
        buffer_pool=variables.get("innodb_buffer_pool_size"),
        signals=signals,
        why=why,
        hold=hotspot_hold(server.poll_interval),
        auto_recalc=variables.get("innodb_stats_auto_recalc"),
    )


def analyse_server(
    server,
    snapshot: ServerSnapshot,
    changed_tables: set[int] | None = None,
    stored: "StoredFigures | None" = None,
):
    """Analyse the server's tables that are due (all when `changed_tables` is None, else
    see `_is_due`) and its pressure; stores the results. Returns the number of tables
    analysed. `stored`: the partitions' figures as the poll just stored them, which
    spares reading them back (the longest step of analysing a table)."""
    tables = _tables_to_analyse(server, changed_tables, snapshot.taken_at)
    conditions = poll_conditions(server, snapshot)
    policies = server_policies(server) if tables else []
    case_sensitive = names_case_sensitive((snapshot.variables or {}).get("lower_case_table_names"))
    for start in range(0, len(tables), TABLES_PER_BATCH):
        batch = tables[start : start + TABLES_PER_BATCH]
        _analyse(batch, conditions, stored, policies=policies, case_sensitive=case_sensitive)
    snapshot.pressure = server_pressure(server, snapshot)
    drift.evaluate(server, snapshot, snapshot.pressure)  # after the tables: it reads them
    ServerSnapshot.objects.filter(pk=snapshot.pk).update(pressure=snapshot.pressure)
    return len(tables)


FORECAST_POINTS = 2000  # the newest snapshots of the window a forecast is fitted to


def working_set_forecast(
    server, snapshot: ServerSnapshot, written_bytes: int, pool_bytes: int | None
) -> dict:
    """The written working set's trend over PARTDASH_WORKING_SET_FORECAST_DAYS and the
    date it crosses PARTDASH_WORKING_SET_FORECAST_FRACTION of the buffer pool
    (`health.forecast`), as the stored pressure's `working_set` carries it. Fitted again
    at most every PARTDASH_WORKING_SET_FORECAST_EVERY_SECONDS; between, the last fit
    stands (its days left counted from now): a quiet poll reads no history."""
    now = snapshot.taken_at
    every = timedelta(seconds=settings.PARTDASH_WORKING_SET_FORECAST_EVERY_SECONDS)
    previous = (
        ServerSnapshot.objects.filter(server=server, taken_at__lt=now)
        .order_by("-taken_at")
        .values_list(KeyTransform("working_set", "pressure"), flat=True)
        .first()
    ) or {}
    fitted_at = _when(previous.get("forecast_at"))
    if fitted_at is not None and now - fitted_at < every and "forecast_date" in previous:
        kept = {key: previous.get(key) for key in FORECAST_KEYS}
        date = _when(kept["forecast_date"])
        kept["forecast_days_left"] = (
            max((date - now).total_seconds() / 86400, 0.0) if date is not None else None
        )
        return kept
    window = timedelta(days=settings.PARTDASH_WORKING_SET_FORECAST_DAYS)
    history = (
        ServerSnapshot.objects.filter(server=server, taken_at__gte=now - window, taken_at__lt=now)
        .exclude(pk=snapshot.pk)
        .order_by("-taken_at")
        .values_list("taken_at", KeyTransform("bytes", KeyTransform("working_set", "pressure")))
    )
    points = [(t, b) for t, b in history[:FORECAST_POINTS] if b is not None]
    points.reverse()
    points.append((now, written_bytes))
    # A server's first polls know no writes yet (no window): its zeros before the first
    # working set are no measure of it.
    while points and not points[0][1]:
        points.pop(0)
    limit = pool_bytes * settings.PARTDASH_WORKING_SET_FORECAST_FRACTION if pool_bytes else None
    ahead = forecast(points, limit, now, window)
    return {
        "growth_bytes_per_day": ahead.growth_bytes_per_day,
        "forecast_date": _iso(ahead.forecast_date),
        "forecast_days_left": ahead.days_left,
        "forecast_earliest": _iso(ahead.earliest),
        "forecast_latest": _iso(ahead.latest),
        "forecast_limit_bytes": ahead.limit_bytes,
        "forecast_points": ahead.points,
        "forecast_reason": ahead.reason,
        "forecast_at": _iso(now),
    }


FORECAST_KEYS = (
    "growth_bytes_per_day",
    "forecast_date",
    "forecast_days_left",
    "forecast_earliest",
    "forecast_latest",
    "forecast_limit_bytes",
    "forecast_points",
    "forecast_reason",
    "forecast_at",
)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def server_pressure(server, snapshot: ServerSnapshot) -> ServerPressure:
    """Partitions against the server's limits, the written partitions against the buffer
    pool, and counts of fragmented and stale partitions (from the tables' health)."""
    variables = snapshot.variables or {}
    healths = (
        PartitionedTable.objects.live()
        .filter(server=server)
        .values_list(
            health_key("written", "bytes"),
            health_key("written", "partitions"),
            health_key("fragmented"),
            health_key("stale"),
        )
    )
    written_bytes = written_count = fragmented = stale = 0
    for table_bytes, table_count, table_fragmented, table_stale in healths:
        written_bytes += table_bytes or 0
        written_count += table_count or 0
        fragmented += table_fragmented or 0
        stale += table_stale or 0
    verdict = written_against_pool(
        written_bytes, written_count, variables.get("innodb_buffer_pool_size")
    )
    ratio = verdict.ratio
    other = UnmonitoredTable.objects.filter(server=server).aggregate(
        partitions=Sum("partitions"), files=Sum("files")
    )
    limits = server_limits(
        snapshot.partitions or 0, variables, other["partitions"] or 0, other["files"] or 0
    )
    found = [rules.limit_finding(limit) for limit in limits] + [rules.working_set_finding(verdict)]
    ahead = working_set_forecast(server, snapshot, verdict.bytes, verdict.buffer_pool_bytes)
    return {
        "limits": [plain(p) for p in limits],
        "working_set": {
            "bytes": verdict.bytes,
            "buffer_pool_bytes": verdict.buffer_pool_bytes,
            "ratio": ratio,
            "level": level_of(ratio / WORKING_SET_RATIO if ratio is not None else None),
            "partitions": written_count,
            "is_finding": verdict.is_finding,
            "reason": verdict.reason,
            "estimated": True,
            **ahead,
        },
        "fragmented_partitions": fragmented,
        "stale_partitions": stale,
        # Server-wide findings, ranked with the tables' (`server_findings`).
        "findings": [plain(f) for f in sorted(filter(None, found), key=lambda f: -f.score)],
    }
