"""Runway of a RANGE-partitioned table: how long until rows land in the MAXVALUE
catch-all (or, without one, until inserts fail with "Table has no partition for value"),
and how old the oldest partition is, for retention.

Time ranges: days from today to the last finite bound (integer bounds that spell the
calendar, a `year` column or YYYYMM, are time ranges: see `bounds.read_bounds`). Id
ranges (a bare integer column): the ids left before the last bound over the id growth
per day, measured by the caller from row growth. The id reached is the highest
AUTO_INCREMENT where partdash reads it, else estimated from the rows: the lower bound of
the last partition holding rows plus its rows (ids dense from there). Rows already in
the catch-all mean the runway is gone: 0 days.

Where `days_left` is None the runway says why (`reason`). Cyclic expressions (HOUR(),
DAYOFMONTH(), MOD...) have no runway at all: their values come round again, so a
catch-all holding rows is their design, not a table running out.
"""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from partdash.health.bounds import (
    Bound,
    BoundKind,
    bound_day,
    bound_kind,
    bound_to_date,
    cyclic_function,
    is_catchall,
    parse_expression,
    read_bounds,
    utc_today,
)
from partdash.health.estimates import oldest
from partdash.health.partitions import RANGE_METHODS, PartitionState, merge_subpartitions

__all__ = [
    "Runway",
    "bound_to_date",
    "growth_per_day",
    "is_catchall",
    "table_runway",
    "warning_days",
]

# A runway warning comes at least one partition span ahead, so there is time to add the
# next partition: 14 days for daily and weekly tables, the span for monthly ones (up to
# about six weeks), and WARNING_MOST_DAYS for quarterly and yearly tables (a yearly table
# without a catch-all warns 45 days before inserts fail, not 14).
WARNING_LEAST_DAYS = 14
WARNING_MOST_DAYS = 45


@dataclass(frozen=True, slots=True)
class Runway:
    """`days_left`: None when unknown, 0 once the catch-all holds rows or the last bound is
    past; calendar days (UTC) for time ranges, days to 0.1 for id ranges, rounded down
    (2.96 is 2.9: never shown as 3 beside a critical finding).
    `catchall_rows`: None when there is no MAXVALUE partition (or its rows are unknown).
    `empty_future_partitions`: bounded partitions not reached yet that hold no rows.
    `fill_rate_per_day`: ids per day for id ranges, rows per day for time ranges (as
    given). `oldest_partition_age_days`: days since the exclusive upper bound of the oldest
    partition holding rows, so every row in it is at least that old (time ranges only).
    `reason`: why `days_left` is None (None when it is known). `span_days`: the last
    bounded partition's span (time ranges with two bounds or more, else None), and
    `warning_days` the days left under which the runway is a warning (`warning_days`).
    `has_catchall`: whether the table has a MAXVALUE partition (without one, inserts past
    the last bound fail).
    `current_id`: the id reached (id ranges), from `current_id_from` ("auto_increment"
    or "rows": estimated dense). `cyclic`: the function that makes the expression
    cyclic (no runway then)."""

    days_left: float | None
    catchall_rows: int | None
    empty_future_partitions: int
    last_bound: Bound | None
    fill_rate_per_day: float | None
    oldest_partition_age_days: int | None
    bound_kind: BoundKind | None
    estimated: bool = True
    as_of: datetime | None = None
    reason: str | None = None
    has_catchall: bool = False
    current_id: int | None = None
    current_id_from: str | None = None
    cyclic: str | None = None
    span_days: int | None = None
    warning_days: int = WARNING_LEAST_DAYS


def warning_days(span_days: int | None) -> int:
    """Days left under which a runway is a warning: the partition span, at least
    WARNING_LEAST_DAYS and at most WARNING_MOST_DAYS (a span unknown: the least)."""
    if span_days is None:
        return WARNING_LEAST_DAYS
    return min(max(span_days, WARNING_LEAST_DAYS), WARNING_MOST_DAYS)


def span_of(bounds: Sequence[Bound | None]) -> int | None:
    """Days between the last two date bounds; None for id ranges or a single bound."""
    if len(bounds) < 2:
        return None
    before, last = bounds[-2], bounds[-1]
    if not isinstance(before, date) or not isinstance(last, date):
        return None
    return (bound_day(last) - bound_day(before)).days or None


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
    """Calendar days from today (UTC) to the bound's day: stable through a UTC day, which
    matters, a quiet table being analysed again once a day."""
    if not isinstance(last, date):
        return None
    return max(0, (bound_day(last) - today).days)


def _id_days_left(last: Bound | None, current_id: int | None, rate: float | None):
    if isinstance(last, date) or last is None or current_id is None:
        return None
    if current_id >= last:
        return 0.0
    # Rounded down to 0.1: 2.96 days is 2.9 left, never "3" beside a critical finding.
    return math.floor((last - current_id) / rate * 10) / 10 if rate else None


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


