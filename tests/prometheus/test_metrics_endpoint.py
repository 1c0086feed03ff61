"""/metrics against the API: the same stored figures, parsed with prometheus_client's
own parser, behind a token, at a fixed number of queries."""

import shutil
import subprocess
from collections import Counter

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from partdash.alerts.models import Alert
from partdash.prometheus.exposition import exposition
from tests import builders
from tests.prometheus.exposition_rows import hash_table, polled_server, range_table

pytestmark = pytest.mark.django_db


def scrape(client, path: str = "/metrics") -> dict[str, dict[tuple, float]]:
    """Each family's samples by their labels (as sorted tuples)."""
    response = client.get(path, HTTP_ACCEPT="application/openmetrics-text, text/plain")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    series: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        samples = series.setdefault(family.name, {})
        for sample in family.samples:
            samples[tuple(sorted(sample.labels.items()))] = sample.value
    return series


def labels(**values) -> tuple:
    return tuple(sorted(values.items()))


@pytest.fixture
def fleet():
    db1 = polled_server("db1")
    never = builders.server("db2")  # registered, never polled
    orders = range_table(db1)
    hash_table(db1)
    builders.alert(db1, rule="runway", severity="critical", of=orders)
    builders.alert(db1, rule="skew", severity="warning", of=orders)
    builders.alert(db1, rule="hotspot", severity="warning", of=orders)
    builders.alert(db1, rule="hotspot", state=Alert.State.RESOLVED, of=orders)
    builders.silence(server=db1, rule="hotspot")
    return db1, never


def test_a_scrape_without_a_token_is_refused():
    response = APIClient().get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")


def test_a_viewer_reads_server_figures_as_the_api_shows_them(fleet, viewer_api):
    series = scrape(viewer_api)
    servers = {s["name"]: s for s in viewer_api.get("/api/v1/servers/").json()}
    assert series["partdash_up"] == {labels(server="db1"): 1.0, labels(server="db2"): 0.0}
    assert servers["db1"]["status"] == "ok" and servers["db2"]["status"] == "never"
    assert series["partdash_poll_duration_seconds"] == {labels(server="db1"): 1.25}
    assert (
        series["partdash_server_partitions"][labels(server="db1")] == (servers["db1"]["partitions"])
    )
    assert series["partdash_server_partitioned_tables"][labels(server="db1")] == 2
    assert series["partdash_server_limit"] == {
        labels(server="db1", limit="table_open_cache"): 400.0
    }
    assert series["partdash_server_limit_ratio"] == {
        labels(server="db1", limit="table_open_cache"): 512 / 400
    }
    age = series["partdash_last_poll_age_seconds"]
    assert list(age) == [labels(server="db1")] and 29 <= age[labels(server="db1")] < 120
    assert labels(server="db2") not in series["partdash_last_success_timestamp_seconds"]


def test_table_figures_match_the_servers_tables_list(fleet, viewer_api):
    db1, _ = fleet
    db1.export_tables = True  # `events` has no finding: shown only opted in
    db1.save(update_fields=["export_tables"])
    series = scrape(viewer_api)
    rows = viewer_api.get(f"/api/v1/servers/{db1.pk}/tables/").json()
    assert {row["name"] for row in rows} == {"orders", "events"}
    for row in rows:
        key = labels(server="db1", schema=row["schema"], table=row["name"])
        assert series["partdash_table_partitions"][key] == row["partition_count"]
        assert series["partdash_table_rows"][key] == row["rows"]
        assert series["partdash_table_hot_partitions"][key] == len(row["hotspots"])
        assert series["partdash_table_score"][key] == row["score"]
        if row["data_bytes"] is None:
            assert key not in series["partdash_table_data_bytes"]
        else:
            assert series["partdash_table_data_bytes"][key] == row["data_bytes"]
            assert series["partdash_table_index_bytes"][key] == row["index_bytes"]
            assert series["partdash_table_file_bytes"][key] == row["file_bytes"]
    orders = labels(server="db1", schema="shop", table="orders")
    events = labels(server="db1", schema="shop", table="events")
    api = {row["name"]: row for row in rows}
    assert series["partdash_table_skew_ratio"] == {orders: api["orders"]["skew"]["max_mean_ratio"]}
    assert series["partdash_table_runway_seconds"] == {
        orders: api["orders"]["runway"]["days_left"] * 86400
    }
    assert series["partdash_table_catchall_rows"] == {
        orders: api["orders"]["runway"]["catchall_rows"]
    }
    assert series["partdash_table_compression_failure_ratio"] == {
        orders: api["orders"]["compression"]["failure_rate"]
    }
    assert api["events"]["runway"] is None and events not in series["partdash_table_runway_seconds"]


def table_keys(series: dict) -> set[tuple]:
    """The tables of every per-table family."""
    return {key for name, samples in series.items() if "_table_" in name for key in samples}


