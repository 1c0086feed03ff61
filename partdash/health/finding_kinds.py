"""The built-in finding kinds, one declaration each (`partdash.health.kinds`): how the
table's analysis finds it, its fix, its place in the maintenance plan, its alert rule
and its /metrics families. Declared in the order their rules are listed; `urgency` is the
order a DBA fixes them in: runway, retention, drift, fragmentation, statistics
(staleness), pressure, compression, skew, hotspot.

The alert judges read the stored health (what the pages show): a finding rule's condition
holds while the stored finding exists, its value the figure the finding is about, its
limit the analysis's own (an override's threshold can only raise the bar).
"""

from collections.abc import Mapping
from typing import Any

from partdash.health import findings as rules
from partdash.health import fixes
from partdash.health.alerting import Condition
from partdash.health.compression import FAILURE_RATE_LIMIT, PAGE_RATIO_LIMIT
from partdash.health.findings import RUNWAY_WARNING_DAYS, day_count
from partdash.health.hotspots import old_partition_writes
from partdash.health.kinds import AlertSpec, Figure, FindingKind, Observed, register

Health = Mapping[str, Any]
Stored = Mapping[str, Any] | None

# Runway clears one day past its 14-day limit (15 days), so the partitions a fix adds
# must reach past 15 days for the alert to resolve.
RUNWAY_CLEAR_RATIO = 14 / 15
# Runway without a catch-all or a known day: after the runway findings that have one.
_UNKNOWN = 1e18


def finding_condition(finding: Stored, value, limit, otherwise: str, **fields) -> Condition:
    """A finding rule's condition: it holds while the stored finding exists."""
    return Condition(
        value=value,
        limit=limit,
        holds=finding is not None,
        severity=(finding or {}).get("severity", "warning"),
        message=(finding or {}).get("message") or otherwise,
        fix=(finding or {}).get("fix"),
        **fields,
    )


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


# -- skew ------------------------------------------------------------------------------


def _skew_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    skew = health.get("skew") or {}
    limit = skew.get("threshold")
    # Unjudged (too few rows, one partition): unknown, not even; it clears an alert.
    judged = limit is not None and skew.get("judged", True)
    value = skew.get("max_mean_ratio") if judged else None
    return finding_condition(finding, value, limit, skew.get("reason") or "not judged")


register(
    FindingKind(
        "skew",
        "Skew",
        urgency=8,
        analyse=lambda seen: rules.skew_finding(seen.skew),
        fix=lambda table, _horizon: fixes.skew_fix(table),
        alert=AlertSpec(
            "table",
            "largest partition's rows over the mean (the skew finding's max_mean_ratio)",
            "x",
            judge=_skew_condition,
        ),
        figures=(
            Figure(
                "table_skew_ratio",
                "The largest partition's rows over the mean (1 is perfectly even).",
                lambda health: (health.get("skew") or {}).get("max_mean_ratio"),
                paths=(("skew", "max_mean_ratio"),),
            ),
        ),
    )
)


# -- hotspot ---------------------------------------------------------------------------


def _hotspot_finding(seen: Observed) -> rules.Finding | None:
    facts = seen.facts
    old = old_partition_writes(
        seen.hotspots, facts.method, facts.expression, seen.states, facts.now
    )
    return rules.hotspot_finding(seen.hotspots, facts.method, old)


def _hotspot_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    hot = len(health.get("hotspots") or []) if finding else 0
    return finding_condition(finding, hot, 1, "no hot partition")


register(
    FindingKind(
        "hotspot",
        "Hotspot",
        urgency=9,
        analyse=_hotspot_finding,
        fix=lambda table, _horizon: fixes.hotspot_fix(table),
        alert=AlertSpec(
            "table", "hot partitions (the hotspot finding)", "partitions", judge=_hotspot_condition
        ),
        figures=(
            Figure(
                "table_hot_partitions",
                "Partitions flagged hot in the latest window.",
                lambda health: len(health.get("hotspots") or []),
                paths=(("hotspots",),),
            ),
        ),
    )
)


