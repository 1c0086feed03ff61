"""The JSON partdash stores and reads back by key, one `TypedDict` per shape: a table's
health (`PartitionedTable.health`), its findings and their fixes, what its write
hotspots were judged on (`PartitionedTable.activity`) and a server's pressure
(`ServerSnapshot.pressure`). `partdash.metrics.analysis` writes them from this package's
dataclasses (times as ISO 8601 text, floats to 6 places); the API, the pages, the alerts
and /metrics read them.

A fix's shape and a compression's (`FixShape`, `CompressionShape`) are declared beside
their values, in `fixes` and `compression`, whose readers return them; they are named
here like the others. Declared here, they made this module and those two import each
other.

Each shape is what the current analysis writes. A stored row can hold less: `{}` before
a table's first analysis or a server's first poll, and none of the keys added since it
was last analysed (at most a day ago). Readers use `.get` for those.
"""

from typing import Any, Literal, NotRequired, TypedDict, cast

from partdash.health.bounds import BoundKind
from partdash.health.compression import CompressionShape
from partdash.health.findings import Kind as FindingKind
from partdash.health.findings import Severity
from partdash.health.fixes import FixShape
from partdash.health.hotspots import Kind as HotKind
from partdash.health.hotspots import Source
from partdash.health.pressure import Level
from partdash.health.skew import Measure


class FindingShape(TypedDict):
    """One finding (`findings.Finding`): a table's, or a server's pressure."""

    kind: FindingKind
    severity: Severity
    score: float
    message: str
    fix: FixShape | None


class SkewShape(TypedDict):
    """`skew.Skew`'s figures and `skew.SkewFinding`'s verdict; `judged_on` counts the
    partitions judged."""

    max_mean_ratio: float
    cv: float
    gini: float
    is_finding: bool
    judged: bool
    reason: str
    threshold: float | None
    largest: str | None
    judged_on: int
    measure: Measure
    estimated: bool
    as_of: str | None


class HotPartitionShape(TypedDict):
    """Why a partition is hot (`hotspots.HotPartition`)."""

    partition: str
    kind: HotKind
    share: float
    slots_hot: int
    slots_active: int


class StatisticsShape(TypedDict):
    """How old a table's statistics are (`estimates.StatisticsAge`)."""

    as_of: str
    partition: str
    newest_at: str
    partitions: int


class RunwayShape(TypedDict):
    """`runway.Runway`; `last_bound` is ISO 8601 text for dates, an int for ids."""

    days_left: float | None
    catchall_rows: int | None
    empty_future_partitions: int
    last_bound: str | int | None
    fill_rate_per_day: float | None
    oldest_partition_age_days: int | None
    bound_kind: BoundKind | None
    estimated: bool
    as_of: str | None
    reason: str | None
    has_catchall: bool
    current_id: int | None
    current_id_from: str | None
    cyclic: str | None
    span_days: NotRequired[int | None]
    warning_days: NotRequired[int]


class RetentionShape(TypedDict):
    """The retention policy matching a table, applied (`retention.Retention`): the
    partitions past it (`partitions`: the first RETENTION_NAMES of them, oldest first),
    their rows and bytes (data and index), the oldest one, its age in days (time ranges)
    and how many days it is overdue (`overdue_since`: ISO 8601); `reason` where the policy
    does not apply."""

    policy_id: int
    pattern: str
    keep_days: int | None
    keep_partitions: int | None
    overdue_partitions: int
    partitions: list[str]
    rows: int | None
    bytes: int | None
    oldest_partition: str | None
    oldest_age_days: float | None
    overdue_days: float | None
    overdue_since: str | None
    reason: str | None


class WrittenShape(TypedDict):
    """The table's partitions written in the window (`pressure.working_set`)."""

    partitions: int
    bytes: int


class DriftShape(TypedDict):
    """How the table differs from its server group's layout (`partdash.metrics.drift`):
    which group, whose copy it was compared with (server and table ids, for the side by
    side view), the differences in words; `only_here`: the rest of the group lacks it."""

    group: str
    group_id: int
    compared_with: str
    server_id: int | None
    table_id: int | None
    differences: list[str]
    only_here: bool
    evaluated_at: str


class TableHealth(TypedDict):
    """`PartitionedTable.health`: every health figure of one table, its findings (worst
    first) and their score; `window_ends` is when the window's sums change with nothing
    written (the next analysis is due then)."""

    skew: SkewShape | None
    skew_bytes: SkewShape | None
    hotspots: list[str]
    hotspot_detail: list[HotPartitionShape]
    active: bool
    activity_source: Source | None
    compression: CompressionShape | None
    statistics: StatisticsShape | None
    runway: RunwayShape | None
    findings: list[FindingShape]
    score: float
    written: WrittenShape
    fragmented: int
    stale: int
    window_ends: int | None
    # Written apart, by the server group's comparison after the analysis (kept across
    # analyses until the comparison says otherwise): absent where the table is in line.
    drift: NotRequired[DriftShape]
    # The retention policy matching the table (absent: none matches).
    retention: NotRequired[RetentionShape]


class ActivitySignal(TypedDict):
    """`PartitionedTable.activity`: what a table's write hotspots were judged on, its
    typical lag, and why rows changed were not (`stands_in`); `reads` is `disk` where
    disk reads are known."""

    source: Source
    window_seconds: float
    estimated: bool
    lag_seconds: int | None
    stands_in: str | None
    reads: Literal["disk"] | None


class LimitShape(TypedDict):
    """Partitions against one server setting (`pressure.LimitPressure`)."""

    setting: str
    partitions: int
    limit: int | None
    ratio: float | None
    level: Level


class WorkingSetShape(TypedDict):
    """The partitions written in the window across the server, against the buffer pool."""

    bytes: int
    buffer_pool_bytes: int | None
    ratio: float | None
    level: Level
    partitions: int
    is_finding: bool
    reason: str
    estimated: bool
    # The trend (`health.forecast`, fitted by `metrics.analysis.working_set_forecast`):
    # bytes per day; when it crosses the limit (ISO, UTC; None: not growing, or too
    # little history) and how sure (the slope's 95% interval's dates); why not.
    growth_bytes_per_day: NotRequired[float | None]
    forecast_date: NotRequired[str | None]
    forecast_days_left: NotRequired[float | None]
    forecast_earliest: NotRequired[str | None]
    forecast_latest: NotRequired[str | None]
    forecast_limit_bytes: NotRequired[float | None]
    forecast_points: NotRequired[int]
    forecast_reason: NotRequired[str]
    forecast_at: NotRequired[str | None]


class ServerPressure(TypedDict):
    """`ServerSnapshot.pressure`: the server's limits, written working set, fragmented
    and stale partitions (summed over its tables' health) and its own findings."""

    limits: list[LimitShape]
    working_set: WorkingSetShape
    fragmented_partitions: int
    stale_partitions: int
    findings: list[FindingShape]
    # The server groups' comparison (`partdash.metrics.drift`): its fingerprint, this
    # member's tables with a drift finding, and the group's tables it lacks.
    drift: NotRequired[dict[str, Any]]


# -- reading them back -----------------------------------------------------------------


def stored_health(stored: Any) -> TableHealth:
    """`PartitionedTable.health` as read from the store (see the module's docstring:
    `{}` before a table's first analysis; read keys added since with `.get`)."""
    return cast(TableHealth, stored or {})


def stored_pressure(stored: Any) -> ServerPressure:
    """`ServerSnapshot.pressure` as read from the store (`{}` before the first poll's
    analysis; read keys added since with `.get`)."""
    return cast(ServerPressure, stored or {})
