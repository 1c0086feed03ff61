"""History of any range from a bounded number of points (issue 24, point 4): a window of
more than 500 polls is read in 5-minute, hourly or daily buckets, rolled up once and
stored; each bucket's rate is its counters' deltas over its seconds, so the bucketed
series carries exactly the rows (and bytes) the poll-by-poll series does. Stored polls
built in the database."""

import random
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from partdash.metrics import history, rollups
from partdash.metrics.history import Series, rate_history, table_history
from partdash.metrics.models import (
    PartitionSample,
    PollBucket,
    RollupCursor,
    ServerSnapshot,
    TableRollup,
)
from tests import builders

pytestmark = pytest.mark.django_db

POLL = timedelta(seconds=60)
NAMES = ("steady", "burst", "late")


def build(hours: float, seed: int = 7):
    """Polls a minute apart for `hours`, to now, of a table of three partitions:
    - `steady` changes 60 rows a poll, its counter reset now and then as InnoDB resets
      it (to a small count, with the rows estimate grown);
    - `burst` writes 6,000 bytes a poll in the first half, then nothing;
    - `late` is first read halfway, then grows 10 rows a poll."""
    server = builders.server("rollup-db")
    table = builders.table(server, name="events", partition_count=3)
    steady, burst, late = (builders.partition(table, name, i) for i, name in enumerate(NAMES))
    count, now = int(hours * 60), timezone.now()
    ServerSnapshot.objects.bulk_create(  # exactly a minute apart, however long this takes
        builders.snapshot_row(server, taken_at=now - POLL * (count - 1 - i)) for i in range(count)
    )
    polls = list(ServerSnapshot.objects.filter(server=server).order_by("taken_at"))
    rnd = random.Random(seed)
    samples, counter, rows, written = [], 0, 1000, 0
    for i, poll in enumerate(polls):
        if i and rnd.random() < 0.02:
            counter, rows = rnd.randint(1, 50), rows + 600  # a reset
            samples.append(builders.sample(steady, poll, modified_counter=counter, rows=rows))
        else:
            counter += 60
            samples.append(builders.sample(steady, poll, modified_counter=counter))
        if i < count // 2:
            written += 6000
            samples.append(builders.sample(burst, poll, write_bytes=written))
        else:
            rows_late = 10 * (i - count // 2)
            samples.append(builders.sample(late, poll, rows=rows_late, modified_counter=0))
    PartitionSample.objects.bulk_create(samples, batch_size=2000)
    builders.latest_from_samples(table)
    return table, polls


def stamp(point: list) -> datetime:
    return datetime.fromisoformat(point[0])


def total(points: list[list], column: int, after: datetime, until: datetime) -> float:
    """What a rate series carries over (after, until]: each point's rate times the
    seconds since the point before it (since `after` for the first point past it: a
    poll-by-poll series starts one poll after its first, which is then `after`)."""
    carried, previous = 0.0, after
    for point in points:
        if after < stamp(point) <= until:
            carried += (point[1 + column] or 0.0) * (stamp(point) - previous).total_seconds()
        previous = stamp(point)
    return carried


@pytest.mark.parametrize(
    ("max_points", "resolution"),
    # A day in 5-minute buckets; with 30 points at most, in hourly ones (as 7 days come
    # by default: a week of polls costs this test 38 s to build on PostgreSQL).
    [(history.MAX_POINTS, "5min"), (30, "hour")],
)
def test_buckets_carry_the_rows_and_bytes_the_polls_carry(max_points, resolution, monkeypatch):
    monkeypatch.setattr(history, "MAX_POINTS", max_points)
    hours, window = 30, 24
    table, polls = build(hours)
    since = polls[-1].taken_at - timedelta(hours=window)
    partitions = list(table.partitions.order_by("ordinal"))
    for metric, column in (("rows_changed_per_s", 0), ("write_bytes_per_s", 1)):
        bucketed = table_history(table, metric, since)
        points = bucketed["points"]
        said = (metric, bucketed["resolution"], bucketed["complete"], len(points), points[-3:])
        assert bucketed["resolution"] == resolution and bucketed["complete"], said
        assert bucketed["partitions"] == list(NAMES)
        width = rollups.WIDTHS[resolution].total_seconds()
        assert len(points) <= window * 3600 / width + 20, said  # and a few polls
        raw = rate_history(Series(table, partitions, metric, since))
        assert len(raw) > 4 * len(points), said
        after, until = stamp(points[0]), stamp(points[-1])
        expected = total(raw, column, after, until)
        assert expected > 0
        assert total(points, column, after, until) == pytest.approx(expected), said


def test_a_bucket_s_rate_is_its_deltas_over_its_seconds_and_none_without_a_reading():
    table, polls = build(30)
    since = polls[-1].taken_at - timedelta(hours=24)
    series = table_history(table, "write_bytes_per_s", since)
    assert series["resolution"] == "5min"
    half = polls[len(polls) // 2].taken_at
    for point in series["points"]:
        steady, burst, late = point[1:]
        assert steady is None and late is None  # never read: no rate, not 0
        if stamp(point) < half - timedelta(minutes=6):
            assert burst == pytest.approx(100.0, rel=1e-4)  # 6,000 bytes a minute
        elif stamp(point) > half + timedelta(minutes=6):
            assert burst == 0.0


def test_a_level_is_its_value_at_each_bucket_s_last_poll():
    table, polls = build(30)
    since = polls[-1].taken_at - timedelta(hours=24)
    series = table_history(table, "rows", since)
    assert series["resolution"] == "5min"
    half = len(polls) // 2
    position = {poll.taken_at: i for i, poll in enumerate(polls)}
    for point in series["points"][1:]:
        i = position[stamp(point)]  # each point is a poll, its bucket's last
        assert point[3] == (10 * (i - half) if i >= half else None)


def test_a_short_window_is_read_poll_by_poll():
    table, polls = build(3)
    series = table_history(table, "rows_changed_per_s", polls[-1].taken_at - timedelta(hours=1))
    assert series["resolution"] == "poll"
    assert len(series["points"]) == 60  # 61 polls, ends included: the first is counted from
    assert not PollBucket.objects.exists()


def test_buckets_are_rolled_up_once_and_pruned_with_their_retention(settings):
    table, polls = build(30)
    since = polls[-1].taken_at - timedelta(hours=24)
    table_history(table, "rows_changed_per_s", since)
    stored = TableRollup.objects.count()
    buckets = PollBucket.objects.filter(width="5min").count()
    assert stored and buckets > 280
    assert RollupCursor.objects.filter(table=table, width="5min").exists()
    assert rollups.roll_up(table, "5min") == 0  # nothing new
    table_history(table, "rows", since)
    assert TableRollup.objects.count() == stored

    settings.PARTDASH_RETENTION_RAW_DAYS = 0
    assert rollups.prune() >= buckets
    assert not PollBucket.objects.filter(width="5min").exists()


def test_a_request_rolls_up_newest_first_for_a_few_seconds_and_says_what_is_missing(
    monkeypatch,
):
    """After an upgrade nothing is rolled up: a request rolls up for ROLL_UP_SECONDS at
    most, newest first, answers with what is stored and says the rest is missing; the
    periodic task rolls up the rest, and the answer is then whole."""
    table, polls = build(30)
    since = polls[-1].taken_at - timedelta(hours=24)
    monkeypatch.setattr(rollups, "CHUNK_POLLS", 120)  # two hours of polls a chunk
    monkeypatch.setattr(history, "ROLL_UP_SECONDS", 0)  # one chunk, then stop

    partial = table_history(table, "rows_changed_per_s", since)

    assert partial["resolution"] == "5min" and partial["complete"] is False
    cursor = RollupCursor.objects.get(table=table, width="5min")
    assert polls[-1].taken_at - cursor.first_start < timedelta(hours=3)  # the newest chunk
    assert stamp(partial["points"][0]) >= cursor.first_start  # nothing older: no points
    assert all(point[1] > 0 for point in partial["points"])  # `steady` changed rows throughout

    rollups.roll_up_all()
    whole = table_history(table, "rows_changed_per_s", since)
    assert whole["complete"] is True
    assert stamp(whole["points"][0]) - since < timedelta(minutes=6)
    assert len(whole["points"]) > len(partial["points"])
