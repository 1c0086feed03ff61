"""Writes into an old RANGE partition, on a real MariaDB: a daily table whose
month-old day is UPDATEd over and over takes a hotspot finding on that day (what it
usually means, advice and no statement); beside it, a daily table taking its inserts in
today's partition keeps the rule that the newest RANGE partition taking the writes is
shown, not raised."""

from datetime import date, timedelta

import pytest
from django.utils import timezone

from tests.api.test_health_ground_truth import api_tables
from tests.api.test_write_hotspots_ground_truth import Clock
from tests.sql import run

pytestmark = pytest.mark.django_db

DAYS_BACK, DAYS_AHEAD = 35, 3
OLD_DAY = 30  # days back: the day the UPDATE loop rewrites


def day_name(day: date) -> str:
    return f"p{day:%Y%m%d}"


def daily_table(name: str, today: date) -> str:
    """CREATE TABLE of a TO_DAYS table with one partition a day from DAYS_BACK ago to
    DAYS_AHEAD ahead, then a catch-all."""
    days = [today + timedelta(days=n) for n in range(-DAYS_BACK, DAYS_AHEAD + 1)]
    parts = ", ".join(
        f"PARTITION {day_name(d)} VALUES LESS THAN (TO_DAYS('{d + timedelta(days=1)}'))"
        for d in days
    )
    return (
        f"CREATE TABLE {name} (id INT NOT NULL, d DATE NOT NULL, status INT, "
        f"PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) ({parts}, "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)"
    )


def load(name: str, today: date, busy: date) -> str:
    """Ten rows a day, 3,000 on the `busy` day: far more than the work changes there
    between polls (InnoDB resets a partition's counter after a tenth of it changed)."""
    return (
        f"INSERT INTO {name} SELECT seq, DATE('{today}') - INTERVAL (seq % {DAYS_BACK}) DAY, 0 "
        f"FROM seq_1_to_{10 * DAYS_BACK} UNION ALL "
        f"SELECT 100000 + seq, DATE('{busy}'), 0 FROM seq_1_to_3000"
    )


def work(cursor, today: date, serial: list[int]) -> None:
    """A minute of the application: 40 rows of the month-old day of `orders` updated five
    times (200 rows changed), two new orders today; 40 new rows today in `events`."""
    old = today - timedelta(days=OLD_DAY)
    for _ in range(5):
        serial[0] += 1
        cursor.execute(f"UPDATE orders SET status = {serial[0]} WHERE d = '{old}' AND id <= 100040")
    for _ in range(2):
        serial[0] += 1
        cursor.execute(f"INSERT INTO orders VALUES ({10**6 + serial[0]}, '{today}', 0)")
    cursor.execute(
        f"INSERT INTO events SELECT {10**6} + {serial[0]} * 1000 + seq, '{today}', 0 "
        "FROM seq_1_to_40"
    )


def test_an_update_loop_on_a_month_old_day_is_a_finding_and_inserts_today_are_not(
    mariadb, make_server, new_schema, admin_client, monkeypatch, settings
):
    settings.PARTDASH_READ_TABLESTATS = "on"  # rows changed, whatever the cache holds
    today = timezone.now().date()
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        daily_table("orders", today),
        load("orders", today, today - timedelta(days=OLD_DAY)),
        daily_table("events", today),
        load("events", today, today),
        "ANALYZE TABLE orders, events",
    )
    server = make_server(mariadb)
    clock = Clock(monkeypatch, minutes_ago=10)
    clock.poll(server)
    conn = mariadb.connect(database=schema)
    conn.autocommit(True)
    serial = [0]
    try:
        for _ in range(2):
            work(conn.cursor(), today, serial)
            clock.advance(60)
            clock.poll(server)
    finally:
        conn.close()

    tables = api_tables(admin_client, server)
    orders, events = tables[(schema, "orders")], tables[(schema, "events")]
    old = day_name(today - timedelta(days=OLD_DAY))
    assert orders["hotspots"] == [old], orders
    (finding,) = [f for f in orders["findings"] if f["kind"] == "hotspot"]
    assert finding["severity"] == "warning"
    assert finding["message"].startswith(f"{old} takes 9")  # 200 of 202 rows changed
    assert "not the partition new rows go to" in finding["message"]
    assert "old rows updated" in finding["message"]
    assert finding["fix"]["sql"] is None and "wrong time" in finding["fix"]["advice"]
    # Today's partition takes every insert: hot, shown, not raised.
    assert events["hotspots"] == [day_name(today)], events
    assert [f for f in events["findings"] if f["kind"] == "hotspot"] == []
