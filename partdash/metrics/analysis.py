"""The health of a server's tables, computed after each poll with `partdash.health` and
stored on each table (and the server's snapshot), so the API, the pages and the alerts
read one row per table instead of recomputing over every partition.

Hotspots and compression failure rates use the activity inside a window (default the
last hour, `PARTDASH_HOTSPOT_WINDOW_SECONDS`): per partition, the deltas between the
samples stored within the window (the first of them is the baseline, so a partition
needs two samples in the window to show activity). Only tables that changed this poll,
or still show activity, are analysed again.
"""

from collections import defaultdict
from dataclasses import asdict, is_dataclass, replace
from datetime import date, datetime, timedelta

from django.conf import settings

from partdash.collector.sources import file_io, innodb_stats, tablespaces
from partdash.health import findings as rules
from partdash.health.compression import partition_compression, table_compression
from partdash.health.counters import level_change, series_delta
from partdash.health.hotspots import PartitionActivity, find_hotspots, written_partitions
from partdash.health.partitions import PartitionState, in_order
from partdash.health.pressure import (
    WORKING_SET_RATIO,
    as_number,
    fragmentation,
    level_of,
    server_limits,
    stale_partitions,
    working_set,
)
from partdash.health.runway import table_runway
from partdash.health.skew import judge_skew
from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot

STATE_FIELDS = (
    "name",
    "subpartition",
    "ordinal",
    "description",
    "rows",
    "data_bytes",
    "index_bytes",
    "file_bytes",
    "allocated_bytes",
    "stats_updated_at",
    "modified_counter",
    "autoinc",
    "row_format",
    "page_size",
    "compress_ops",
    "compress_ops_ok",
)
WINDOW_FIGURES = (
    "write_bytes",
    "read_bytes",
    "modified_counter",
    "rows",
    "data_bytes",
    "index_bytes",
    "compress_ops",
    "compress_ops_ok",
)
CHUNK = 500  # ids per IN (...): well under every backend's parameter limit


def window() -> timedelta:
    return timedelta(seconds=settings.PARTDASH_HOTSPOT_WINDOW_SECONDS)


def plain(value):
    """Dataclasses, dates and tuples as JSON-ready values."""
    if is_dataclass(value):
        return {k: plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 6)
    return value


def _chunks(ids: list[int]):
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


# -- window activity -------------------------------------------------------------------


def window_readings(partition_ids: list[int], since: datetime) -> dict[int, dict[str, list]]:
    """Per partition and figure, the values sampled since `since`, oldest first."""
    readings: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for ids in _chunks(partition_ids):
        rows = (
            PartitionSample.objects.filter(partition_id__in=ids, snapshot__taken_at__gte=since)
            .order_by("snapshot__taken_at")
            .values_list("partition_id", *WINDOW_FIGURES)
        )
        for partition_id, *values in rows:
            figures = readings[partition_id]
            for name, value in zip(WINDOW_FIGURES, values, strict=True):
                if value is not None:
                    figures[name].append(value)
    return readings


def _first_last(values: list) -> tuple:
    return (values[0], values[-1]) if values else (None, None)


def activity_of(label: str, figures: dict[str, list] | None) -> PartitionActivity:
    """What one partition did in the window, from its sampled values."""
    figures = figures or {}
    rows = _first_last(figures.get("rows", []))
    data = _first_last(figures.get("data_bytes", []))
    index = _first_last(figures.get("index_bytes", []))
    bytes_added = None
    if data[0] is not None or index[0] is not None:
        bytes_added = (level_change(*data) or 0) + (level_change(*index) or 0)
    return PartitionActivity(
        name=label,
        write_bytes=series_delta(figures.get("write_bytes", [])),
        read_bytes=series_delta(figures.get("read_bytes", [])),
        modified=series_delta(figures.get("modified_counter", [])),
        rows_added=level_change(*rows),
        bytes_added=bytes_added,
    )


# -- one table -------------------------------------------------------------------------


def _skew(finding) -> dict | None:
    if finding.skew is None:
        return None
    return {
        **plain(finding.skew),
        "is_finding": finding.is_finding,
        "reason": finding.reason,
        "threshold": finding.threshold,
        "largest": finding.largest,
        "judged_on": len(finding.judged_on),
        "measure": finding.measure,
        "estimated": finding.estimated,
        "as_of": plain(finding.as_of),
    }


def _with_window_compression(states, readings, ids) -> list[PartitionState]:
    """Compression counters as deltas over the window where known, else totals."""
    adjusted = []
    for state, partition_id in zip(states, ids, strict=True):
        figures = readings.get(partition_id) or {}
        ops = series_delta(figures.get("compress_ops", []))
        ok = series_delta(figures.get("compress_ops_ok", []))
        if ops:
            state = replace(state, compress_ops=ops, compress_ops_ok=ok or 0)
        adjusted.append(state)
    return adjusted


