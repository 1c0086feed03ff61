"""A retention policy against ground truth, on a real MariaDB: a monthly TO_DAYS table with
months well past a 30-day policy; the retention finding lists exactly those partitions,
with the rows COUNT(*) finds in them and the bytes the server reports; the `retention`
alert fires (overdue by months, far past the grace); the fix's DROP PARTITION, run as is
on the server, clears the finding and resolves the alert at the next poll."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from partdash.alerts.models import Alert
from partdash.metrics.models import PartitionedTable
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db

KEEP_DAYS = 30


def month_starts(today: date, back: int, ahead: int) -> list[date]:
    first = today.replace(day=1)
    starts = []
    for offset in range(-back, ahead + 1):
        month = first.month - 1 + offset
        starts.append(date(first.year + month // 12, month % 12 + 1, 1))
    return starts


def events_table(instance, schema: str, bounds: list[date]) -> None:
    """`events`: one partition per month below each bound, then a catch-all; partition i
    holds 40 * (i + 1) rows dated a few days before its bound."""
    parts = ", ".join(f"PARTITION p{b:%Y%m} VALUES LESS THAN (TO_DAYS('{b}'))" for b in bounds)
    statements = [
        "CREATE TABLE events (id INT NOT NULL, d DATE NOT NULL, payload VARCHAR(200), "
        f"PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) ({parts}, "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)"
    ]
    for i, bound in enumerate(bounds[:-1]):
        day = bound - timedelta(days=3)
        statements.append(
            f"INSERT INTO events SELECT seq + {i * 100_000}, '{day}', REPEAT('e', 200) "
            f"FROM seq_1_to_{40 * (i + 1)}"
        )
    run(instance, schema, *statements, "ANALYZE TABLE events")


def server_truth(instance, schema: str, names: list[str]) -> tuple[int, int]:
    """COUNT(*) of the partitions, and their data and index bytes, as the server has them."""
    quoted = ", ".join(f"`{n}`" for n in names)
    ((rows,),) = run(instance, schema, f"SELECT COUNT(*) FROM events PARTITION ({quoted})")
    listed = ", ".join(f"'{n}'" for n in names)
    ((size,),) = instance.execute(
        "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.PARTITIONS "
        f"WHERE TABLE_SCHEMA = '{schema}' AND TABLE_NAME = 'events' "
        f"AND PARTITION_NAME IN ({listed})"
    )
    return int(rows), int(size)


def polled(server, schema: str) -> PartitionedTable:
    """The table after a poll (the shared server holds other tests' `events` too)."""
    report = poll_server(server)
    assert report.ok, report.error
    return PartitionedTable.objects.get(server=server, schema=schema, name="events")


def retention_findings(table: PartitionedTable) -> list[dict]:
    return [f for f in table.health["findings"] if f["kind"] == "retention"]


def test_the_drop_partition_of_a_retention_finding_clears_it(
    mariadb, make_server, new_schema, settings, admin_client
):
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    schema = new_schema(mariadb)
    now = timezone.now()
    bounds = month_starts(now.date(), back=5, ahead=2)
    events_table(mariadb, schema, bounds)
    cutoff = now - timedelta(days=KEEP_DAYS)
    past = [
        f"p{b:%Y%m}" for b in bounds[:-1] if datetime(b.year, b.month, b.day, tzinfo=UTC) <= cutoff
    ]
    assert len(past) >= 4
    server = make_server(mariadb)

    table = polled(server, schema)
    assert retention_findings(table) == [] and "retention" not in table.health

    # A policy made after the table's analysis: the next poll applies it, unchanged table.
    created = admin_client.post(
        "/api/v1/retention-policies/",
        {"pattern": f"{schema}.ev*", "keep_days": KEEP_DAYS},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    table = polled(server, schema)
    (finding,) = retention_findings(table)
    rows, size = server_truth(mariadb, schema, past)
    retention = table.health["retention"]
    assert retention["partitions"] == past
    assert retention["overdue_partitions"] == len(past)
    assert retention["rows"] == rows
    assert retention["bytes"] == size
    fix = finding["fix"]
    assert fix["safety"] == "destroys"
    assert (fix["rows"], fix["bytes"]) == (rows, size)
    listed = ", ".join(f"`{n}`" for n in past)
    assert fix["sql"] == f"ALTER TABLE `{schema}`.`events` DROP PARTITION {listed}"
    shown = admin_client.get(f"/api/v1/tables/{table.pk}/").json()
    assert shown["retention"]["partitions"] == past
    metrics = admin_client.get("/metrics").content.decode()
    labels = f'{{schema="{schema}",server="db1",table="events"}}'
    assert f"partdash_table_retention_overdue_partitions{labels} {len(past)}.0" in metrics
    assert f"partdash_table_retention_overdue_seconds{labels} " in metrics

    # Overdue by months: the job is stalled, far past the one-day grace.
    alert = Alert.objects.get(server=server, rule="retention")
    assert alert.state == "firing" and alert.value > settings.PARTDASH_RETENTION_GRACE_DAYS

    run(mariadb, schema, fix["sql"])
    table = polled(server, schema)
    assert retention_findings(table) == []
    assert table.health["retention"]["overdue_partitions"] == 0
    assert {p.name for p in table.partitions.live()}.isdisjoint(past)
    alert.refresh_from_db()
    assert alert.state == "resolved"


def test_a_keep_partitions_policy_on_an_id_range_counts_back_from_the_data(
    mariadb, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(50)) PARTITION BY RANGE (id) ("
        + ", ".join(f"PARTITION p{k} VALUES LESS THAN ({k * 1000})" for k in range(1, 8))
        + ")",
        "INSERT INTO orders SELECT seq, 'o' FROM seq_1_to_4500",  # p1..p5 hold rows
        "ANALYZE TABLE orders",
    )
    admin_client.post(
        "/api/v1/retention-policies/",
        {"pattern": "*.orders", "keep_partitions": 2},
        content_type="application/json",
    )
    server = make_server(mariadb)
    assert poll_server(server).ok
    table = PartitionedTable.objects.get(server=server, schema=schema, name="orders")
    retention = table.health["retention"]
    assert retention["partitions"] == ["p1", "p2", "p3"]
    ((rows,),) = run(mariadb, schema, "SELECT COUNT(*) FROM orders PARTITION (p1, p2, p3)")
    assert retention["rows"] == rows == 2999
    (finding,) = [f for f in table.health["findings"] if f["kind"] == "retention"]
    run(mariadb, schema, finding["fix"]["sql"])
    assert poll_server(server).ok
    table.refresh_from_db()
    assert [f for f in table.health["findings"] if f["kind"] == "retention"] == []
