"""What a DBA should look at first: each table's health turned into findings with a
severity and a score, so tables rank across a fleet (the higher the score, the worse).

Scores: a critical finding is worth 100 plus its excess, a warning 10 plus its excess,
where the excess says how far past its limit the figure is (capped at 50). Runway that
has run out (rows already in the catch-all, or the last bound in the past) is critical;
under `RUNWAY_CRITICAL_DAYS` days left is critical, the table's `warning_days` or fewer
(one partition span, 14 to 45 days: `runway.warning_days`) a warning.

Each finding carries its `fix` (`partdash.health.fixes`): advice, and where partdash can
write it, the statement to run.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Literal

from partdash.health import fixes
from partdash.health.compression import Compression
from partdash.health.fixes import Fix, TableFacts
from partdash.health.hotspots import HotPartition, Hotspots
from partdash.health.pressure import LimitPressure, Staleness, WorkingSet
from partdash.health.retention import Retention
from partdash.health.runway import WARNING_LEAST_DAYS, Runway
from partdash.health.runway_fix import bound_words
from partdash.health.skew import SkewFinding

RUNWAY_WARNING_DAYS = WARNING_LEAST_DAYS  # the least; a table's own is `warning_days`
RUNWAY_CRITICAL_DAYS = 3  # under 3 days left: 2 whole days or fewer
# A runway fix adds partitions this far ahead: the finding clears, and returns no sooner
# than RUNWAY_WARNING_DAYS later (`runway_horizon` for a table's own span).
RUNWAY_HORIZON_DAYS = 2 * RUNWAY_WARNING_DAYS
# Skew this many times past its limit is critical (a HASH table at 3x the mean).
SKEW_CRITICAL_FACTOR = 2.0
# Partitions past their retention policy for longer than this are critical: a drop job
# stalled for a week, not one running late.
RETENTION_CRITICAL_DAYS = 7

Severity = Literal["warning", "critical"]
Kind = str  # a registered finding kind's name (`partdash.health.kinds`)


@dataclass(frozen=True, slots=True)
class Finding:
    kind: Kind
    severity: Severity
    score: float
    message: str
    fix: Fix | None = None


def _score(severity: Severity, excess: float) -> float:
    return (100.0 if severity == "critical" else 10.0) + min(max(excess, 0.0), 50.0)


def skew_finding(finding: SkewFinding | None) -> Finding | None:
    if finding is None or not finding.is_finding or finding.skew is None:
        return None
    ratio = finding.skew.max_mean_ratio / (finding.threshold or 1.0)
    severity: Severity = "critical" if ratio >= SKEW_CRITICAL_FACTOR else "warning"
    largest = f" ({finding.largest} is the largest)" if finding.largest else ""
    return Finding("skew", severity, _score(severity, ratio - 1), finding.reason + largest)


# What a hotspot's share is a share of, by write signal and kind: the application's
# rows changed (logical) apart from the disk's reads and writes (physical).
_ACTIVITY = {
    ("rows_changed", "write"): "rows changed",
    ("disk", "write"): "disk writes (page flushes, standing in for rows changed)",
    ("growth", "write"): "row growth (standing in for rows changed)",
}
HOTSPOTS_NAMED = 5  # in a finding's message; the API's hotspot_detail has them all


def hotspot_sentence(hot: HotPartition, source: str) -> str:
    """ "p5 takes 100% of the rows changed (hot in 9 of 10 slots with writes)"."""
    what = "disk reads" if hot.kind == "read" else _ACTIVITY.get((source, hot.kind), "writes")
    return (
        f"{hot.partition} takes {hot.share:.0%} of the {what} "
        f"(hot in {hot.slots_hot} of {hot.slots_active} slots with {hot.kind}s)"
    )


def hotspot_finding(
    hotspots: Hotspots | None, method: str, old: Sequence[HotPartition] = ()
) -> Finding | None:
    """Hot partitions are a finding where the method promises even load (HASH, KEY,
    LIST); all writes going to the newest RANGE partition is how time ranges work, and
    is shown but not raised, unless they go to an `old` one
    (`hotspots.old_partition_writes`). Writes and reads are reported separately."""
    if hotspots is None or not hotspots.detail:
        return None
    if (method or "").upper().startswith("RANGE"):
        return old_partition_finding(old, hotspots.source)
    share = max(hot.share for hot in hotspots.detail)
    sentences = [hotspot_sentence(hot, hotspots.source) for hot in hotspots.detail]
    more = len(sentences) - HOTSPOTS_NAMED
    message = "; ".join(sentences[:HOTSPOTS_NAMED]) + (f"; and {more} more" if more > 0 else "")
    return Finding("hotspot", "warning", _score("warning", share * 10), message)


def old_partition_finding(old: Sequence[HotPartition], source: str) -> Finding | None:
    """Most of a RANGE table's writes going to a partition new rows do not go to: a
    month-old day updated over and over, or rows stamped with the wrong time."""
    if not old:
        return None
    share = max(hot.share for hot in old)
    named = "; ".join(hotspot_sentence(hot, source) for hot in old[:HOTSPOTS_NAMED])
    more = len(old) - HOTSPOTS_NAMED
    return Finding(
        "hotspot",
        "warning",
        _score("warning", share * 10),
        f"{named}{f'; and {more} more' if more > 0 else ''}: not the partition new rows go "
        "to. Usually old rows updated over and over, or timestamps written wrong (a clock, "
        "a time zone, a default date)",
    )


def _bound_text(bound: date | int) -> str:
    if isinstance(bound, datetime):
        return bound_words(bound)
    return bound.isoformat() if isinstance(bound, date) else f"{bound:,}"


def day_count(days: float) -> str:
    """ "1 day", "2 days", "2.2 days", "485.8 days" (to 0.1 at most, like the messages)."""
    rounded = round(days, 1)
    if rounded == int(rounded):
        whole = int(rounded)
        return f"{whole:,} day" if whole == 1 else f"{whole:,} days"
    return f"{rounded:,.1f} days"


def runway_horizon(runway: Runway | None) -> int:
    """How far ahead a runway fix adds partitions: twice the table's warning, so the
    finding clears and comes back no sooner than a warning's length later."""
    return 2 * (runway.warning_days if runway is not None else RUNWAY_WARNING_DAYS)