def test_a_table_without_a_finding_has_no_table_series_by_default(fleet, viewer_api):
    db1, _ = fleet
    series = scrape(viewer_api)
    orders = labels(server="db1", schema="shop", table="orders")
    assert table_keys(series) == {orders}  # `events` scores 0: no finding
    assert series["partdash_metrics_exported_tables"] == {(): 1.0}
    assert series["partdash_fleet_partitioned_tables"] == {(): 2.0}
    assert series["partdash_fleet_servers"][labels(status="ok")] == 1
    assert series["partdash_fleet_servers"][labels(status="never")] == 1


def test_a_table_opted_in_has_its_series_by_itself_or_by_its_server(fleet, viewer_api):
    db1, _ = fleet
    events = db1.tables.get(name="events")
    events.export_partitions = True
    events.save(update_fields=["export_partitions"])
    key = labels(server="db1", schema="shop", table="events")
    series = scrape(viewer_api)
    assert series["partdash_table_partitions"][key] == 8 and len(table_keys(series)) == 2
    events.export_partitions = False
    events.save(update_fields=["export_partitions"])
    assert key not in table_keys(scrape(viewer_api))
    db1.export_tables = True
    db1.save(update_fields=["export_tables"])
    series = scrape(viewer_api)
    assert series["partdash_table_rows"][key] == 800
    assert series["partdash_metrics_exported_tables"] == {(): 2.0}


def test_a_per_server_scrape_has_that_server_s_series_alone(fleet, viewer_api):
    db1, _ = fleet
    db3 = polled_server("db3")
    range_table(db3)
    builders.alert(db3, rule="skew", severity="critical", of=db3.tables.get())
    whole = scrape(viewer_api)
    one = scrape(viewer_api, "/metrics?server=db3")
    assert not any(name.startswith(("partdash_fleet_", "partdash_metrics_")) for name in one)
    for name, samples in whole.items():
        if name.startswith(("partdash_fleet_", "partdash_metrics_", "partdash_last_poll_age")):
            continue  # the fleet's; and an age, which grows between the two scrapes
        mine = {key: value for key, value in samples.items() if ("server", "db3") in key}
        assert one.get(name, {}) == mine, name
    assert one["partdash_alerts_firing"][labels(server="db3", rule="skew", severity="critical")]
    assert one["partdash_table_rows"] == {labels(server="db3", schema="shop", table="orders"): 1e4}
    two = scrape(viewer_api, "/metrics?server=db3&server=db1")
    assert set(two["partdash_up"]) == {labels(server="db1"), labels(server="db3")}


def test_a_per_server_scrape_of_an_unknown_server_is_a_404(fleet, viewer_api):
    response = viewer_api.get("/metrics", {"server": ["db1", "nope"]})
    assert response.status_code == 404
    assert response.content == b"no server named nope\n"
    assert APIClient().get("/metrics", {"server": "db1"}).status_code == 401


def test_runway_is_absent_where_its_days_are_unknown(db, viewer_api):
    db1 = polled_server("db1")
    unknown = {"days_left": None, "catchall_rows": 0, "empty_future_partitions": 3}
    range_table(db1, health={"runway": unknown, "hotspots": []})
    series = scrape(viewer_api)
    key = labels(server="db1", schema="shop", table="orders")
    assert key not in series["partdash_table_runway_seconds"]
    assert series["partdash_table_catchall_rows"][key] == 0


def test_alerts_firing_are_counted_per_rule_and_severity_as_the_api_lists_them(fleet, viewer_api):
    series = scrape(viewer_api)
    listed = viewer_api.get("/api/v1/alerts/", {"state": "firing"}).json()
    every = Counter((a["server"], a["rule"], a["severity"]) for a in listed)
    held = Counter((a["server"], a["rule"], a["severity"]) for a in listed if a["silenced"])
    firing, silenced = series["partdash_alerts_firing"], series["partdash_alerts_silenced"]
    for (server, rule, severity), number in every.items():
        assert firing[labels(server=server, rule=rule, severity=severity)] == number
    assert sum(firing.values()) == sum(every.values()) == 3
    assert silenced[labels(server="db1", rule="hotspot", severity="warning")] == 1
    assert sum(silenced.values()) == sum(held.values()) == 1
    # Every combination is shown, so a sum over a quiet server is 0, not empty.
    assert firing[labels(server="db2", rule="unreachable", severity="critical")] == 0


def test_partitions_are_shown_only_for_tables_opted_in(fleet, viewer_api):
    db1, _ = fleet
    assert not scrape(viewer_api).get("partdash_partition_rows")
    db1.tables.filter(name="orders").update(export_partitions=True)
    series = scrape(viewer_api)
    orders = db1.tables.get(name="orders")
    listed = viewer_api.get(f"/api/v1/tables/{orders.pk}/partitions/").json()
    assert len(series["partdash_partition_rows"]) == len(listed) == 4
    for partition in listed:
        key = labels(server="db1", schema="shop", table="orders", partition=partition["name"])
        key = tuple(sorted([*key, ("subpartition", "")]))
        assert series["partdash_partition_rows"][key] == partition["rows"]
        assert series["partdash_partition_data_bytes"][key] == partition["data_bytes"]
        assert (
            series["partdash_partition_disk_write_bytes_per_second"][key]
            == (partition["write_bytes_per_s"])
        )
        rows_changed = series["partdash_partition_rows_changed_per_second"]
        assert rows_changed.get(key) == partition["rows_changed_per_s"]
        assert series["partdash_partition_hot"][key] == float(partition["is_hotspot"])
        assert key not in series["partdash_partition_disk_read_bytes_per_second"]


