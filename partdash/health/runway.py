"""Runway of a RANGE-partitioned table: how long until rows land in the MAXVALUE
catch-all (or, without one, until inserts fail with "Table has no partition for value"),
and how old the oldest partition is, for retention.

Time ranges: days from today to the last finite bound. Id ranges (a bare integer
column): the ids left before the last bound over the id growth per day, measured by the
caller from AUTOINC (or row) growth. Rows already in the catch-all mean the runway is
gone: 0 days.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from partdash.health.bounds import (
    Bound,
    BoundKind,
    bound_day,
    bound_kind,
    bound_to_date,
    is_catchall,
    range_bound,
    utc_today,
)
from partdash.health.estimates import oldest
from partdash.health.partitions import RANGE_METHODS, PartitionState, merge_subpartitions

__all__ = ["Runway", "bound_to_date", "growth_per_day", "is_catchall", "table_runway"]


@dataclass(frozen=True, slots=True)
class Runway:
    """`days_left`: None when unknown, 0 once the catch-all holds rows or the last bound is
    past; whole days for time ranges, days to 0.1 for id ranges. `catchall_rows`: None
    when there is no MAXVALUE partition (or its rows are unknown).
    `empty_future_partitions`: bounded partitions not reached yet that hold no rows.
    `fill_rate_per_day`: ids per day for id ranges, rows per day for time ranges (as
    given). `oldest_partition_age_days`: days since the exclusive upper bound of the oldest
    partition holding rows, so every row in it is at least that old (time ranges only)."""

    days_left: float | None
    catchall_rows: int | None
    empty_future_partitions: int
    last_bound: Bound | None
    fill_rate_per_day: float | None
    oldest_partition_age_days: int | None
    bound_kind: BoundKind | None
    estimated: bool = True
    as_of: datetime | None = None


def growth_per_day(
    old: int | None, old_at: datetime | None, new: int | None, new_at: datetime | None
) -> float | None:
    """Growth of an id (AUTOINC) or a row count per day between two readings; None when
    unknown, when no time passed, or when it went down (a rebuild or a purge, not growth)."""
    if old is None or new is None or old_at is None or new_at is None or new < old:
        return None
    days = (new_at - old_at).total_seconds() / 86400
    return (new - old) / days if days > 0 else None


def _catchall_rows(partitions: Sequence[PartitionState]) -> int | None:
    catchall = [p for p in partitions if is_catchall(p.description)]
    if not catchall or any(p.rows is None for p in catchall):
        return None
    return sum(p.rows or 0 for p in catchall)


def _date_days_left(last: Bound | None, today: date) -> int | None:
    if not isinstance(last, date):
        return None
    return max(0, (bound_day(last) - today).days)


def _id_days_left(last: Bound | None, current_id: int | None, rate: float | None):
    if isinstance(last, date) or last is None or current_id is None:
        return None
    if current_id >= last:
        return 0.0
    return round((last - current_id) / rate, 1) if rate else None


def _is_future(lower: Bound | None, today: date, current_id: int | None) -> bool | None:
    """Whether a partition's lower bound has not been reached; None when unknowable."""
    if isinstance(lower, date):
        return bound_day(lower) > today
    if lower is None or current_id is None:
        return None
    return lower > current_id


def _empty_future(
    bounded: Sequence[PartitionState], bounds: Sequence[Bound | None], today, current_id
) -> int:
    """Empty partitions beyond the present. Where the present is unknowable (an id range
    without a current id), the empty partitions after the last non-empty one."""
    count = 0
    for i, partition in enumerate(bounded):
        if partition.rows != 0 or i == 0:
            continue
        future = _is_future(bounds[i - 1], today, current_id)
        if future is None:
            future = all(p.rows == 0 for p in bounded[i:])
        count += bool(future)
    return count


def _oldest_age(
    bounded: Sequence[PartitionState], bounds: Sequence[Bound | None], today: date
) -> int | None:
    """Days since the upper bound of the oldest partition holding rows. Empty ones are
    skipped: a guard partition kept empty for invalid dates (VALUES LESS THAN (0)) says
    nothing about retention."""
    for partition, bound in zip(bounded, bounds, strict=True):
        if isinstance(bound, date) and (partition.rows or 0) > 0:
            return max(0, (today - bound_day(bound)).days)
    return None


def _current_id(partitions: Iterable[PartitionState]) -> int | None:
    autoincs = [p.autoinc for p in partitions if p.autoinc is not None]
    return max(autoincs) if autoincs else None


def table_runway(
    method: str,
    expression: str | None,
    partitions: Iterable[PartitionState],
    now: datetime,
    fill_rate_per_day: float | None = None,
    current_id: int | None = None,
) -> Runway | None:
    """The runway of a table; None unless it is RANGE-partitioned. `now` decides which
    bounds are past (in UTC). For id ranges `fill_rate_per_day` is the id growth per day
    and `current_id` the id reached (default: the highest AUTOINC among the partitions,
    assuming the partitioning column is the auto-increment one)."""
    if (method or "").upper().strip() not in RANGE_METHODS:
        return None
    merged = merge_subpartitions(partitions)
    today = utc_today(now)
    bounded = [p for p in merged if not is_catchall(p.description)]
    bounds = [range_bound(expression, p.description) for p in bounded]
    last = bounds[-1] if bounds else None
    current_id = current_id if current_id is not None else _current_id(merged)
    catchall_rows = _catchall_rows(merged)
    days_left = _date_days_left(last, today)
    if days_left is None:
        days_left = _id_days_left(last, current_id, fill_rate_per_day)
    if catchall_rows:
        days_left = 0
    return Runway(
        days_left=days_left,
        catchall_rows=catchall_rows,
        empty_future_partitions=_empty_future(bounded, bounds, today, current_id),
        last_bound=last,
        fill_rate_per_day=fill_rate_per_day,
        oldest_partition_age_days=_oldest_age(bounded, bounds, today),
        bound_kind=bound_kind(last),
        as_of=oldest(p.stats_updated_at for p in merged),
    )
