"""History bounded per answer (issue 37, point 6): a table of more partitions than an
answer names shows the busiest by the metric and one `other` series summing the rest,
`partitions=` names the ones wanted, and points times series never pass the cap. Ground
truth: 40 partitions whose every figure at every poll is a formula, built in the store."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from partdash.metrics import folded_history, history, rollups
from partdash.metrics.folded_history import OTHER
from partdash.metrics.models import PartitionSample, ServerSnapshot
from tests import builders

pytestmark = pytest.mark.django_db

PARTITIONS, POLLS = 40, 150  # 2.5 hours of polls a minute apart
POLL = timedelta(seconds=60)
FIVE_MINUTES = timedelta(minutes=5)


def rows_at(i: int, k: int) -> int:
    """Partition i's rows at poll k: every fifth never changes after its first poll."""
    return 100 * i + k * (i % 5)


def write_rate(i: int) -> float:
    """Partition i's disk writes per second: a distinct rate each (7 is prime to 40)."""
    return 1000 * ((7 * i) % PARTITIONS + 1) / 60


@pytest.fixture(scope="module")
def polled_once(django_db_setup, django_db_blocker):
    """The polls, built once for the module in a transaction rolled back at its end: each
    test runs in a savepoint of it (the `db` fixture's), so what one test changes (a
    partition deleted, rolled-up buckets) is gone before the next. Built per test, its
    6,000 samples cost the module's 17 tests 30 s of CPU on PostgreSQL."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_polls()
        transaction.set_rollback(True)


@pytest.fixture
def polled(polled_once, db):
    return polled_once


def build_polls():
    server = builders.server("folded-db")
    table = builders.table(server, name="events", partition_count=PARTITIONS)
    parts = [builders.partition(table, f"p{i}", i) for i in range(PARTITIONS)]
    now = timezone.now()
    ServerSnapshot.objects.bulk_create(
        builders.snapshot_row(server, taken_at=now - POLL * (POLLS - 1 - k)) for k in range(POLLS)
    )
    polls = list(ServerSnapshot.objects.filter(server=server).order_by("taken_at"))
    samples = []
    for k, poll in enumerate(polls):
        for i, part in enumerate(parts):
            changed = k == 0 or i % 5
            samples.append(
                builders.sample(
                    part,
                    poll,
                    write_bytes=round(write_rate(i) * 60 * k),
                    **({"rows": rows_at(i, k)} if changed else {}),
                )
            )
    PartitionSample.objects.bulk_create(samples, batch_size=2000)
    builders.latest_from_samples(table)
    return table, polls


@pytest.fixture(params=["poll", "5min"])
def resolution(request, monkeypatch):
    """Poll by poll, or (a budget of samples this table passes) in 5-minute buckets."""
    if request.param == "5min":
        monkeypatch.setattr(history, "MAX_RAW_SAMPLES", PARTITIONS)
    return request.param


def poll_index(polls, stamp: str) -> int:
    return next(k for k, poll in enumerate(polls) if poll.taken_at.isoformat() == stamp)


def test_the_busiest_rates_are_named_and_other_sums_the_rest(polled, resolution):
    table, polls = polled
    since = polls[0].taken_at - timedelta(seconds=1)
    answer = folded_history.folded_history(table, "write_bytes_per_s", since)

    assert answer["resolution"] == resolution
    busiest = sorted(range(PARTITIONS), key=write_rate, reverse=True)
    named = busiest[: folded_history.MAX_SERIES]
    assert answer["partitions"] == [f"p{i}" for i in named] + [OTHER]
    assert answer["other"] == PARTITIONS - len(named)
    rest = sum(write_rate(i) for i in busiest[len(named) :])
    first, *points = answer["points"]
    if first[1] is None:  # a bucket of the first poll alone: no reading to compare with yet
        assert first[1:-1] == [None] * len(named) and not first[-1]
    else:
        points.insert(0, first)
    assert len(points) > 10
    for point in points:
        assert point[1:-1] == pytest.approx([write_rate(i) for i in named], rel=1e-3)
        assert point[-1] == pytest.approx(rest, rel=1e-3)


def test_the_largest_levels_are_named_and_other_sums_the_rest(polled, resolution):
    table, polls = polled
    since = polls[0].taken_at - timedelta(seconds=1)
    answer = folded_history.folded_history(table, "rows", since)

    last = POLLS - 1
    largest = sorted(range(PARTITIONS), key=lambda i: (-rows_at(i, last), i))
    named, rest = largest[: folded_history.MAX_SERIES], largest[folded_history.MAX_SERIES :]
    assert answer["partitions"] == [f"p{i}" for i in named] + [OTHER]
    assert len(answer["points"]) > 10
    for point in answer["points"]:
        k = poll_index(polls, point[0])
        assert point[1:-1] == [rows_at(i, k) for i in named]
        assert point[-1] == sum(rows_at(i, k) for i in rest)


def test_partitions_named_are_shown_in_that_order(polled, resolution):
    table, polls = polled
    since = polls[0].taken_at - timedelta(seconds=1)
    answer = folded_history.folded_history(table, "rows", since, names=["p3,p0", "p7"])

    assert answer["partitions"] == ["p3", "p0", "p7", OTHER]
    for point in answer["points"]:
        k = poll_index(polls, point[0])
        assert point[1:] == [
            rows_at(3, k),
            rows_at(0, k),
            rows_at(7, k),
            sum(rows_at(i, k) for i in range(PARTITIONS) if i not in (0, 3, 7)),
        ]


@pytest.mark.parametrize("cap", [25_000, 600, 320, 160])
def test_an_answer_never_holds_more_cells_than_the_cap(polled, monkeypatch, cap):
    table, polls = polled
    monkeypatch.setattr(folded_history, "MAX_CELLS", cap)
    since = polls[0].taken_at - timedelta(seconds=1)
    for metric in ("rows", "write_bytes_per_s"):
        answer = folded_history.folded_history(table, metric, since)
        cells = len(answer["points"]) * len(answer["partitions"])
        assert cells <= cap, (metric, cells)
        assert all(len(point) == 1 + len(answer["partitions"]) for point in answer["points"])


def test_a_small_table_keeps_every_partition(polled):
    """At most MAX_SERIES partitions, and points to spare: the answer as before."""
    table, polls = polled
    table.partitions.filter(ordinal__gte=10).delete()
    since = polls[0].taken_at - timedelta(seconds=1)
    answer = folded_history.folded_history(table, "rows", since)
    assert answer["partitions"] == [f"p{i}" for i in range(10)] and answer["other"] == 0
    assert answer["points"] == history.table_history(table, "rows", since)["points"]


def test_the_api_takes_partitions_and_refuses_unknown_or_too_many(polled, viewer_api):
    table, _ = polled
    url = f"/api/v1/tables/{table.pk}/history/?metric=rows"

    answer = viewer_api.get(f"{url}&partitions=p1&partitions=p2").json()
    assert answer["partitions"] == ["p1", "p2", OTHER] and answer["other"] == PARTITIONS - 2

    unknown = viewer_api.get(f"{url}&partitions=p1,nope")
    assert unknown.status_code == 400
    assert unknown.json()["partitions"] == "no such partition in this table: nope"

    many = ",".join(f"p{i}" for i in range(folded_history.MAX_SERIES + 1))
    too_many = viewer_api.get(f"{url}&partitions={many}")
    assert too_many.status_code == 400
    assert "at most 24 partitions" in too_many.json()["partitions"]


def test_a_request_rolls_up_for_its_budget_not_per_width(polled, monkeypatch):
    """The 3 s are the request's, whatever widths and passes it reads: once spent, the
    next width is not rolled up at all (it used to get 3 s of its own)."""
    table, polls = polled
    monkeypatch.setattr(history, "MAX_RAW_SAMPLES", PARTITIONS)
    calls = []
    real = rollups.roll_up

    def counted(table, width, seconds=None, now=None):
        calls.append((width, seconds))
        return real(table, width, seconds=seconds, now=now)

    monkeypatch.setattr(rollups, "roll_up", counted)
    monkeypatch.setattr(history, "ROLL_UP_SECONDS", 0)
    folded_history.folded_history(table, "rows", polls[0].taken_at - timedelta(days=8))
    assert [width for width, _ in calls] == ["hour"]  # the first width only, once


def test_other_is_null_where_no_folded_partition_has_a_rate_yet(polled, resolution):
    """The folded partitions' first reading comes late: until a second one, `other` has
    nothing to sum and says null, not a 0 they were not measured at."""
    table, polls = polled
    named = sorted(range(PARTITIONS), key=write_rate, reverse=True)[: folded_history.MAX_SERIES]
    folded = [p for p in table.partitions.all() if int(p.name[1:]) not in named]
    # Read first at the last poll of a 5-minute bucket: a bucket holding two readings has
    # a delta, which the rollups (and `history.bucket_history`) take for a reading before.
    late = next(
        k
        for k in range(len(polls) // 2, len(polls) - 1)
        if rollups.floor_to(polls[k + 1].taken_at, FIVE_MINUTES)
        != rollups.floor_to(polls[k].taken_at, FIVE_MINUTES)
    )
    PartitionSample.objects.filter(partition__in=folded, snapshot__in=polls[:late]).update(
        write_bytes=None
    )
    since = polls[0].taken_at - timedelta(seconds=1)
    answer = folded_history.folded_history(table, "write_bytes_per_s", since)

    assert answer["partitions"][-1] == OTHER
    first_read = polls[late].taken_at.isoformat()
    before = [p for p in answer["points"] if p[0] <= first_read]
    after = [p for p in answer["points"] if p[0] > polls[late + 5].taken_at.isoformat()]
    assert before and [point[-1] for point in before] == [None] * len(before), [
        (p[0], p[-1]) for p in before
    ]
    assert all(point[1] is not None for point in before[1:])  # the named have rates
    rest = sum(write_rate(i) for i in range(PARTITIONS) if i not in named)
    assert after and all(point[-1] == pytest.approx(rest, rel=1e-3) for point in after)


def test_a_past_level_window_ranks_without_a_probe_per_partition(polled, resolution):
    """A window ending in the past ranks by each partition's level at its end: read with
    the first pass's one lookup, not a second lookup of every partition."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    table, polls = polled
    since = polls[0].taken_at - timedelta(seconds=1)
    until = polls[100].taken_at
    for width in rollups.LADDER:  # as the periodic task has: its own lookups are not counted
        rollups.roll_up(table, width, seconds=60)
    with CaptureQueriesContext(connection) as queries:
        answer = folded_history.folded_history(table, "rows", since, until)

    largest = sorted(range(PARTITIONS), key=lambda i: (-rows_at(i, 100), i))
    assert answer["partitions"] == [f"p{i}" for i in largest[: folded_history.MAX_SERIES]] + [OTHER]
    # The old ranking looked every partition up again, bounded by the first poll after
    # `until`; the first pass's lookups are bounded by the window's (or a bucket's) start.
    after_until = history.first_poll_at_or_after(table, until + timedelta(microseconds=1))
    assert not [q for q in queries if f'"snapshot_id" < {after_until}' in q["sql"]]
    lookups = [
        q["sql"]
        for q in queries
        if 'FROM "metrics_partition"' in q["sql"] and "LIMIT 1)" in q["sql"]
    ]
    whole_table = [sql for sql in lookups if '"metrics_partition"."table_id" =' in sql]
    assert resolution == "poll" or len(whole_table) == 1