def _runway_words(runway: Runway, days: float) -> str:
    left = "the last bounded partition is already past" if days <= 0 else f"{day_count(days)} left"
    if not runway.has_catchall:
        bound = f" ({_bound_text(runway.last_bound)})" if runway.last_bound is not None else ""
        words = f"{left} before inserts past the last bound{bound} fail: the table has no catch-all"
    else:
        words = f"{left} before rows reach the catch-all partition"
    if runway.current_id_from == "rows":
        words += " (the id reached estimated from the rows: no AUTO_INCREMENT read)"
    return words


def runway_finding(runway: Runway | None) -> Finding | None:
    """Rows in the catch-all, or a runway of the table's `warning_days` or less (one
    partition span: 14 days for a daily table, 45 for a yearly one); critical under
    RUNWAY_CRITICAL_DAYS. None where the days left are unknown (the runway's `reason`
    says why) or the table is cyclic."""
    if runway is None or runway.days_left is None or runway.cyclic:
        return None
    days = runway.days_left
    if runway.catchall_rows:
        message = (
            f"{runway.catchall_rows:,} rows already in the catch-all partition: add "
            "partitions (REORGANIZE PARTITION the catch-all) now"
        )
        return Finding("runway", "critical", _score("critical", 50), message)
    if days < RUNWAY_CRITICAL_DAYS:
        severity: Severity = "critical"
    elif days <= runway.warning_days:
        severity = "warning"
    else:
        return None
    return Finding(
        "runway",
        severity,
        _score(severity, runway.warning_days - days),
        _runway_words(runway, days),
    )


def compression_finding(compression: Compression | None) -> Finding | None:
    if compression is None or not compression.is_finding:
        return None
    excess = (compression.failure_rate or 0) * 100
    return Finding("compression", "warning", _score("warning", excess), compression.verdict)


def fragmentation_finding(fragmented: int, free_bytes: int) -> Finding | None:
    if not fragmented:
        return None
    return Finding(
        "fragmentation",
        "warning",
        _score("warning", free_bytes / (1 << 30)),
        f"{fragmented} partition(s) with over a quarter of their file free "
        f"(~{free_bytes / (1 << 20):,.0f} MiB estimated): OPTIMIZE or REBUILD PARTITION",
    )


STALE_NAMED = 3  # partitions named in a staleness finding's message


def staleness_finding(stale: Sequence[Staleness]) -> Finding | None:
    """Partitions whose statistics are far from their rows (`pressure.stale_partitions`),
    the first few named with why."""
    if not stale:
        return None
    named = "; ".join(f"{s.name}: {s.reason}" for s in stale[:STALE_NAMED])
    more = len(stale) - STALE_NAMED
    return Finding(
        "staleness",
        "warning",
        _score("warning", len(stale) / 10),
        f"{len(stale)} partition(s) with statistics far from their rows ({named}"
        + (f"; and {more} more" if more > 0 else "")
        + "): ALTER TABLE ... ANALYZE PARTITION",
    )