def test_every_family_has_help_and_a_type(fleet, viewer_api):
    text = viewer_api.get("/metrics").content.decode()
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")}
    helps = {line.split()[2] for line in text.splitlines() if line.startswith("# HELP")}
    assert names == helps
    assert all(name.startswith("partdash_") for name in names)


@pytest.mark.parametrize("tables", [10, 100])
def test_a_scrape_runs_a_fixed_number_of_queries(tables, django_assert_max_num_queries):
    """Servers, their latest snapshots, tables, the opted-in tables' partitions, whether
    a silence is in force, alerts: six queries whatever the number of tables
    (authentication is the API's)."""
    opted = 0
    for number in range(2):
        server = polled_server(f"db{number}")
        for serial in range(tables // 2):
            opted += serial % 10 == 0
            range_table(server, name=f"t{serial}", export_partitions=serial % 10 == 0)
    with django_assert_max_num_queries(6):
        text = exposition().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert len(families["partdash_table_rows"].samples) == tables
    assert len(families["partdash_partition_rows"].samples) == 4 * opted


def test_promtool_finds_nothing_to_lint(fleet, viewer_api):
    """Prometheus's own linter (`promtool check metrics`) on a scrape with every family
    present, partitions opted in: base units (runway in seconds, not days), help texts,
    names. It printed "use base unit seconds instead of days" for the runway before."""
    fleet[0].tables.update(export_partitions=True)
    text = viewer_api.get("/metrics").content
    assert b"partdash_table_runway_seconds" in text
    assert b"partdash_partition_rows_changed_per_second" in text
    lint = subprocess.run(
        [shutil.which("promtool") or "/usr/bin/promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        check=False,
    )
    assert (lint.returncode, lint.stdout + lint.stderr) == (0, b"")


def test_findings_are_shown_per_kind_with_the_worst_severity(db, viewer_api):
    """What the finding rules judge, for Prometheus's rules (docker/prometheus): one
    sample per kind a table or a server holds, at its worst severity; none where none."""
    db1 = polled_server("db1", poll_interval=20)
    findings = [
        {"kind": "runway", "severity": "critical", "score": 90.0, "message": "", "fix": None},
        {"kind": "skew", "severity": "warning", "score": 20.0, "message": "", "fix": None},
        {"kind": "skew", "severity": "critical", "score": 10.0, "message": "", "fix": None},
    ]
    range_table(db1, health={"findings": findings, "hotspots": []})
    hash_table(db1)
    snapshot = db1.snapshots.latest("taken_at")
    snapshot.pressure = {
        **snapshot.pressure,
        "findings": [{"kind": "pressure", "severity": "warning", "score": 5.0, "message": ""}],
    }
    snapshot.save(update_fields=["pressure"])
    builders.server("db2")  # never polled: no finding, its interval all the same
    series = scrape(viewer_api)
    table = {"server": "db1", "schema": "shop", "table": "orders"}
    assert series["partdash_table_finding"] == {
        labels(**table, kind="runway", severity="critical"): 1.0,
        labels(**table, kind="skew", severity="critical"): 1.0,
    }
    assert series["partdash_server_finding"] == {
        labels(server="db1", kind="pressure", severity="warning"): 1.0
    }
    assert series["partdash_server_poll_interval_seconds"] == {
        labels(server="db1"): 20.0,
        labels(server="db2"): 60.0,
    }


def test_the_dead_mans_switch_figures_are_exported(fleet, viewer_api, redis_server):
    """When each server was last polled successfully, and when each worker last finished
    a task (its record in Redis, `partdash.lib.liveness`): the shipped rules'
    (docker/prometheus/partdash-rules.yml) inputs."""
    from partdash.lib import liveness
    from partdash.lib.shared_redis import redis_client

    db1, _ = fleet
    client = redis_client()
    for key in client.scan_iter(f"{liveness.KEY_PREFIX}*"):
        client.delete(key)
    liveness.record_task(client, "w1@host", "started", now=1_800_000_000.0)
    liveness.record_task(client, "w1@host", "finished", now=1_800_000_002.5)
    liveness.record_task(client, "w2@host", "started", now=1_800_000_003.0)  # none finished
    series = scrape(viewer_api)
    assert series["partdash_last_poll_success_timestamp_seconds"] == {
        labels(server="db1"): db1.last_success_at.timestamp()
    }
    assert series["partdash_worker_last_task_timestamp_seconds"] == {
        labels(worker="w1@host"): 1_800_000_002.5
    }