def estimated_id(bounded: Sequence[PartitionState], bounds: Sequence[Bound | None]) -> int | None:
    """The id reached, from the rows: the lower bound of the last partition holding rows
    plus its rows (ids dense from there, at most its upper bound); None when unknown."""
    for i in reversed(range(len(bounded))):
        rows, upper = bounded[i].rows, bounds[i]
        if rows is None or not isinstance(upper, int):
            return None
        if rows > 0:
            lower = bounds[i - 1] if i > 0 else 0
            if not isinstance(lower, int):
                return None
            return min(upper - 1, lower + rows)
    return None


def _unknown_reason(
    expression: str | None,
    bounds: Sequence[Bound | None],
    last: Bound | None,
    current_id: int | None,
    rate: float | None,
) -> str:
    """Why the days left cannot be known."""
    if parse_expression(expression) is None:
        return (
            f"the partitioning expression {expression or '(none)'} is not a date function "
            "(TO_DAYS, TO_SECONDS, UNIX_TIMESTAMP, YEAR) or a bare column: partdash cannot "
            "tell which bound the present has reached"
        )
    if not bounds:
        return "only a MAXVALUE partition: no bound to run out"
    if last is None:
        return "the last bound is not a date or an integer partdash can read"
    if current_id is None:
        return (
            "id range: the id reached is unknown (no AUTO_INCREMENT read and no row counts "
            "to estimate it from)"
        )
    if not rate:
        return (
            "id range: no growth measured yet (rows added in the last hour; it takes two "
            "polls, the second after new rows reached the statistics)"
        )
    return "unknown"


def _cyclic_runway(cyclic: str, catchall_rows: int | None, has_catchall: bool, as_of):
    return Runway(
        days_left=None,
        catchall_rows=catchall_rows,
        empty_future_partitions=0,
        last_bound=None,
        fill_rate_per_day=None,
        oldest_partition_age_days=None,
        bound_kind=None,
        as_of=as_of,
        reason=(
            f"cyclic partitioning ({cyclic}): its values come round again, so the "
            "partitions hold a fixed set of values and never run out"
            + ("; rows in the catch-all are by design" if has_catchall else "")
        ),
        has_catchall=has_catchall,
        cyclic=cyclic,
    )


def _reached_id(merged, bounded, bounds, current_id) -> tuple[int | None, str | None]:
    if current_id is not None:
        return current_id, "given"
    autoinc = _current_id(merged)
    if autoinc is not None:
        return autoinc, "auto_increment"
    estimate = estimated_id(bounded, bounds)
    return estimate, None if estimate is None else "rows"


def table_runway(
    method: str,
    expression: str | None,
    partitions: Iterable[PartitionState],
    now: datetime,
    *,
    fill_rate_per_day: float | None = None,
    current_id: int | None = None,
) -> Runway | None:
    """The runway of a table; None unless it is RANGE-partitioned. `now` decides which
    bounds are past (in UTC). For id ranges `fill_rate_per_day` is the id growth per day
    and `current_id` the id reached (default: the highest AUTOINC among the partitions,
    assuming the partitioning column is the auto-increment one, else estimated from the
    rows)."""
    if (method or "").upper().strip() not in RANGE_METHODS:
        return None
    merged = merge_subpartitions(partitions)
    today = utc_today(now)
    bounded = [p for p in merged if not is_catchall(p.description)]
    has_catchall = len(bounded) < len(merged)
    catchall_rows = _catchall_rows(merged)
    as_of = oldest(p.stats_updated_at for p in merged)
    cyclic = cyclic_function(expression)
    if cyclic:
        return _cyclic_runway(cyclic, catchall_rows, has_catchall, as_of)
    bounds, _calendar = read_bounds(
        expression, [p.description for p in bounded], [p.name for p in bounded]
    )
    last = bounds[-1] if bounds else None
    reached, reached_from = (None, None)
    if last is not None and not isinstance(last, date):
        reached, reached_from = _reached_id(merged, bounded, bounds, current_id)
    days_left = _date_days_left(last, today)
    if days_left is None:
        days_left = _id_days_left(last, reached, fill_rate_per_day)
    if catchall_rows:
        days_left = 0
    reason = None
    if days_left is None:
        reason = _unknown_reason(expression, bounds, last, reached, fill_rate_per_day)
    return Runway(
        days_left=days_left,
        catchall_rows=catchall_rows,
        empty_future_partitions=_empty_future(bounded, bounds, today, reached),
        last_bound=last,
        fill_rate_per_day=fill_rate_per_day,
        oldest_partition_age_days=_oldest_age(bounded, bounds, today),
        bound_kind=bound_kind(last),
        as_of=as_of,
        reason=reason,
        has_catchall=has_catchall,
        current_id=reached,
        current_id_from=reached_from,
        span_days=span_of(bounds),
        warning_days=warning_days(span_of(bounds)),
    )