def retention_finding(retention: Retention | None) -> Finding | None:
    """Partitions past the table's retention policy, as soon as there are any (the alert
    waits for a grace, `PARTDASH_RETENTION_GRACE_DAYS`); critical past
    RETENTION_CRITICAL_DAYS overdue."""
    if retention is None or not retention.overdue:
        return None
    overdue = retention.overdue_days or 0.0
    severity: Severity = "critical" if overdue > RETENTION_CRITICAL_DAYS else "warning"
    count, oldest = len(retention.overdue), retention.overdue[0].name
    age = (
        f", its rows {retention.oldest_age_days:,.0f}+ days old"
        if retention.oldest_age_days is not None
        else ""
    )
    rows = f"~{retention.rows:,} rows" if retention.rows is not None else "rows unknown"
    size = f", {retention.bytes / (1 << 20):,.1f} MiB" if retention.bytes is not None else ""
    return Finding(
        "retention",
        severity,
        _score(severity, overdue),
        f"{count} partition(s) past the retention policy {retention.policy.pattern!r} "
        f"({retention.policy.words}; oldest {oldest}{age}; overdue {day_count(overdue)}): "
        f"{rows}{size} to drop",
    )


# What to do when partitions outgrow a server setting.
LIMIT_ADVICE = {
    "table_open_cache": "each partitioned table open in a session holds its partitions "
    "open: raise table_open_cache, or merge or drop partitions",
    "table_definition_cache": "raise table_definition_cache, or merge or drop partitions",
    "open_files_limit": "every open partition is an open .ibd file: raise open_files_limit "
    "(and LimitNOFILE of the service), or merge or drop partitions",
}


def limit_finding(limit: LimitPressure) -> Finding | None:
    """Partitions on the server at 80% of a limit (warning) or past it (critical)."""
    if limit.level not in ("warn", "critical") or limit.ratio is None or limit.limit is None:
        return None
    severity: Severity = "critical" if limit.level == "critical" else "warning"
    return Finding(
        "pressure",
        severity,
        _score(severity, limit.ratio - 1),
        f"{limit.partitions:,} partitions against {limit.setting}={limit.limit:,} "
        f"({limit.ratio:.0%}): {LIMIT_ADVICE.get(limit.setting, 'raise it')}",
        fixes.limit_fix(limit),
    )


def working_set_finding(working: WorkingSet) -> Finding | None:
    """The partitions written in the window no longer fit the buffer pool."""
    if not working.is_finding or working.ratio is None:
        return None
    return Finding(
        "pressure",
        "critical",
        _score("critical", (working.ratio - 1) * 10),
        f"{working.reason}; raise innodb_buffer_pool_size or write fewer partitions at once",
        fixes.working_set_fix(working),
    )


def drift_finding(group: str, compared_with: str, found: list[str], fix: Fix) -> Finding:
    """A table laid out unlike the rest of its server group."""
    return Finding(
        "drift",
        "warning",
        _score("warning", len(found)),
        f"laid out unlike {compared_with} in group {group}: " + "; ".join(found),
        fix,
    )


def missing_finding(missing: list[str], named: int = 8) -> Finding:
    """Tables the rest of this server's group holds and it does not (`missing`: one
    "schema.table (group G: on db1, db2)" each)."""
    more = len(missing) - named
    listed = "; ".join(missing[:named]) + (f"; and {more} more" if more > 0 else "")
    return Finding(
        "drift",
        "warning",
        _score("warning", len(missing)),
        f"{len(missing)} table(s) of its group missing here: {listed}",
        Fix(
            "Create each missing table as the group's other members have it: run SHOW "
            "CREATE TABLE on one of them and that statement here (for replicas: check why "
            "replication did not, first)."
        ),
    )


def with_fix(finding: Finding, table: TableFacts) -> Finding:
    """The finding of a table with what to do about it: its kind's fix builder's, or,
    for a kind without one, the fix its analysis wrote (advice that needs more than the
    table's facts: pruning's names the statements)."""
    horizon = runway_horizon(table.runway)
    fix = fixes.table_fix(finding.kind, table, horizon)
    return replace(finding, fix=finding.fix if fix is None else fix)


def table_score(findings: list[Finding]) -> float:
    return sum(f.score for f in findings)
