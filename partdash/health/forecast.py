"""When the written working set outgrows the buffer pool: a straight line through the
server's working-set sizes over the last days, and where it crosses the pool (or a
chosen fraction of it), with the growth it rests on and how sure that is.

Once the partitions being written no longer fit in innodb_buffer_pool_size, every insert
reads pages from disk first: the seed article's inserts fell from 2,100 rows/s to 150.
The working set a poll measures (`pressure.working_set`) says where a server stands
today; its trend says when it gets there, days ahead.

Pure: points in, a forecast out.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

DAY = 86400.0
MIN_POINTS = 3
MIN_SPAN = 0.5  # of the window's length: fewer days of points than that are no trend
MAX_DAYS = 3650  # a crossing further out than ten years is no date to show


@dataclass(frozen=True, kw_only=True)
class Forecast:
    growth_bytes_per_day: float | None = None  # the fitted slope; None: too few points
    forecast_date: datetime | None = None  # when the line crosses the limit; None: not growing
    days_left: float | None = None
    # The dates the slope's 95% interval gives: earliest, latest (None: open-ended).
    earliest: datetime | None = None
    latest: datetime | None = None
    limit_bytes: float | None = None
    points: int
    reason: str


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float, float] | None:
    """Least squares through (seconds, bytes): slope (bytes per second), intercept at
    the first point's time, and the slope's standard error; None for fewer than
    MIN_POINTS distinct times."""
    if len(points) < MIN_POINTS:
        return None
    t0 = points[0][0]
    xs = [t - t0 for t, _ in points]
    ys = [float(v) for _, v in points]
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx <= 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = mean_y - slope * mean_x
    residual = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    error = math.sqrt(residual / (n - 2) / sxx) if n > 2 else math.inf
    return slope, intercept, error


def forecast(
    points: Sequence[tuple[datetime, int | float]],
    limit_bytes: float | None,
    now: datetime,
    window: timedelta,
) -> Forecast:
    """Where the working set's line through `points` (taken_at, bytes; oldest first)
    crosses `limit_bytes`, counted from `now`."""
    if not limit_bytes:
        return Forecast(points=len(points), reason="buffer pool size unknown")
    ordered = sorted(points)
    if ordered and ordered[-1][1] >= limit_bytes:  # (no trend needed: it is past)
        return _past(None, now, limit_bytes, len(ordered))
    if len(ordered) < MIN_POINTS:
        return _none(limit_bytes, len(ordered), f"fewer than {MIN_POINTS} polls with a working set")
    span = (ordered[-1][0] - ordered[0][0]).total_seconds()
    if span < window.total_seconds() * MIN_SPAN:
        hours = window.total_seconds() * MIN_SPAN / 3600
        return _none(limit_bytes, len(ordered), f"less than {hours:g} hours of working-set history")
    start = ordered[0][0]
    fitted = fit([((t - start).total_seconds(), v) for t, v in ordered])
    if fitted is None:
        return _none(limit_bytes, len(ordered), "no trend in the working set")
    slope, intercept, error = fitted
    growth = slope * DAY
    elapsed = (now - start).total_seconds()
    level = intercept + slope * elapsed  # the line, now
    if level >= limit_bytes:
        return _past(growth, now, limit_bytes, len(ordered))
    if slope <= 0:
        return _none(limit_bytes, len(ordered), "not growing", growth)
    seconds = (limit_bytes - level) / slope
    if seconds / DAY > MAX_DAYS:
        return _none(limit_bytes, len(ordered), "not within ten years", growth)
    low_slope, high_slope = slope - 2 * error, slope + 2 * error
    earliest = now + timedelta(seconds=(limit_bytes - level) / high_slope)
    latest = (
        now + timedelta(seconds=(limit_bytes - level) / low_slope)
        if low_slope > 0 and (limit_bytes - level) / low_slope / DAY <= MAX_DAYS
        else None
    )
    when = now + timedelta(seconds=seconds)
    return Forecast(
        growth_bytes_per_day=growth,
        forecast_date=when,
        days_left=seconds / DAY,
        earliest=earliest,
        latest=latest,
        limit_bytes=limit_bytes,
        points=len(ordered),
        reason="growing",
    )


def _none(limit: float | None, count: int, reason: str, growth: float | None = None) -> Forecast:
    """No date: `reason` says why (`growth` the fitted slope where there is one)."""
    return Forecast(growth_bytes_per_day=growth, limit_bytes=limit, points=count, reason=reason)


def _past(growth: float | None, now: datetime, limit: float, count: int) -> Forecast:
    """The working set is at or past the limit now: every date is now."""
    no_date = _none(limit, count, "past the limit", growth)
    return replace(no_date, forecast_date=now, days_left=0.0, earliest=now, latest=now)
