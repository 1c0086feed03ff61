"""The working set's forecast (`partdash.health.forecast`): a line through its sizes and
where it crosses the limit, with the slope's interval; no date where it is not growing,
has too little history, or has no pool to cross."""

from datetime import UTC, datetime, timedelta

from partdash.health.forecast import forecast

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
WEEK = timedelta(days=7)
MIB = 2**20


def daily(sizes: list[float]) -> list[tuple[datetime, float]]:
    """One point a day, the last one now."""
    return [(NOW - timedelta(days=len(sizes) - 1 - i), size) for i, size in enumerate(sizes)]


def test_a_steady_growth_crosses_where_the_line_does():
    # 100 MiB growing 10 MiB a day: 1,000 MiB is 90 days after the last point.
    ahead = forecast(daily([40 * MIB + 10 * MIB * d for d in range(7)]), 1000 * MIB, NOW, WEEK)
    assert ahead.growth_bytes_per_day == 10 * MIB
    assert ahead.days_left == 90 and ahead.forecast_date == NOW + timedelta(days=90)
    # Exact points: the interval is the date itself.
    assert ahead.earliest == ahead.latest == ahead.forecast_date


def test_noise_widens_the_interval_around_the_date():
    sizes = [100, 112, 118, 133, 139, 152, 160]
    ahead = forecast(daily([s * MIB for s in sizes]), 400 * MIB, NOW, WEEK)
    assert ahead.earliest < ahead.forecast_date < ahead.latest
    assert 20 < ahead.days_left < 30


def test_no_date_without_growth_history_or_pool():
    flat = forecast(daily([100 * MIB] * 7), 400 * MIB, NOW, WEEK)
    assert flat.forecast_date is None and flat.reason == "not growing"
    shrinking = forecast(daily([200 * MIB - d * MIB for d in range(7)]), 400 * MIB, NOW, WEEK)
    assert shrinking.forecast_date is None and shrinking.growth_bytes_per_day < 0
    few = forecast(daily([1, 2]), 400, NOW, WEEK)
    assert few.forecast_date is None and "fewer than 3" in few.reason
    short = forecast(
        [(NOW - timedelta(hours=h), 100 - h) for h in range(5, -1, -1)], 400, NOW, WEEK
    )
    assert short.forecast_date is None and "hours of working-set history" in short.reason
    unknown = forecast(daily([1, 2, 3, 4]), None, NOW, WEEK)
    assert unknown.forecast_date is None and unknown.reason == "buffer pool size unknown"


def test_past_the_limit_is_now():
    ahead = forecast(daily([300 * MIB, 350 * MIB, 420 * MIB, 450 * MIB]), 400 * MIB, NOW, WEEK)
    assert ahead.forecast_date == NOW and ahead.days_left == 0
