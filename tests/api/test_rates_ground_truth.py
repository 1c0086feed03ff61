"""A partition that stood still at the server's latest poll moved at 0, in the API, the
table's history and /metrics, though no poll writes its rates back to 0 (the stored row
keeps the rates of the poll that last changed it: a written 64,000-partition poll does not
update the ~600 partitions written the poll before). On a real MariaDB with
performance_schema on; ground truth: the rows the statements changed, counted here, and
performance_schema's bytes written per partition file."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from partdash.metrics.models import Partition, PartitionedTable, ServerSnapshot
from partdash.prometheus.exposition import exposition
from tests.api.test_health_ground_truth import file_writes, flush_to_disk
from tests.api.test_write_hotspots_ground_truth import (
    HOT_IDS,
    Clock,
    application,  # noqa: F401 (a fixture)
    rows_changed_read,  # noqa: F401 (a fixture)
    sessions_table,
    table_of,
    update_loop,
)

pytestmark = pytest.mark.django_db

RATES = ("rows_changed_per_s", "write_bytes_per_s", "read_bytes_per_s")
METRICS = {
    "partdash_partition_rows_changed_per_second": "rows_changed_per_s",
    "partdash_partition_disk_write_bytes_per_second": "write_bytes_per_s",
    "partdash_partition_disk_read_bytes_per_second": "read_bytes_per_s",
}


def scraped(schema: str) -> dict[str, dict[str, float]]:
    """/metrics's rates of the table's partitions, by partition."""
    rates: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(exposition().decode()):
        for sample in family.samples:
            if sample.name in METRICS and sample.labels["schema"] == schema:
                rates.setdefault(sample.labels["partition"], {})[METRICS[sample.name]] = (
                    sample.value
                )
    return rates


def last_interval(server) -> float:
    last, previous = ServerSnapshot.objects.filter(server=server).order_by("-taken_at")[:2]
    return (last.taken_at - previous.taken_at).total_seconds()


def history_latest(client, table: dict, metric: str) -> dict[str, float]:
    since = ServerSnapshot.objects.order_by("-taken_at")[1].taken_at
    history = client.get(
        f"/api/v1/tables/{table['id']}/history/",
        {"metric": metric, "since": since.isoformat()},
    ).json()
    return dict(zip(history["partitions"], history["points"][-1][1:], strict=True))


def test_a_partition_written_then_left_alone_moves_at_0_everywhere(
    mariadb_ps,
    make_server,
    new_schema,
    admin_client,
    monkeypatch,
    rows_changed_read,  # noqa: F811
    application,  # noqa: F811
):
    schema = new_schema(mariadb_ps)
    sessions_table(mariadb_ps, schema, "seq_1_to_64")
    server = make_server(mariadb_ps)
    clock = Clock(monkeypatch, minutes_ago=10)
    flush_to_disk(mariadb_ps, schema, "sessions_hash")
    for _ in range(2):  # the second poll knows rates
        clock.poll(server)
        clock.advance(60)
    PartitionedTable.objects.filter(server=server, name="sessions_hash").update(
        export_partitions=True
    )
    cursor = application(schema)

    # Written: five UPDATEs of the five hot users (all in p3), their pages flushed.
    before = file_writes(mariadb_ps, schema, "sessions_hash")
    changed = update_loop(cursor, 5, [0])
    flush_to_disk(mariadb_ps, schema, "sessions_hash")
    written = file_writes(mariadb_ps, schema, "sessions_hash")
    clock.poll(server)
    interval = last_interval(server)
    table, partitions = table_of(admin_client, server, schema, "sessions_hash")
    assert changed == 5 * len(HOT_IDS)
    p3 = partitions["p3"]
    assert p3["rows_changed_per_s"] == pytest.approx(changed / interval, rel=1e-6)
    assert written["p3"] > before["p3"]
    assert p3["write_bytes_per_s"] == pytest.approx(
        (written["p3"] - before["p3"]) / interval, rel=1e-6
    )
    assert scraped(schema)["p3"]["rows_changed_per_s"] == pytest.approx(p3["rows_changed_per_s"])
    stored = Partition.objects.get(table_id=table["id"], name="p3")

    # Left alone: nothing ran, nothing was written (performance_schema says so).
    clock.advance(60)
    clock.poll(server)
    assert file_writes(mariadb_ps, schema, "sessions_hash") == written
    table, partitions = table_of(admin_client, server, schema, "sessions_hash")
    assert {name: [p[rate] for rate in RATES] for name, p in partitions.items()} == {
        name: [0.0, 0.0, 0.0] for name in partitions
    }
    assert scraped(schema) == {name: dict.fromkeys(RATES, 0.0) for name in partitions}
    for metric in ("rows_changed_per_s", "write_bytes_per_s"):
        assert set(history_latest(admin_client, table, metric).values()) == {0}, metric
    # The stored row was not written: its rates are still the written poll's.
    kept = Partition.objects.get(pk=stored.pk)
    assert (kept.changed_at, kept.rows_changed_per_s) == (
        stored.changed_at,
        stored.rows_changed_per_s,
    )
    assert kept.rows_changed_per_s > 0

    # Written again: the rates are that poll's, in every reader.
    changed = update_loop(cursor, 3, [100])
    clock.advance(60)
    clock.poll(server)
    table, partitions = table_of(admin_client, server, schema, "sessions_hash")
    rate = changed / last_interval(server)
    assert partitions["p3"]["rows_changed_per_s"] == pytest.approx(rate, rel=1e-6)
    assert scraped(schema)["p3"]["rows_changed_per_s"] == pytest.approx(rate, rel=1e-6)
    assert history_latest(admin_client, table, "rows_changed_per_s")["p3"] == pytest.approx(
        rate, rel=1e-6
    )
    assert all(p["rows_changed_per_s"] == 0 for name, p in partitions.items() if name != "p3")
