"""How old an estimate is: the oldest of its times, naive ones taken as UTC (the pure
`partdash.health.estimates`)."""

from datetime import datetime, timedelta

from partdash.health.estimates import age_seconds, oldest
from tests.health.builders import NOW


def test_the_oldest_timestamp_mixes_naive_utc_and_aware_times():
    naive_old = datetime(2026, 3, 1, 12, 0)
    assert oldest([NOW, None, naive_old]) == naive_old
    assert oldest([None]) is None


def test_age_is_never_negative_and_unknown_without_a_time():
    assert age_seconds(NOW - timedelta(hours=1), NOW) == 3600
    assert age_seconds(NOW + timedelta(hours=1), NOW) == 0
    assert age_seconds(datetime(2026, 3, 10, 11, 0), NOW) == 3600
    assert age_seconds(None, NOW) is None