# -- runway ----------------------------------------------------------------------------


def _runway_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    runway = health.get("runway") or {}
    days = runway.get("days_left")
    unknown = f"runway unknown: {runway['reason']}" if runway.get("reason") else "runway unknown"
    otherwise = unknown if days is None else f"{day_count(days)} left"
    warning = runway.get("warning_days") or RUNWAY_WARNING_DAYS
    return finding_condition(finding, days, warning, otherwise)


def _runway_urgency(finding: Health, health: Health) -> tuple[str, float]:
    """Rows in the catch-all first (more first), then the fewest days left."""
    runway = health.get("runway") or {}
    rows, days = runway.get("catchall_rows"), runway.get("days_left")
    if rows:
        return f"{rows:,} rows in the catch-all", -_UNKNOWN - rows
    if days is None:
        return finding["severity"], _UNKNOWN
    return ("past the last bound" if days <= 0 else f"{day_count(days)} left"), float(days)


register(
    FindingKind(
        "runway",
        "Runway",
        urgency=1,
        analyse=lambda seen: rules.runway_finding(seen.runway),
        fix=fixes.runway_fix,
        alert=AlertSpec(
            "table",
            "days before rows reach the catch-all (0 once they have)",
            "days",
            defaults={"worse": "below", "clear_ratio": RUNWAY_CLEAR_RATIO},
            judge=_runway_condition,
        ),
        figures=(
            Figure(
                "table_runway_seconds",
                "Seconds before rows land in the catch-all partition (RANGE; absent where "
                "unknown).",
                lambda health: _times((health.get("runway") or {}).get("days_left"), 86400),
                paths=(("runway", "days_left"),),
            ),
            Figure(
                "table_catchall_rows",
                "Rows in the MAXVALUE partition (RANGE).",
                lambda health: (health.get("runway") or {}).get("catchall_rows"),
                paths=(("runway", "catchall_rows"),),
            ),
        ),
        within=_runway_urgency,
        names_in_advice=True,
    )
)


# -- compression -----------------------------------------------------------------------


def _compression_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    compression = health.get("compression") or {}
    verdict = compression.get("verdict") or "not compressed"
    if compression.get("kind") == "page":
        # A ratio, lower is worse: a threshold set for failure rates does not apply.
        ratio = compression.get("ratio")
        return finding_condition(
            finding, ratio, PAGE_RATIO_LIMIT, verdict, worse="below", overridable=False
        )
    rate = compression.get("failure_rate")
    return finding_condition(finding, rate, FAILURE_RATE_LIMIT, verdict)


register(
    FindingKind(
        "compression",
        "Compression",
        urgency=7,
        analyse=lambda seen: rules.compression_finding(seen.compression),
        fix=lambda table, _horizon: fixes.compression_fix(table),
        alert=AlertSpec(
            "table",
            "compression failure rate (page compression: the ratio saved)",
            judge=_compression_condition,
        ),
        figures=(
            Figure(
                "table_compression_failure_ratio",
                "Failed compressions over compressions in the window (compressed tables).",
                lambda health: (health.get("compression") or {}).get("failure_rate"),
                paths=(("compression", "failure_rate"),),
            ),
        ),
    )
)


# -- fragmentation ---------------------------------------------------------------------


def _fragmentation_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    count = health.get("fragmented") or 0
    return finding_condition(finding, count, 1, f"{count} fragmented partition(s)")


register(
    FindingKind(
        "fragmentation",
        "Fragmentation",
        urgency=4,
        analyse=lambda seen: rules.fragmentation_finding(
            len(seen.fragments), sum(f.data_free or 0 for f in seen.fragments)
        ),
        fix=lambda table, _horizon: fixes.rebuild_fix(table),
        alert=AlertSpec(
            "table",
            "partitions with over a quarter of their file free",
            "partitions",
            judge=_fragmentation_condition,
        ),
    )
)


# -- staleness -------------------------------------------------------------------------


def _staleness_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    count = health.get("stale") or 0
    return finding_condition(finding, count, 1, f"{count} partition(s) with stale statistics")