def table_health(
    table: PartitionedTable,
    states: list[PartitionState],
    ids: list[int],
    readings: dict,
    now: datetime,
    page_size: int,
    buffer_pool,
) -> dict:
    """Every health figure of one table, as stored in `PartitionedTable.health`."""
    activity = [activity_of(s.label, readings.get(pid)) for s, pid in zip(states, ids, strict=True)]
    hotspots = find_hotspots(activity)
    seconds = window().total_seconds()
    rows_added = sum(a.rows_added or 0 for a in activity)
    fill_rate = rows_added * 86400 / seconds if rows_added > 0 else None
    runway = table_runway(table.method, table.expression, states, now, fill_rate)
    compression = table_compression(
        _with_window_compression(states, readings, ids), table.create_options, page_size
    )
    skew_rows = judge_skew(table.method, states, "rows")
    skew_bytes = judge_skew(table.method, states, "bytes")
    written = working_set(states, set(written_partitions(activity)), buffer_pool)
    fragments = [f for f in map(fragmentation, states) if f.is_finding]
    stale = stale_partitions(states, now)
    found = [
        rules.skew_finding(skew_rows),
        rules.hotspot_finding(hotspots, table.method),
        rules.runway_finding(runway),
        rules.compression_finding(compression),
        rules.fragmentation_finding(len(fragments), sum(f.data_free or 0 for f in fragments)),
        rules.staleness_finding(len(stale)),
    ]
    found = sorted((f for f in found if f), key=lambda f: -f.score)
    return {
        "skew": _skew(skew_rows),
        "skew_bytes": _skew(skew_bytes),
        "hotspots": hotspots.hot if hotspots else [],
        "active": hotspots is not None,
        "activity": None
        if hotspots is None
        else {
            "source": hotspots.source,
            "window_seconds": seconds,
            "shares": {k: round(v, 4) for k, v in hotspots.shares.items() if v},
            "read_shares": {k: round(v, 4) for k, v in hotspots.read_shares.items() if v},
            "estimated": hotspots.estimated,
        },
        "compression": plain(compression),
        "runway": plain(runway),
        "findings": [plain(f) for f in found],
        "score": rules.table_score(found),
        "written": {"partitions": len(written.partitions), "bytes": written.bytes},
        "fragmented": len(fragments),
        "stale": len(stale),
    }


# -- a server --------------------------------------------------------------------------


def _tables_to_analyse(
    server, changed_tables: set[int] | None, now: datetime
) -> list[PartitionedTable]:
    """Tables changed this poll, still active in the window, or not analysed yet today
    (runway and ages count down with the calendar even where nothing is written)."""
    tables = PartitionedTable.objects.filter(server=server, dropped_at=None).defer("activity")
    if changed_tables is None:
        return list(tables)
    return [
        t
        for t in tables
        if t.pk in changed_tables
        or t.analysed_at is None
        or t.analysed_at.date() != now.date()
        or (t.health or {}).get("active")
    ]


def _partitions_of(tables: list[PartitionedTable]) -> dict[int, list[tuple[int, PartitionState]]]:
    by_table: dict[int, list[tuple[int, PartitionState]]] = defaultdict(list)
    for ids in _chunks([t.pk for t in tables]):
        rows = Partition.objects.filter(table_id__in=ids, dropped_at=None).values_list(
            "id", "table_id", *STATE_FIELDS
        )
        for partition_id, table_id, *values in rows:
            state = PartitionState(**dict(zip(STATE_FIELDS, values, strict=True)))
            by_table[table_id].append((partition_id, state))
    return by_table


def _total(states: list[PartitionState], field: str) -> int | None:
    values = [getattr(s, field) for s in states if getattr(s, field) is not None]
    return sum(values) if values else None


def analyse_server(server, snapshot: ServerSnapshot, changed_tables: set[int] | None = None):
    """Analyse the server's tables (all, or those changed this poll and those still
    active in the window) and its pressure; stores the results. Returns the number of
    tables analysed."""
    now = snapshot.taken_at
    variables = snapshot.variables or {}
    page_size = as_number(variables.get("innodb_page_size")) or 16384
    buffer_pool = variables.get("innodb_buffer_pool_size")
    tables = _tables_to_analyse(server, changed_tables, now)
    by_table = _partitions_of(tables)
    all_ids = [pid for members in by_table.values() for pid, _ in members]
    readings = window_readings(all_ids, now - window())
    for table in tables:
        members = by_table.get(table.pk, [])
        ordered = {id(s): pid for pid, s in members}
        states = in_order(s for _, s in members)
        ids = [ordered[id(s)] for s in states]
        table.health = table_health(table, states, ids, readings, now, page_size, buffer_pool)
        table.activity = table.health.pop("activity")
        table.score = table.health["score"]
        table.total_rows = _total(states, "rows")
        table.total_data_bytes = _total(states, "data_bytes")
        table.total_index_bytes = _total(states, "index_bytes")
        table.total_file_bytes = _total(states, "file_bytes")
        table.analysed_at = now
    PartitionedTable.objects.bulk_update(
        tables,
        [
            "health",
            "activity",
            "score",
            "total_rows",
            "total_data_bytes",
            "total_index_bytes",
            "total_file_bytes",
            "analysed_at",
        ],
        batch_size=200,
    )
    snapshot.health = server_pressure(server, snapshot)
    ServerSnapshot.objects.filter(pk=snapshot.pk).update(health=snapshot.health)
    return len(tables)


