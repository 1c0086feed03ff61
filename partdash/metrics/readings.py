"""What the API and the pages read from the stored health on each request: the
sources a server's latest poll could read, and each partition's share of its table's
activity and its compression. The window and its sums are the analysis's own
(`partdash.metrics.analysis`), so a partition's figures match its table's findings.
"""

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from partdash.health.compression import api_fields, partition_compression, stored_api_fields
from partdash.health.fixes import stored_fix
from partdash.health.hotspots import UNKNOWN_SIGNALS, Signals, find_hotspots
from partdash.health.partitions import PartitionState
from partdash.health.shapes import ActivitySignal, FindingShape, stored_health
from partdash.metrics.analysis import (
    activity_of,
    rows_changed_blind,
    window_sums,
    with_window_compression,
)
from partdash.metrics.models import PartitionedTable, ServerSnapshot
from partdash.mysql.catalogue import SETTING, TABLESTATS, Shortfall, source_states
from partdash.mysql.dialects import dialect_for

# -- capabilities ----------------------------------------------------------------------


def capabilities(snapshot: ServerSnapshot | None) -> list[dict]:
    """Each source of the catalogue as of the latest poll: what it gives, what it needs,
    whether the poll could read it and, where not, the fix the poll gave (the same
    words and statements as the poll's warnings and Test connection)."""
    if snapshot is None:
        return []
    dialect = dialect_for(snapshot.flavor, snapshot.version)
    shortfalls = [Shortfall.from_dict(warning) for warning in snapshot.warnings or []]
    read = dict(snapshot.sources or {})
    uncached = _uncached(snapshot)
    if uncached is not None:  # used, and not read: not `ok` (Test connection agrees)
        shortfalls.append(uncached)
        read[TABLESTATS.key] = False
    states = source_states(read, shortfalls, dialect)
    return [state.as_dict() for state in states]


def _uncached(snapshot: ServerSnapshot) -> Shortfall | None:
    """Rows changed not read, the dictionary cache being too small: a setting's
    shortfall for the capability panel, though not a poll warning (the poll is not
    degraded by it: `coverage` says what it costs)."""
    if (snapshot.sources or {}).get("tablestats_plan") != "uncached":
        return None
    blind = rows_changed_blind(snapshot)
    assert blind is not None and blind.enable is not None  # uncached: the cache's fix
    return Shortfall(SETTING, (TABLESTATS.key,), blind.why, (blind.enable,))


def stored_signals(activity: ActivitySignal | None) -> Signals:
    """The signals a table's analysis judged on (its stored `activity`), so shares read
    on each request are of the same signal as its hotspots."""
    if not activity:
        return UNKNOWN_SIGNALS
    source = activity.get("source")
    return Signals(
        rows_changed=source == "rows_changed",
        disk=source == "disk" or activity.get("reads") == "disk" or None,
    )


def activity_shares(
    labels: list[str], recents: list[str | None], now: datetime, signals: Signals = UNKNOWN_SIGNALS
) -> dict | None:
    """Each partition's share of its table's writes (on the table's write signal) and
    disk reads in the window ending at `now` (the table's analysis time), as the hotspot
    rules saw them; None when the window holds no activity. Shares only: which
    partitions are hot (persistently, over the window's slots) is the analysis's
    verdict, stored on the table."""
    activity = [
        activity_of(label, window_sums(text, now))
        for label, text in zip(labels, recents, strict=True)
    ]
    hotspots = find_hotspots(activity, signals=signals)
    if hotspots is None:
        return None
    return {
        "shares": {k: round(v, 4) for k, v in hotspots.shares.items() if v},
        "read_shares": {k: round(v, 4) for k, v in hotspots.read_shares.items() if v},
    }


def table_shares(table: PartitionedTable) -> dict | None:
    """`activity_shares` of a stored table's live partitions."""
    rows = table.partitions.live().values_list("name", "subpartition", "recent")
    labels = [PartitionState(name, subpartition).label for name, subpartition, _ in rows]
    now = table.analysed_at or timezone.now()
    return activity_shares(
        labels, [text for _, _, text in rows], now, stored_signals(table.activity)
    )


def partition_figures(
    partition, table: PartitionedTable, page_size: int, now: datetime, shares: dict | None
) -> dict:
    """Per-partition health for the API: compression (over the same window as its
    table's), and its shares of the table's activity (`activity_shares`)."""
    state = PartitionState.from_object(partition)
    label = state.label
    sums = window_sums(partition.recent, now)
    compression = partition_compression(
        with_window_compression(state, sums), table.create_options, page_size
    )
    return {
        "is_hotspot": label in (stored_health(table.health).get("hotspots") or []),
        "write_share": shares["shares"].get(label, 0.0) if shares else None,
        "read_share": shares["read_shares"].get(label, 0.0) if shares else None,
        "compression": None if compression is None else api_fields(compression),
    }


def latest_snapshot(server_id: int) -> ServerSnapshot | None:
    return ServerSnapshot.objects.latest_for(server_id).first()


def latest_pressures(server_ids: list[int] | QuerySet | None, part: str | None = None) -> dict:
    """Each server's stored pressure as of its latest poll (of `server_ids`, else of
    every server), in one query whatever the number of servers (servers never polled
    are absent); only its `part` (`findings`, `working_set`: null where absent) when
    given, which is all the fleet's lists read of it (a pressure is 1-2 KB; its
    findings alone, at 1,000 servers, a third of that)."""
    snapshots = ServerSnapshot.objects.latest_of(server_ids)
    if part is None:
        return dict(snapshots.values_list("server_id", "pressure"))
    read = snapshots.annotate(part=KeyTransform(part, "pressure"))
    return dict(read.values_list("server_id", "part"))


def health_fields(stored: Any) -> dict[str, Any]:
    """A table's stored health as the API shows it (lists default to empty): one place
    for the serializer, the fast tables list and /metrics."""
    health = stored_health(stored)
    return {
        "skew": health.get("skew"),
        "hotspots": health.get("hotspots") or [],
        "hotspot_detail": health.get("hotspot_detail") or [],
        "activity_source": health.get("activity_source"),
        "compression": stored_api_fields(health.get("compression")),
        "runway": health.get("runway"),
        "findings": [with_fix(f) for f in health.get("findings") or []],
        "skew_bytes": health.get("skew_bytes"),
        "statistics": health.get("statistics"),
        "retention": health.get("retention"),
    }


def with_fix(finding: FindingShape) -> FindingShape:
    """A stored finding with its `fix` in the contract's shape (`stored_fix`; null in
    health stored before findings had one, until the table's next analysis)."""
    return {**finding, "fix": stored_fix(finding.get("fix"))}
