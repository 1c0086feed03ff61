"""Every finding carries its fix: advice, and the statement where partdash can write one
(pure; tests/health/test_fixes_on_mariadb.py runs the statements on a server)."""

from datetime import UTC, date, datetime, timedelta

import pytest

from partdash.health import findings as rules
from partdash.health.bounds import TO_DAYS_OFFSET
from partdash.health.compression import Compression
from partdash.health.fixes import (
    TableFacts,
    bare_column,
    column_of,
    compression_fix,
    limit_fix,
    stride_period,
    table_fix,
    working_set_fix,
)
from partdash.health.partitions import PartitionState
from partdash.health.pressure import (
    WARN_RATIO,
    limit_pressure,
    written_against_pool,
)
from partdash.health.runway import table_runway

NOW = datetime(2025, 3, 10, 12, tzinfo=UTC)


def facts(**fields) -> TableFacts:
    values = {
        "schema": "shop",
        "name": "orders",
        "method": "HASH",
        "expression": "`id`",
        "partitions": [PartitionState(f"p{i}", ordinal=i) for i in range(4)],
        "now": NOW,
    }
    return TableFacts(**{**values, **fields})


# -- every kind -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind", ["skew", "hotspot", "runway", "compression", "fragmentation", "staleness"]
)
def test_every_table_finding_has_advice(kind):
    fix = table_fix(kind, facts(), rules.RUNWAY_HORIZON_DAYS)
    assert fix is not None and fix.advice


def test_a_finding_with_its_fix_is_a_plain_dict_of_advice_and_sql():
    finding = rules.fragmentation_finding(2, 200 << 20)
    fixed = rules.with_fix(finding, facts(fragmented=["p1", "p3"], fragmented_bytes=200 << 20))
    assert fixed.fix.sql == "ALTER TABLE `shop`.`orders` REBUILD PARTITION `p1`, `p3`"
    assert "200 MiB" in fixed.fix.advice and "blocks writes" in fixed.fix.advice


# -- fragmentation, staleness -----------------------------------------------------------


def test_rebuild_and_analyze_name_only_their_partitions_quoted():
    odd = [PartitionState(name, ordinal=i) for i, name in enumerate(["p`0", "día 1", "p2"])]
    table = facts(schema="s`x", name="t y", partitions=odd, fragmented=["p`0"], stale=["día 1"])
    assert table_fix("fragmentation", table, 28).sql == (
        "ALTER TABLE `s``x`.`t y` REBUILD PARTITION `p``0`"
    )
    assert table_fix("staleness", table, 28).sql == (
        "ALTER TABLE `s``x`.`t y` ANALYZE PARTITION `día 1`"
    )


def test_all_partitions_or_very_many_are_spelled_all():
    table = facts(stale=["p0", "p1", "p2", "p3"])
    assert table_fix("staleness", table, 28).sql.endswith("ANALYZE PARTITION ALL")
    many = [PartitionState(f"p{i}", ordinal=i) for i in range(300)]
    table = facts(partitions=many, stale=[f"p{i}" for i in range(150)])
    assert table_fix("staleness", table, 28).sql.endswith("ANALYZE PARTITION ALL")


# -- compression ------------------------------------------------------------------------


def failing(zip_kib: int, kind="row") -> Compression:
    return Compression(kind, 16 / zip_kib, 0.3, "fails", True, True, zip_kib * 1024)


def test_failing_compression_doubles_the_key_block_size():
    fix = compression_fix(facts(compression=failing(4)))
    assert fix.sql == "ALTER TABLE `shop`.`orders` KEY_BLOCK_SIZE=8"
    assert "from 4 to 8" in fix.advice and "PAGE_COMPRESSED=1" in fix.advice


def test_data_that_does_not_compress_is_told_so_first_and_to_stop_compressing():
    failing_at_8 = Compression("row", 2.0, 0.4, "fails", True, True, 8192, does_not_compress=True)
    fix = compression_fix(facts(compression=failing_at_8))
    assert fix.advice.startswith("The data does not compress to half its size")
    assert fix.sql == "ALTER TABLE `shop`.`orders` ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0"
    assert f"{fix.sql} PAGE_COMPRESSED=1" in fix.advice and "KEY_BLOCK_SIZE=16" not in fix.advice


def test_failing_at_the_largest_key_block_size_is_advice_only():
    fix = compression_fix(facts(compression=failing(16)))
    assert fix.sql is None and "does not compress" in fix.advice
    page = compression_fix(facts(compression=failing(16, kind="page")))
    assert page.sql is None and "punch holes" in page.advice


# -- skew, hotspots ---------------------------------------------------------------------


def test_a_strided_hash_table_gets_a_prime_number_of_partitions():
    rows = [8000, 0, 0, 0, 8000, 0, 0, 0]
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    fix = table_fix("skew", facts(partitions=parts), 28)
    assert fix.sql == "ALTER TABLE `shop`.`orders` ADD PARTITION PARTITIONS 3"  # 11
    assert "every 4th partition" in fix.advice


@pytest.mark.parametrize(
    ("rows", "period"),
    [
        ([8000, 0, 0, 0, 8000, 0, 0, 0], 4),
        ([0, 900, 0, 1000, 0, 1100, 0, 950], 2),
        ([0, 0, 5000, 0, 0, 0, 0, 0], 8),
        ([8000, 1143, 1143, 1143, 1143, 1143, 1143, 1143], None),  # hot values, no stride
        ([0, 0, 0], None),
    ],
)
def test_the_stride_of_a_hash_table_from_where_its_rows_are(rows, period):
    assert stride_period(rows) == period


