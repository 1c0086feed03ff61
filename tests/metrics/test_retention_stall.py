"""A retention job that stalls pages within a poll of the grace running out, not at the
next day's analysis: on a real MariaDB, the quiet table's analysis is due again when its
overdue partitions pass PARTDASH_RETENTION_GRACE_DAYS, though nothing in it changed.
partdash's clock is moved; the server's figures are real."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from partdash.alerts.models import Alert
from partdash.metrics.models import PartitionedTable, RetentionPolicy
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 10)


class At:
    """partdash's clock at an hour of DAY (UTC)."""

    def __init__(self, monkeypatch) -> None:
        self.monkeypatch = monkeypatch

    def __call__(self, hour: int) -> None:
        moment = datetime(DAY.year, DAY.month, DAY.day, hour, tzinfo=UTC)
        self.monkeypatch.setattr(timezone, "now", lambda: moment)


def polled(server, schema: str) -> PartitionedTable:
    """The table after a poll (the shared server holds other tests' `events` too)."""
    report = poll_server(server)
    assert report.ok, report.error
    return PartitionedTable.objects.get(server=server, schema=schema, name="events")


def test_the_stall_alert_fires_once_the_grace_has_run_out_the_same_day(
    mariadb, make_server, new_schema, monkeypatch, settings
):
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    settings.PARTDASH_RETENTION_GRACE_DAYS = 0.25  # six hours
    schema = new_schema(mariadb)
    yesterday, tomorrow = DAY - timedelta(days=1), DAY + timedelta(days=1)
    run(
        mariadb,
        schema,
        "CREATE TABLE events (d DATE NOT NULL, id INT, PRIMARY KEY (d, id)) "
        "PARTITION BY RANGE (TO_DAYS(d)) ("
        f"PARTITION p_old VALUES LESS THAN (TO_DAYS('{yesterday}')), "
        f"PARTITION p_now VALUES LESS THAN (TO_DAYS('{tomorrow}')), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        f"INSERT INTO events SELECT '{yesterday}' - INTERVAL 2 DAY, seq FROM seq_1_to_300",
        f"INSERT INTO events SELECT '{DAY}', seq FROM seq_1_to_500",
        "ANALYZE TABLE events",
    )
    server = make_server(mariadb)
    at = At(monkeypatch)
    RetentionPolicy.objects.create(pattern=f"{schema}.events", keep_days=1)
    # p_old's range ended at midnight yesterday: past "keep 1 day" since midnight today.
    at(1)
    table = polled(server, schema)
    assert table.health["retention"]["partitions"] == ["p_old"]
    assert table.health["retention"]["rows"] == 300
    assert not Alert.objects.filter(rule="retention", schema=schema).exists()  # within the grace
    at(3)
    analysed = polled(server, schema).analysed_at
    assert not Alert.objects.filter(rule="retention", schema=schema).exists()
    # Six hours and more past: the quiet table is analysed again, and pages.
    at(7)
    table = polled(server, schema)
    assert table.analysed_at > analysed
    assert table.health["retention"]["overdue_days"] == pytest.approx(7 / 24, abs=0.01)
    alert = Alert.objects.get(rule="retention", schema=schema, table="events")
    assert alert.state == "firing" and alert.value == pytest.approx(7 / 24, abs=0.01)
