"""Retention policies: which partitions of a RANGE table are past the policy that
matches it, so a DBA sees what the drop job should have dropped (partdash drops nothing).

A policy names tables by a `schema.table` glob (`shop.events_*`, `*.audit`): the part
before the dot matched against the schema, the part after against the table, each
case-sensitively where the server's lower_case_table_names is 0 (`matches`), and keeps
either days (`keep_days`, time ranges) or partitions (`keep_partitions`, any RANGE
table). Where several match a table the most specific
wins: one scoped to the table's server before a fleet-wide one, then the pattern with
the fewest wildcards, then the longest literal text, then the lowest id.

- keep_days: a partition is past the policy once its whole range is older than
  `keep_days` days: its upper bound (exclusive) at or before now - keep_days. It is
  overdue since its bound + keep_days.
- keep_partitions: the newest N bounded partitions are kept, counted back from the
  newest one holding rows (empty partitions made ahead for future data are not kept
  ones); the partitions before them are past the policy. How long that has been so is
  not in the bounds of an id range: it counts from the first analysis that saw it.

Never past a policy: the catch-all (MAXVALUE), the newest bounded partition (the table
keeps its layout and next bound), and empty partitions leading the table (a guard kept
for invalid or NULL dates, which RANGE puts in the first partition). LIST, HASH and KEY
tables hold no order to drop by: a policy matching one says so in its reason.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase

from partdash.health.bounds import cyclic_function, is_catchall, read_bounds
from partdash.health.partitions import RANGE_METHODS, PartitionState, merge_subpartitions

DAY_SECONDS = 86400
_WILDCARDS = re.compile(r"[*?]|\[[^\]]*\]")


@dataclass(frozen=True, slots=True)
class Policy:
    """A retention policy as the analysis sees it: exactly one of `keep_days` and
    `keep_partitions` is set; `server_scoped` where it names one server."""

    id: int
    pattern: str
    keep_days: int | None = None
    keep_partitions: int | None = None
    server_scoped: bool = False

    @property
    def words(self) -> str:
        """`keep 90 days` or `keep 12 partitions`."""
        if self.keep_days is not None:
            return f"keep {self.keep_days} days"
        return f"keep {self.keep_partitions} partitions"


def matches(pattern: str, schema: str, table: str, case_sensitive: bool = True) -> bool:
    """Whether the table matches the pattern: its part before the dot against the schema,
    its part after against the table, each alone (a pattern without a dot names a table
    in any schema). Matching the dotted `schema.table` whole let `s.*` match schema
    `s.keep`, and a `*` in the table part reach across the dot. Case-sensitively where
    the server compares names so (lower_case_table_names=0: `Events` and `events` are
    two tables), else on lower-cased names."""
    schema_glob, dot, table_glob = pattern.strip().partition(".")
    if not dot:
        schema_glob, table_glob = "*", schema_glob
    if not case_sensitive:
        schema_glob, table_glob = schema_glob.lower(), table_glob.lower()
        schema, table = schema.lower(), table.lower()
    return fnmatchcase(schema, schema_glob) and fnmatchcase(table, table_glob)


def names_case_sensitive(lower_case_table_names: str | None) -> bool:
    """Whether the server tells schema and table names apart by case: its
    lower_case_table_names is 0 (1 stores them lower-cased, 2 compares them so). Unknown
    counts as case-sensitive: a policy then matches fewer tables, never a second one."""
    return str(lower_case_table_names or "0").strip() == "0"


def specificity(policy: Policy) -> tuple[bool, int, int, int]:
    """Larger is more specific (see the module's docstring)."""
    wildcards = len(_WILDCARDS.findall(policy.pattern))
    literal = len(_WILDCARDS.sub("", policy.pattern))
    return policy.server_scoped, -wildcards, literal, -policy.id


def matching_policy(
    policies: Iterable[Policy], schema: str, table: str, case_sensitive: bool = True
) -> Policy | None:
    """The most specific policy matching the table, or None."""
    found = [p for p in policies if matches(p.pattern, schema, table, case_sensitive)]
    return max(found, key=specificity, default=None)


@dataclass(frozen=True, slots=True)
class Retention:
    """A policy applied to one table. `overdue`: the partitions past it, oldest first
    (subpartitions summed); `rows` and `bytes` (data and index) theirs, None where
    unknown. `oldest_age_days`: days since the oldest one's upper bound (time ranges);
    `overdue_since` when it went past the policy and `overdue_days` how long ago that
    is. `reason`: why the policy does not apply, or None."""

    policy: Policy
    overdue: tuple[PartitionState, ...] = ()
    rows: int | None = None
    bytes: int | None = None
    oldest_age_days: float | None = None
    overdue_since: datetime | None = None
    overdue_days: float | None = None
    reason: str | None = None


def _known_sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _moment(bound: date, now: datetime) -> datetime:
    """A bound as a time comparable with `now`: a date at midnight UTC; a datetime
    bound (naive: UTC for UNIX_TIMESTAMP, the server's clock otherwise) read as UTC."""
    moment = bound if isinstance(bound, datetime) else datetime(bound.year, bound.month, bound.day)
    return moment.replace(tzinfo=UTC) if now.tzinfo else moment


def _days(span: timedelta) -> float:
    return round(span.total_seconds() / DAY_SECONDS, 3)


def _droppable(bounded: Sequence[PartitionState], past: int) -> list[PartitionState]:
    """The first `past` bounded partitions less the empty ones leading the table, never
    the newest bounded partition."""
    chosen = list(bounded[: min(past, len(bounded) - 1)])
    while chosen and chosen[0].rows == 0:
        chosen.pop(0)
    return chosen


def _by_days(
    policy: Policy, expression: str | None, bounded: Sequence[PartitionState], now: datetime
) -> Retention:
    bounds, _calendar = read_bounds(
        expression, [p.description for p in bounded], [p.name for p in bounded]
    )
    if not any(isinstance(b, date) for b in bounds):
        return Retention(
            policy,
            reason="keep_days needs bounds that are dates (a time range); this table's are "
            "ids or unreadable: use keep_partitions",
        )
    cutoff = now - timedelta(days=policy.keep_days or 0)
    past = 0
    for bound in bounds:
        if not isinstance(bound, date) or _moment(bound, now) > cutoff:
            break
        past += 1
    overdue = _droppable(bounded, past)
    if not overdue:
        return Retention(policy)
    bound = bounds[bounded.index(overdue[0])]
    assert isinstance(bound, date)  # every bound counted past is a date
    since = _moment(bound, now) + timedelta(days=policy.keep_days or 0)
    return _retention(policy, overdue, now, since, _days(now - _moment(bound, now)))


def _newest_with_rows(bounded: Sequence[PartitionState]) -> int | None:
    """The index of the newest bounded partition that holds (or may hold) rows."""
    for i in reversed(range(len(bounded))):
        if bounded[i].rows != 0:
            return i
    return None


def _by_count(
    policy: Policy, bounded: Sequence[PartitionState], now: datetime, seen_at: datetime | None
) -> Retention:
    newest = _newest_with_rows(bounded)
    keep = policy.keep_partitions or 1
    if newest is None or newest + 1 <= keep:
        return Retention(policy)
    overdue = _droppable(bounded, newest + 1 - keep)
    if not overdue:
        return Retention(policy)
    return _retention(policy, overdue, now, seen_at or now, None)


def _retention(
    policy: Policy,
    overdue: Sequence[PartitionState],
    now: datetime,
    since: datetime,
    age: float | None,
) -> Retention:
    return Retention(
        policy,
        tuple(overdue),
        rows=_known_sum(p.rows for p in overdue),
        bytes=_known_sum(
            None if p.data_bytes is None else p.data_bytes + (p.index_bytes or 0) for p in overdue
        ),
        oldest_age_days=age,
        overdue_since=since,
        overdue_days=max(_days(now - since), 0.0),
    )


def table_retention(
    policy: Policy | None,
    method: str,
    expression: str | None,
    partitions: Iterable[PartitionState],
    now: datetime,
    *,
    overdue_seen_at: datetime | None = None,
) -> Retention | None:
    """The policy applied to a table; None without a policy. `overdue_seen_at`: when an
    earlier analysis first saw partitions past a keep_partitions policy (still so)."""
    if policy is None:
        return None
    if (method or "").upper().strip() not in RANGE_METHODS:
        return Retention(
            policy,
            reason=f"the table is {method or 'not'} partitioned: a retention policy applies "
            "to RANGE tables only",
        )
    cyclic = cyclic_function(expression)
    if cyclic:
        return Retention(
            policy, reason=f"cyclic partitioning ({cyclic}): its partitions hold no age order"
        )
    bounded = [p for p in merge_subpartitions(partitions) if not is_catchall(p.description)]
    if policy.keep_days is not None:
        return _by_days(policy, expression, bounded, now)
    return _by_count(policy, bounded, now, overdue_seen_at)
