"""/metrics after a real poll of MariaDB: rows, partitions, skew and runway as the API
shows them; a table without a finding only once its server is opted in."""

import pytest

from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests.prometheus.test_metrics_endpoint import labels, scrape
from tests.sql import run


@pytest.mark.django_db
def test_a_polled_server_s_figures_match_the_api(mariadb, make_server, new_schema, viewer_api):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        # Half the rows in p0: a skew ratio of 4 over 8 partitions.
        "CREATE TABLE skewed (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8",
        "INSERT INTO skewed SELECT seq * 8 FROM seq_1_to_4000",
        "INSERT INTO skewed SELECT seq * 8 + seq % 7 + 1 FROM seq_1_to_4000",
        # Rows in the catch-all: no runway left (0 days).
        "CREATE TABLE spilled (id INT PRIMARY KEY) PARTITION BY RANGE (id) ("
        "PARTITION p0 VALUES LESS THAN (1000), PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO spilled SELECT seq FROM seq_1_to_1500",
        # An id range nobody writes to yet: its days left cannot be known.
        "CREATE TABLE ids (id INT PRIMARY KEY) PARTITION BY RANGE (id) ("
        "PARTITION p0 VALUES LESS THAN (1000), PARTITION p1 VALUES LESS THAN (2000), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO ids SELECT seq FROM seq_1_to_500",
        "ANALYZE TABLE skewed, spilled, ids",
    )
    server = make_server(mariadb, name="db1")
    report = poll_server(server)
    assert report.ok, report.error

    (listed,) = viewer_api.get("/api/v1/servers/").json()
    tables = {
        t["name"]: t
        for t in viewer_api.get(f"/api/v1/servers/{server.pk}/tables/").json()
        if t["schema"] == schema
    }
    assert set(tables) == {"skewed", "spilled", "ids"}
    # The series budget: `ids` has no finding, so no per-table series by default.
    assert tables["ids"]["score"] == 0 and tables["skewed"]["score"] > 0
    budget = scrape(viewer_api)
    assert labels(server="db1", schema=schema, table="ids") not in budget["partdash_table_rows"]
    assert labels(server="db1", schema=schema, table="skewed") in budget["partdash_table_rows"]
    Server.objects.filter(pk=server.pk).update(export_tables=True)

    series = scrape(viewer_api)
    assert series["partdash_up"][labels(server="db1")] == 1
    assert series["partdash_poll_duration_seconds"][labels(server="db1")] > 0
    assert series["partdash_server_partitions"][labels(server="db1")] == listed["partitions"]
    for name, table in tables.items():
        key = labels(server="db1", schema=schema, table=name)
        assert series["partdash_table_partitions"][key] == table["partition_count"]
        assert series["partdash_table_rows"][key] == table["rows"]
        ratio = (table["skew"] or {}).get("max_mean_ratio")
        assert series["partdash_table_skew_ratio"].get(key) == pytest.approx(ratio), table["skew"]
    skewed = labels(server="db1", schema=schema, table="skewed")
    assert series["partdash_table_skew_ratio"][skewed] == pytest.approx(4, rel=0.25)
    assert tables["skewed"]["partition_count"] == 8
    spilled = labels(server="db1", schema=schema, table="spilled")
    assert (
        series["partdash_table_runway_seconds"][spilled]
        == tables["spilled"]["runway"]["days_left"] * 86400
        == 0
    )
    assert (
        series["partdash_table_catchall_rows"][spilled]
        == (tables["spilled"]["runway"]["catchall_rows"])
        > 0
    )
    ids = labels(server="db1", schema=schema, table="ids")
    assert tables["ids"]["runway"]["days_left"] is None
    assert ids not in series["partdash_table_runway_seconds"]
    assert skewed not in series["partdash_table_runway_seconds"]  # HASH: no runway at all
