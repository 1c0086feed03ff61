"""Server pressure: partitions against the server's limits, the written working set
against the buffer pool, fragmentation and stale statistics (the pure
`partdash.health.pressure`)."""

from datetime import timedelta

import pytest

from partdash.health import pressure
from tests.health.builders import NOW, MiB, part

GiB = 1 << 30


@pytest.mark.parametrize(
    ("partitions", "limit", "ratio", "level"),
    [
        (64_000, 400, 160.0, "critical"),
        (300, 400, 0.75, "ok"),
        (320, 400, 0.8, "warn"),
        (400, 400, 1.0, "warn"),
        (401, "400", 1.0025, "critical"),
        (10, "0", None, "unknown"),
        (10, None, None, "unknown"),
        (10, "OFF", None, "unknown"),
    ],
)
def test_partitions_against_a_limit(partitions, limit, ratio, level):
    result = pressure.limit_pressure("table_open_cache", partitions, limit)
    assert result.ratio == (pytest.approx(ratio) if ratio is not None else None)
    assert result.level == level


def test_server_limits_read_the_three_settings_from_show_variables_strings():
    variables = {"table_open_cache": "400", "table_definition_cache": "400"}
    result = pressure.server_limits(64_000, variables)
    assert [(r.setting, r.level) for r in result] == [
        ("table_open_cache", "critical"),
        ("table_definition_cache", "critical"),
        ("open_files_limit", "unknown"),
    ]


def test_the_written_working_set_against_the_buffer_pool():
    partitions = [
        part("p0", 1, 0, data_bytes=600 * MiB, index_bytes=200 * MiB, stats_updated_at=NOW),
        part("p1", 1, 1, data_bytes=300 * MiB, index_bytes=100 * MiB),
        part("p2", 1, 2, data_bytes=5 * GiB, index_bytes=GiB),  # not written
    ]
    result = pressure.working_set(partitions, {"p0", "p1"}, str(GiB))
    assert result.bytes == 1200 * MiB
    assert result.ratio == pytest.approx(1200 / 1024)
    assert result.partitions == ["p0", "p1"]
    assert result.is_finding
    assert "insert rate collapses" in result.reason
    assert result.estimated
    assert result.as_of == NOW


def test_a_working_set_that_fits_is_no_finding():
    partitions = [part("p0", 1, data_bytes=100 * MiB, index_bytes=0)]
    result = pressure.working_set(partitions, ["p0"], GiB)
    assert result.ratio == pytest.approx(100 / 1024)
    assert not result.is_finding


def test_a_working_set_without_buffer_pool_size_is_unknown():
    result = pressure.working_set([part("p0", 1, data_bytes=1, index_bytes=1)], ["p0"], None)
    assert result.ratio is None
    assert not result.is_finding


@pytest.mark.parametrize(
    ("file_bytes", "data", "index", "free", "is_finding"),
    [
        (GiB, 600 * MiB, 100 * MiB, 324 * MiB, True),
        (GiB, 900 * MiB, 100 * MiB, 24 * MiB, False),
        (8 * MiB, 2 * MiB, MiB, 5 * MiB, False),  # a fresh file's free extents
        (100 * MiB, 200 * MiB, 0, 0, False),  # statistics newer than the file size
    ],
)
def test_fragmentation_is_free_space_over_the_file(file_bytes, data, index, free, is_finding):
    state = part("p0", 1, file_bytes=file_bytes, data_bytes=data, index_bytes=index)
    result = pressure.fragmentation(state)
    assert result.data_free == free
    assert result.ratio == pytest.approx(free / file_bytes)
    assert result.is_finding is is_finding


def test_fragmentation_of_unknown_sizes_is_unknown():
    result = pressure.fragmentation(part("p0", 1, file_bytes=None, data_bytes=1, index_bytes=1))
    assert (result.data_free, result.ratio, result.is_finding) == (None, None, False)