register(
    FindingKind(
        "staleness",
        "Stale statistics",
        urgency=5,
        analyse=lambda seen: rules.staleness_finding(seen.stale),
        fix=lambda table, _horizon: fixes.analyze_fix(table),
        alert=AlertSpec(
            "table",
            "partitions changed by over 20% since their statistics",
            "partitions",
            judge=_staleness_condition,
        ),
    )
)


# -- pressure (the server's: its condition is the alerts service's) -------------------

register(
    FindingKind(
        "pressure",
        "Server pressure",
        urgency=6,
        alert=AlertSpec(
            "server",
            "partitions against the server's caches and file limit, written working set "
            "against the buffer pool (the worst ratio)",
        ),
    )
)


# -- drift (a group's comparison finds it, `metrics.drift`) ----------------------------


def _drift_condition(health: Health, finding: Stored, _settings: Health) -> Condition:
    drift = health.get("drift") or {}
    differences = len(drift.get("differences") or []) if finding else 0
    return finding_condition(finding, differences, 1, "in line with its group")


def _drift_differences(health: Health) -> float | None:
    drift = health.get("drift")
    return len(drift.get("differences") or []) if drift else None


register(
    FindingKind(
        "drift",
        "Layout drift in a server group",
        urgency=3,
        alert=AlertSpec(
            "table",
            "differences from the table's layout on the rest of its server group (the drift "
            "finding)",
            "differences",
            judge=_drift_condition,
        ),
        figures=(
            Figure(
                "table_drift_differences",
                "Differences from the table's layout on its server group (absent: in line or "
                "no group).",
                _drift_differences,
                paths=(("drift",),),  # whole: present without differences is 0, not absent
            ),
        ),
    )
)


# -- retention -------------------------------------------------------------------------

GRACE = "PARTDASH_RETENTION_GRACE_DAYS"


def _retention_condition(health: Health, finding: Stored, settings: Health) -> Condition:
    """Days the oldest partition is past its retention policy, against the grace
    (`PARTDASH_RETENTION_GRACE_DAYS`): a daily drop job that runs a few hours late does
    not page, one that stopped does."""
    retention = health.get("retention") or {}
    overdue = retention.get("overdue_days") if finding else 0.0
    return finding_condition(
        finding, overdue, settings[GRACE], "no partition past its retention policy"
    )


def _overdue(health: Health) -> float | None:
    value = (health.get("retention") or {}).get("overdue_days")
    return float(value) if isinstance(value, int | float) else None


def _retention_urgency(finding: Health, health: Health) -> tuple[str, float]:
    """Most overdue first."""
    overdue = _overdue(health)
    if overdue is None:
        return finding["severity"], 0.0
    return f"{day_count(overdue)} overdue", -overdue


def _retention_partitions(health: Health) -> float | None:
    retention = health.get("retention") or {}
    return retention.get("overdue_partitions") if retention.get("policy_id") is not None else None


register(
    FindingKind(
        "retention",
        "Retention job stalled",
        urgency=2,
        analyse=lambda seen: rules.retention_finding(seen.retention),
        fix=lambda table, _horizon: fixes.drop_fix(table),
        alert=AlertSpec(
            "table",
            "days the oldest partition is past its retention policy (the retention finding); "
            "fires past PARTDASH_RETENTION_GRACE_DAYS: the drop job stalled",
            "days",
            judge=_retention_condition,
            reads=(GRACE,),
        ),
        figures=(
            Figure(
                "table_retention_overdue_partitions",
                "Partitions past the retention policy matching the table (absent: no policy).",
                _retention_partitions,
                paths=(("retention", "overdue_partitions"), ("retention", "policy_id")),
            ),
            Figure(
                "table_retention_overdue_seconds",
                "How long the oldest partition has been past its retention policy.",
                lambda health: _times((health.get("retention") or {}).get("overdue_days"), 86400),
                paths=(("retention", "overdue_days"),),
            ),
        ),
        within=_retention_urgency,
    )
)
