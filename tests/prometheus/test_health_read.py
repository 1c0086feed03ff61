"""A scrape reads only what the finding kinds' figures need of each table's stored
health (`Figure.paths`, `HealthValues` on PostgreSQL): the figures it shows are those the
whole health gives, for every shape a stored health takes, on either store."""

import pytest
from django.db import connection

from partdash.metrics.models import HealthValues, PartitionedTable
from partdash.prometheus import exposition
from tests.prometheus.exposition_rows import polled_server, range_table

pytestmark = pytest.mark.django_db

FIX = {"sql": "ALTER TABLE `shop`.`t` REORGANIZE PARTITION ...", "advice": "x" * 400}

HEALTHS = {
    "empty": {},
    "every figure": {
        "skew": {"max_mean_ratio": 5.5, "cv": 0.8, "reason": "uneven"},
        "hotspots": ["p3", "p4#p4sp0"],
        "runway": {"days_left": 2.5, "catchall_rows": 1200, "reason": None},
        "compression": {"failure_rate": 0.125, "ratio": 2.0},
        "drift": {"differences": ["partitions", "expression"], "groups": [1]},
        "retention": {"policy_id": 3, "overdue_partitions": 4, "overdue_days": 1.5},
        "pruning": {"unpruned": 2, "worst": [{"digest": "abc", "text": "SELECT 1"}]},
        "findings": [
            {"kind": "runway", "severity": "critical", "score": 150.0, "fix": FIX},
            {"kind": "skew", "severity": "warning", "score": 20.0, "fix": FIX},
            {"kind": "skew", "severity": "critical", "score": 10.0, "fix": None},
        ],
    },
    # Present but empty, null or without the key a figure reads: each as the whole
    # health reads it (drift without differences is 0 differences, not absent).
    "empty parts": {
        "skew": {},
        "hotspots": [],
        "runway": {"days_left": None, "catchall_rows": 0},
        "compression": None,
        "drift": {"groups": [1]},
        "retention": {"policy_id": None, "overdue_partitions": 4},
        "pruning": {},
        "findings": [],
    },
    "nulls": {
        "skew": None,
        "hotspots": None,
        "runway": None,
        "drift": None,
        "retention": None,
        "pruning": {"unpruned": None},
        "findings": None,
    },
    "drift empty": {"drift": {}},
    "a finding without its severity": {"findings": [{"kind": "hotspot", "score": 5.0}]},
}


@pytest.fixture
def tables():
    db1 = polled_server("db1")
    return {
        shape: range_table(db1, name=f"t{n}", health=health, score=1.0)
        for n, (shape, health) in enumerate(HEALTHS.items())
    }


def test_every_figure_read_is_what_the_whole_health_gives(tables):
    shown = {values["name"]: values["figures"] for values in exposition.exported_tables(None)}
    for shape, table in tables.items():
        whole = exposition.table_figures(
            {**PartitionedTable.objects.values(*exposition.TABLE_COLUMNS).get(pk=table.pk)}
        )
        figures = shown[table.name]
        assert {**figures, "findings": None} == {**whole, "findings": None}, shape
        assert exposition.worst_findings(figures["findings"]) == exposition.worst_findings(
            whole["findings"]
        ), shape


def test_on_postgresql_the_scrape_reads_the_paths_alone(tables):
    if connection.vendor != "postgresql":
        pytest.skip("HealthValues is PostgreSQL's (elsewhere the whole health is read)")
    paths = exposition.health_paths()
    assert paths is not None and ("drift",) in paths and ("skew", "max_mean_ratio") in paths
    read = (
        PartitionedTable.objects.filter(pk=tables["every figure"].pk)
        .annotate(read=HealthValues("health", paths))
        .values_list("read", flat=True)
        .get()
    )
    assert read[-1] == [["runway", "critical"], ["skew", "warning"], ["skew", "critical"]]
    assert dict(zip(paths, read, strict=False))[("skew", "max_mean_ratio")] == 5.5
    # The fixes stay in the store: a few bytes a table, not its whole health.
    assert "REORGANIZE" not in str(read)


def test_a_path_must_be_the_code_s_own_key_names():
    with pytest.raises(ValueError, match="not a path"):
        HealthValues("health", [("skew", "x'; DROP TABLE y; --")])