@pytest.mark.parametrize(
    ("modified", "rows", "ratio", "is_stale"),
    [
        (3000, 10_000, 0.3, True),
        (1500, 10_000, 0.15, False),  # InnoDB's 10% recalculation is due, not overdue
        (500, 1000, 0.5, False),  # too few changes to matter
        (2000, 0, 1.0, True),
        (0, 0, 0.0, False),
        (None, 100, None, False),
        (5, None, None, False),
    ],
)
def test_rows_changed_make_statistics_stale_only_where_innodb_does_not_recalculate(
    modified, rows, ratio, is_stale
):
    state = part("p0", rows, modified_counter=modified)
    result = pressure.staleness(state, NOW, recalculates=False)
    assert result.modified_ratio == ratio
    assert result.is_stale is is_stale
    # Where InnoDB recalculates (the default), inserts and deletes past a tenth reset the
    # counter themselves: what it holds beyond that are UPDATEs, which move no row count.
    assert not pressure.staleness(state, NOW).is_stale


def test_an_update_loop_on_exact_statistics_is_not_stale():
    # Measured on MariaDB 10.11.19: 65 UPDATEs of 20 rows, counter 1,300, n_rows 900 = COUNT(*)
    updated = part("p2", 900, data_bytes=16384, file_bytes=196608, modified_counter=1300)
    assert pressure.stale_partitions([updated], NOW) == []


def _rewritten_table():
    """p0/p1 analysed (29,952 rows in 289 pages), p2 rewritten: an empty tree's statistics
    over a 5 MiB file (the figures of a REBUILD measured on MariaDB 10.11.19)."""
    analysed = {"data_bytes": 289 * 16384, "index_bytes": 0, "page_size": 16384}
    return [
        part("p0", 29_952, 0, allocated_bytes=12_587_008, **analysed),
        part("p1", 29_952, 1, allocated_bytes=12_587_008, **analysed),
        part("p2", 0, 2, data_bytes=16384, index_bytes=0, allocated_bytes=5_246_976),
    ]


def test_a_rewritten_partition_with_empty_statistics_over_a_full_file_is_stale():
    (stale,) = pressure.stale_partitions(_rewritten_table(), NOW)
    assert stale.name == "p2" and stale.rows == 0
    assert 25_000 < stale.file_rows < 35_000  # 29,952 really
    assert "statistics say 0 rows, its file holds ~" in stale.reason


def test_fixes_count_a_rewritten_partition_by_its_file():
    partitions = _rewritten_table()
    counted = pressure.with_file_rows(partitions, pressure.stale_partitions(partitions, NOW))
    assert [p.rows for p in counted][:2] == [29_952, 29_952]
    assert 25_000 < counted[2].rows < 35_000


def test_an_empty_partition_in_an_empty_file_is_not_stale():
    partitions = _rewritten_table()
    partitions[2] = part("p2", 0, 2, data_bytes=16384, allocated_bytes=65536)
    assert pressure.stale_partitions(partitions, NOW) == []


@pytest.mark.parametrize(
    ("auto_recalc", "options", "recalculates"),
    [
        ("ON", "", True),
        (None, "", True),
        ("OFF", "", False),
        ("ON", "stats_auto_recalc=0", False),
        ("OFF", "STATS_AUTO_RECALC=1", True),
    ],
)
def test_whether_innodb_recalculates_a_tables_statistics(auto_recalc, options, recalculates):
    assert pressure.recalculates_statistics(auto_recalc, options) is recalculates


def test_old_statistics_are_shown_as_old_but_not_stale():
    state = part("p0", 1000, modified_counter=0, stats_updated_at=NOW - timedelta(days=30))
    result = pressure.staleness(state, NOW)
    assert result.age_seconds == 30 * 86400
    assert result.is_old
    assert not result.is_stale


def test_stale_partitions_lists_only_the_stale():
    partitions = [
        part("p0", 10_000, 0, modified_counter=5000),
        part("p1", 10_000, 1, modified_counter=10),
    ]
    stale = pressure.stale_partitions(partitions, NOW, recalculates=False)
    assert [s.name for s in stale] == ["p0"]