@pytest.mark.parametrize(
    ("method", "expression"),
    [("HASH", "`id`"), ("KEY", "`id`"), ("LIST", "`region`"), ("RANGE", "`id`")],
)
def test_other_skew_is_advice_only(method, expression):
    fix = table_fix("skew", facts(method=method, expression=expression), 28)
    assert fix.sql is None and fix.advice


def test_the_column_of_an_expression_is_spelled_as_stored():
    assert column_of("to_days(`Día`)") == "Día"
    assert column_of("`a``b`") == "a`b"
    assert column_of("`d`,`id`") == "d"
    assert column_of("year(`d`) * 100") is None
    assert bare_column("`user id`") == "user id" and bare_column("(id)") == "id"
    assert bare_column("to_days(`d`)") is None


# -- runway -----------------------------------------------------------------------------


def to_days(day: date) -> str:
    return str(day.toordinal() + TO_DAYS_OFFSET)


def daily(catchall_rows: int) -> list[PartitionState]:
    days = [NOW.date() - timedelta(days=n) for n in (3, 2, 1)]
    parts = [
        PartitionState(f"p{d:%Y%m%d}", ordinal=i, description=to_days(d + timedelta(1)), rows=9)
        for i, d in enumerate(days)
    ]
    return [*parts, PartitionState("pmax", ordinal=9, description="MAXVALUE", rows=catchall_rows)]


def runway_fix_of(parts, method="RANGE", expression="to_days(`d`)"):
    runway = table_runway(method, expression, parts, NOW)
    table = facts(method=method, expression=expression, partitions=parts, runway=runway)
    return table_fix("runway", table, rules.RUNWAY_HORIZON_DAYS)


def test_a_runway_fix_says_what_it_adds_and_moves():
    fix = runway_fix_of(daily(catchall_rows=1234))
    assert fix.sql.startswith("ALTER TABLE `shop`.`orders` REORGANIZE PARTITION `pmax` INTO")
    assert "Add 28 daily partitions, `p20250310` to `p20250406`" in fix.advice
    assert "~1,234 rows move" in fix.advice
    # Reorganized partitions' statistics read 0 rows until analysed.
    assert "then run ALTER TABLE `shop`.`orders` ANALYZE PARTITION ALL." in fix.advice


def test_a_short_runway_fix_analyzes_only_what_it_wrote():
    parts = [
        PartitionState("p202503", ordinal=0, description=to_days(date(2025, 4, 1)), rows=9),
        PartitionState("pmax", ordinal=1, description="MAXVALUE", rows=5),
    ]
    fix = runway_fix_of(parts)
    assert "ANALYZE PARTITION `p202504`, `pmax`." in fix.advice


def test_an_empty_catchall_is_quick():
    fix = runway_fix_of(daily(catchall_rows=0))
    assert "It is empty, so this is quick." in fix.advice


def test_an_id_range_reaches_past_the_auto_increment_and_the_fill_rate():
    parts = [
        PartitionState("p0", ordinal=0, description="1000", rows=999, autoinc=None),
        PartitionState("p1", ordinal=1, description="2000", rows=1000, autoinc=None),
        PartitionState("pmax", ordinal=2, description="MAXVALUE", rows=2500, autoinc=4501),
    ]
    runway = table_runway("RANGE", "`id`", parts, NOW, fill_rate_per_day=10)
    fix = table_fix("runway", facts(method="RANGE", partitions=parts, runway=runway), 28)
    # Ids up to 4,500 (AUTO_INCREMENT 4,501) and 28 days at 10 a day: past 4,781.
    assert "LESS THAN (5000)" in fix.sql and "LESS THAN (6000)" not in fix.sql


def test_a_runway_that_cannot_be_planned_still_says_what_to_do():
    parts = [
        PartitionState("a", ordinal=0, description="202401"),
        PartitionState("pmax", ordinal=1, description="MAXVALUE", rows=5),
    ]
    expression = "year(`d`) * 100 + month(`d`)"
    table = facts(method="RANGE", expression=expression, partitions=parts)
    fix = table_fix("runway", table, 28)
    assert fix.sql is None
    assert "REORGANIZE PARTITION `pmax` INTO" in fix.advice


# -- server pressure --------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["table_open_cache", "table_definition_cache"])
def test_a_raised_cache_clears_the_finding(setting):
    limit = limit_pressure(setting, 4321, 4000)
    finding = rules.limit_finding(limit)
    assert finding.fix.sql == f"SET GLOBAL {setting} = 6500"
    assert f"{setting} = 6500" in finding.fix.advice  # the my.cnf line
    assert rules.limit_finding(limit_pressure(setting, 4321, 6500)) is None
    assert 4321 / 6500 < WARN_RATIO


def test_open_files_limit_needs_my_cnf_and_a_restart():
    fix = limit_fix(limit_pressure("open_files_limit", 900, 1000))
    assert fix.sql is None
    assert "open_files_limit = 1400" in fix.advice and "LimitNOFILE=1400" in fix.advice


def test_a_cache_past_its_maximum_is_advice_only():
    fix = limit_fix(limit_pressure("table_open_cache", 2_000_000, 1_048_576))
    assert fix.sql is None and "merge or drop" in fix.advice


def test_a_buffer_pool_for_the_written_partitions_in_whole_chunks():
    verdict = written_against_pool(900 << 20, 40, 1 << 30)
    fix = working_set_fix(verdict)
    assert fix.sql == f"SET GLOBAL innodb_buffer_pool_size = {1408 << 20}"
    assert "innodb_buffer_pool_size = 1408M" in fix.advice
    assert not written_against_pool(900 << 20, 40, 1408 << 20).is_finding
    assert rules.working_set_finding(verdict).fix == fix
