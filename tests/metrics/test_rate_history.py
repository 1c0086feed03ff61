"""The history API's rates (`rows_changed_per_s`, `write_bytes_per_s`, ...): a partition's
rate is null until it has a reading to compare with, never a 0 it was not measured at;
an idle partition with readings is 0. Stored polls built in the database."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.metrics.models import PartitionSample
from tests import builders

pytestmark = pytest.mark.django_db

POLL = timedelta(seconds=60)


@pytest.fixture
def polled():
    """Four polls a minute apart of a table of three partitions: `busy` changes 60 rows a
    poll, `late` is first read at the third poll (a partition added then) and changes 60
    rows after, `idle` was read at the first poll and never changed. No disk figures
    (performance_schema OFF): write_bytes never stored."""
    server = builders.server("rates-db")
    table = builders.table(server, name="daily", partition_count=3)
    names = ("busy", "late", "idle")
    busy, late, idle = (builders.partition(table, name, i) for i, name in enumerate(names))
    # Exactly a minute apart: each `ago` read its own now, and a loaded machine put up to
    # 0.1 s more between two (a rate of 0.998 where 1.0 is measured).
    now = timezone.now()
    polls = [builders.snapshot(server, taken_at=now - POLL * (3 - i)) for i in range(4)]
    counters = {busy: [0, 60, 120, 180], late: [None, None, 5, 65], idle: [0, None, None, None]}
    PartitionSample.objects.bulk_create(
        builders.sample(partition, poll, modified_counter=value)
        for partition, values in counters.items()
        for poll, value in zip(polls, values, strict=True)
        if value is not None
    )
    builders.latest_from_samples(table)
    return table, polls


def history(client, table, metric: str, since) -> dict:
    response = client.get(
        f"/api/v1/tables/{table.pk}/history/", {"metric": metric, "since": since.isoformat()}
    )
    assert response.status_code == 200
    return response.json()


def test_a_partition_has_no_rate_until_it_has_an_earlier_reading(admin_client, polled):
    table, polls = polled
    rates = history(admin_client, table, "rows_changed_per_s", polls[0].taken_at)

    assert rates["partitions"] == ["busy", "late", "idle"]
    assert [point[0] for point in rates["points"]] == [p.taken_at.isoformat() for p in polls[1:]]
    busy, late, idle = zip(*(point[1:] for point in rates["points"]), strict=True)
    assert busy == pytest.approx((1.0, 1.0, 1.0), rel=1e-3)
    # Not read before, then its first reading: no rate; then 60 rows in a minute.
    assert late[:2] == (None, None) and late[2] == pytest.approx(1.0, rel=1e-3)
    assert idle == (0.0, 0.0, 0.0)  # read, and unchanged since: measured at 0


def test_a_window_starting_late_compares_with_the_reading_before_it(admin_client, polled):
    table, polls = polled
    rates = history(admin_client, table, "rows_changed_per_s", polls[2].taken_at)
    # The poll at `since` opens the window; the late partition's reading there counts.
    ((_, busy, late, idle),) = rates["points"]
    assert (busy, late, idle) == (pytest.approx(1.0, rel=1e-3), pytest.approx(1.0, rel=1e-3), 0.0)


def test_a_counter_never_read_is_null_at_every_poll(admin_client, polled):
    table, polls = polled
    rates = history(admin_client, table, "write_bytes_per_s", polls[0].taken_at)
    assert len(rates["points"]) == 3
    assert all(value is None for point in rates["points"] for value in point[1:])