def server_pressure(server, snapshot: ServerSnapshot) -> dict:
    """Partitions against the server's limits, the written partitions against the buffer
    pool, and counts of fragmented and stale partitions (from the tables' health)."""
    variables = snapshot.variables or {}
    healths = PartitionedTable.objects.filter(server=server, dropped_at=None).values_list(
        "health", flat=True
    )
    written_bytes = written_count = fragmented = stale = 0
    for health in healths:
        written = (health or {}).get("written") or {}
        written_bytes += written.get("bytes", 0)
        written_count += written.get("partitions", 0)
        fragmented += (health or {}).get("fragmented", 0)
        stale += (health or {}).get("stale", 0)
    pool = as_number(variables.get("innodb_buffer_pool_size"))
    ratio = written_bytes / pool if pool else None
    limits = [{**plain(p)} for p in server_limits(snapshot.partitions, variables)]
    return {
        "limits": limits,
        "working_set": {
            "bytes": written_bytes,
            "buffer_pool_bytes": pool,
            "ratio": ratio,
            "level": level_of(ratio / WORKING_SET_RATIO if ratio is not None else None),
            "partitions": written_count,
            "is_finding": ratio is not None and ratio > WORKING_SET_RATIO,
            "reason": (
                f"{written_count} partitions written in the last "
                f"{window().total_seconds() / 60:.0f} min hold "
                + (f"{ratio:.0%} of the buffer pool" if ratio is not None else "an unknown share")
            ),
            "estimated": True,
        },
        "fragmented_partitions": fragmented,
        "stale_partitions": stale,
    }


# -- capabilities ----------------------------------------------------------------------


def capabilities(snapshot: ServerSnapshot | None) -> list[dict]:
    """What the latest poll could read, and the exact setting or GRANT for what it could
    not."""
    if snapshot is None:
        return []
    variables, sources = snapshot.variables or {}, snapshot.sources or {}

    def on(name: str) -> bool:
        return str(variables.get(name, "")).upper() in ("ON", "1")

    def item(name: str, ok: bool, detail: str, fix: str) -> dict:
        return {"name": name, "ok": ok, "detail": detail, "fix": "" if ok else fix}

    ps_on = on("performance_schema")
    return [
        item(
            "performance_schema",
            ps_on and sources.get("file_io", False),
            "per-partition read and write I/O (hotspots)"
            if ps_on
            else "off: hotspots fall back to row and size growth",
            file_io.FIX if ps_on else "performance_schema=ON under [mysqld] in my.cnf, restart",
        ),
        item(
            "persistent statistics",
            sources.get("innodb_table_stats", False),
            "rows and sizes per partition (estimates)",
            innodb_stats.FIX,
        ),
        item(
            "tablespace list",
            sources.get("tablespaces", False),
            "file and allocated sizes, page compression",
            tablespaces.FIX,
        ),
        item(
            "innodb_file_per_table",
            on("innodb_file_per_table"),
            "one file per partition",
            "SET GLOBAL innodb_file_per_table=ON (and in my.cnf); rebuild existing tables",
        ),
        item(
            "innodb_cmp_per_index_enabled",
            on("innodb_cmp_per_index_enabled"),
            "compression failure rate per table and partition",
            "SET GLOBAL innodb_cmp_per_index_enabled=ON (and in my.cnf)",
        ),
        item(
            "innodb_stats_persistent",
            on("innodb_stats_persistent"),
            "row estimates that survive restarts",
            "SET GLOBAL innodb_stats_persistent=ON (and in my.cnf)",
        ),
    ]


def partition_figures(partition: Partition, table: PartitionedTable, page_size: int) -> dict:
    """Per-partition health for the API: compression, and its shares of the table's
    activity in the window."""
    state = PartitionState.from_object(partition)
    activity = table.activity or {}
    label = state.label
    compression = partition_compression(state, table.create_options, page_size)
    return {
        "is_hotspot": label in ((table.health or {}).get("hotspots") or []),
        "write_share": activity.get("shares", {}).get(label, 0.0) if activity else None,
        "read_share": activity.get("read_shares", {}).get(label, 0.0) if activity else None,
        "compression": None
        if compression is None
        else {
            "kind": compression.kind,
            "ratio": compression.ratio,
            "failure_rate": compression.failure_rate,
            "verdict": compression.verdict,
        },
    }


def latest_snapshot(server_id: int) -> ServerSnapshot | None:
    return ServerSnapshot.objects.filter(server_id=server_id).order_by("-taken_at").first()
