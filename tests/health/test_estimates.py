"""How old an estimate is: the oldest of its times, naive ones taken as UTC (the pure
`partdash.health.estimates`)."""

from datetime import datetime, timedelta

from partdash.health.estimates import age_seconds, oldest, statistics_age
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


def test_the_statistics_age_is_the_oldest_partitions_and_names_it():
    times = [("p0", NOW), ("p1", NOW - timedelta(minutes=30)), ("p2", None),
             ("p3", datetime(2026, 3, 10, 11, 30))]  # fmt: skip
    age = statistics_age(times)
    assert (age.partition, age.as_of, age.newest_at) == ("p1", NOW - timedelta(minutes=30), NOW)
    assert age.partitions == 3  # p2 has no statistics
    tied = statistics_age([("p0", NOW), ("p1", NOW)])
    assert tied.partition == "p0" and tied.as_of == tied.newest_at  # first in definition order
    assert statistics_age([("p0", None)]) is None
