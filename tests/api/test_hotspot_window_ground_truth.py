"""Issue 43: a shorter hotspot window (`PARTDASH_HOTSPOT_WINDOW_SECONDS=120`, slots of
10 s) still flags hot partitions, on a real MariaDB polled every 60 s by partdash's
clock. The hold defaults to one slot of the window (it scales with it) and is counted
in polls where polls are further apart than a slot, so it never asks for more slots
than the window holds. Ground truth: the rows each statement changed, counted here.
(The default window's scenarios are tests/api/test_write_hotspots_ground_truth.py.)"""

import pytest

from tests.api.test_write_hotspots_ground_truth import (  # noqa: F401 (fixtures)
    POLL_SECONDS,
    Clock,
    application,
    iibench_batch,
    purchases_table,
    rows_changed_read,
    table_of,
)
from tests.sql import run

pytestmark = pytest.mark.django_db

HOT_IDS = [5 + 8 * k for k in range(20)]  # 20 users, all in p5 of HASH(id) PARTITIONS 8


@pytest.fixture
def short_window(settings):
    settings.PARTDASH_HOTSPOT_WINDOW_SECONDS = 120
    settings.PARTDASH_HOTSPOT_HOLD_SECONDS = None  # the default: one slot of the window


@pytest.mark.parametrize(("hold", "polls_to_hold"), [(None, 1), (120, 2)])
def test_a_hot_update_loop_is_flagged_with_a_two_minute_window_and_an_even_table_never(
    mariadb_ps,
    make_server,
    new_schema,
    admin_client,
    monkeypatch,
    settings,
    rows_changed_read,  # noqa: F811
    application,  # noqa: F811
    short_window,
    hold,
    polls_to_hold,
):
    """The same 20 rows of p5 of an 8-partition HASH table UPDATEd every 9 s (seven
    times a minute), a poll a minute; beside it an 8-partition HASH table written
    evenly. With the default hold (10 s: one poll) p5 is hot at the first poll; with a
    hold of the whole window (two polls) at the second. The even table never is."""
    settings.PARTDASH_HOTSPOT_HOLD_SECONDS = hold
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE sessions (id INT PRIMARY KEY, v VARCHAR(100)) "
        "PARTITION BY HASH(id) PARTITIONS 8",
        "INSERT INTO sessions SELECT seq, 'x' FROM seq_1_to_16000",
        "CREATE TABLE even (id INT PRIMARY KEY, v VARCHAR(100)) PARTITION BY HASH(id) PARTITIONS 8",
        "INSERT INTO even SELECT seq, 'e' FROM seq_0_to_31999",
        "ANALYZE TABLE sessions, even",
    )
    server = make_server(mariadb_ps)
    clock = Clock(monkeypatch, minutes_ago=30)
    clock.poll(server)
    cursor = application(schema)
    flagged_after, changed, next_id, seen = None, 0, 32000, []
    for poll in range(1, 7):
        for serial in range(7):  # every 9 s of the minute
            changed += cursor.execute(
                f"UPDATE sessions SET v = '{poll}-{serial}' WHERE id IN "
                f"({', '.join(map(str, HOT_IDS))})"
            )
        cursor.execute(f"INSERT INTO even SELECT {next_id} + seq, 'e' FROM seq_1_to_400")
        next_id += 400
        clock.advance(POLL_SECONDS)
        clock.poll(server)
        sessions, partitions = table_of(admin_client, server, schema, "sessions")
        even, _ = table_of(admin_client, server, schema, "even")
        seen.append({n: p["rows_changed_per_s"] for n, p in partitions.items()})
        assert set(sessions["hotspots"]) <= {"p5"}, (poll, sessions["hotspots"], seen)
        assert even["hotspots"] == [], (poll, even["hotspots"])
        if sessions["hotspots"] == ["p5"] and flagged_after is None:
            flagged_after = poll
    assert changed == len(HOT_IDS) * 7 * 6  # ground truth: every UPDATE hit p5's 20 rows
    counted = run(mariadb_ps, schema, "SELECT COUNT(*) FROM sessions WHERE id % 8 = 5")
    assert counted[0][0] == 2000
    assert flagged_after == polls_to_hold, seen
    assert sessions["hotspots"] == ["p5"] and partitions["p5"]["write_share"] == 1.0
    (finding,) = [f for f in sessions["findings"] if f["kind"] == "hotspot"]
    assert finding["message"].startswith("p5 takes 100% of the rows changed"), finding
    assert even["findings"] == [] and even["activity_source"] == "rows_changed"


def test_iibench_inserts_into_one_range_partition_are_flagged_with_a_two_minute_window(
    mariadb_ps,
    make_server,
    new_schema,
    admin_client,
    monkeypatch,
    rows_changed_read,  # noqa: F811
    application,  # noqa: F811
    short_window,
):
    """iiBench's purchases table, four RANGE partitions by day, six rounds of 8,000 rows
    inserted into today's (p1), a poll after each: p1 is the hotspot from the first
    poll, alone, on rows changed."""
    schema = new_schema(mariadb_ps)
    today = purchases_table(mariadb_ps, schema, ("p0", "p1", "p2", "p3"))
    server = make_server(mariadb_ps)
    clock = Clock(monkeypatch, minutes_ago=15)
    clock.poll(server)
    cursor = application(schema)
    flagged = []
    for _ in range(6):
        iibench_batch(cursor, 8000)
        clock.advance(POLL_SECONDS)
        clock.poll(server)
        table, partitions = table_of(admin_client, server, schema, "purchases")
        flagged.append(table["hotspots"])
    counted = dict(
        run(
            mariadb_ps,
            schema,
            f"SELECT TO_DAYS(dateandtime) = {today}, COUNT(*) FROM purchases GROUP BY 1",
        )
    )
    assert counted[1] == 48000  # ground truth: every insert went to p1
    assert flagged == [["p1"]] * 6, flagged
    assert table["activity_source"] == "rows_changed"
    assert partitions["p1"]["write_share"] == 1.0
