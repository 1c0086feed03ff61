"""The working set's forecast against ground truth, on a real MariaDB: a table written
at every poll grows steadily; from a few hours of polls partdash forecasts when the
written partitions outgrow the limit (a fraction of the server's real
innodb_buffer_pool_size); the polls go on until the table's size, read from the server
itself, crosses it; the forecast lands within 20% of when it did. The API, /metrics and
the `working_set_forecast` alert show it. partdash's clock moves 30 minutes per poll;
the server's figures are real."""

from datetime import datetime

import pytest

from partdash.alerts.models import Alert
from partdash.metrics.models import ServerSnapshot
from tests.api.test_write_hotspots_ground_truth import Clock
from tests.sql import run

pytestmark = pytest.mark.django_db

STEP = 30 * 60  # partdash's clock between polls
ROWS = 3200  # written per poll: about a megabyte per partition, an extent each


def table_bytes(instance, schema: str) -> int:
    """The table's data and index bytes as the server has them (statistics fresh)."""
    ((size,),) = instance.execute(
        "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.PARTITIONS "
        f"WHERE TABLE_SCHEMA = '{schema}' AND TABLE_NAME = 'ws'"
    )
    return int(size)


def test_the_forecast_lands_within_20_percent_of_the_crossing(
    mariadb, make_server, new_schema, monkeypatch, settings, admin_client
):
    settings.PARTDASH_READ_TABLESTATS = "on"
    settings.PARTDASH_WORKING_SET_FORECAST_DAYS = 0.25  # six hours of history
    settings.PARTDASH_WORKING_SET_FORECAST_EVERY_SECONDS = 0
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE ws (id INT PRIMARY KEY, payload VARCHAR(1000)) "
        "PARTITION BY HASH(id) PARTITIONS 4",
        f"INSERT INTO ws SELECT seq, REPEAT('w', 1000) FROM seq_1_to_{ROWS}",
        "ANALYZE TABLE ws",
    )
    ((pool,),) = mariadb.execute("SELECT @@innodb_buffer_pool_size")
    start = table_bytes(mariadb, schema)
    # The limit: 12 polls' growth ahead, as a fraction of the real pool.
    limit = start + 14 * ROWS * 1300
    settings.PARTDASH_WORKING_SET_FORECAST_FRACTION = limit / int(pool)
    server = make_server(mariadb)
    clock = Clock(monkeypatch, minutes_ago=24 * 60)
    truth: list[tuple[datetime, int]] = []
    forecast_at = forecast = None
    written = 1
    for turn in range(40):
        run(
            mariadb,
            schema,
            f"INSERT INTO ws SELECT seq + {written * ROWS}, REPEAT('w', 1000) FROM seq_1_to_{ROWS}",
            "ANALYZE TABLE ws",
        )
        written += 1
        clock.advance(STEP)
        clock.poll(server)
        snapshot = ServerSnapshot.objects.filter(server=server).order_by("-taken_at").first()
        truth.append((snapshot.taken_at, table_bytes(mariadb, schema)))
        working = snapshot.pressure["working_set"]
        if turn >= 1:  # (the first poll has no window yet)
            assert working["bytes"] == truth[-1][1], (turn, working, truth[-1])
        if forecast is None and working.get("forecast_date"):
            forecast_at = snapshot.taken_at
            forecast = datetime.fromisoformat(working["forecast_date"])
            shown = admin_client.get(f"/api/v1/servers/{server.pk}/").json()["working_set"]
            assert shown["forecast_date"] is not None and shown["growth_bytes_per_day"] > 0
            metrics = admin_client.get("/metrics").content.decode()
            assert 'partdash_server_working_set_forecast_seconds{server="db1"}' in metrics
        if truth[-1][1] >= limit:
            break
    assert forecast is not None, "no forecast before the crossing"
    assert truth[-1][1] >= limit, "never crossed"
    # When the table's real size crossed the limit, between the last two polls.
    (t0, b0), (t1, b1) = truth[-2], truth[-1]
    crossed = t0 + (t1 - t0) * ((limit - b0) / (b1 - b0))
    horizon = (crossed - forecast_at).total_seconds()
    error = abs((forecast - crossed).total_seconds())
    assert horizon > 2 * STEP, "the forecast came too late to test"
    assert error <= 0.2 * horizon, (forecast, crossed, forecast_at, error / horizon)
    # And the alert fired ahead of it (its threshold: 14 days; here hours were left).
    fired = Alert.objects.filter(server=server, rule="working_set_forecast")
    assert fired.exists()
