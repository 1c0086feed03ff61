"""Every finding carries its fix: advice, and the statement where partdash can write one
(pure; tests/health/test_fixes_on_mariadb.py runs the statements on a server)."""

from datetime import UTC, date, datetime, timedelta

import pytest

from partdash.health import findings as rules
from partdash.health.bounds import TO_DAYS_OFFSET
from partdash.health.compression import Compression
from partdash.health.fixes import (
    Fix,
    TableFacts,
    bare_column,
    column_of,
    compression_fix,
    limit_fix,
    safety_words,
    stored_fix,
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
from partdash.health.skew_fix import (
    is_list_default,
    new_partition_names,
    ordinal,
    stride_period,
)

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


def test_a_strided_hash_table_gets_a_prime_number_of_named_partitions():
    rows = [8000, 0, 0, 0, 8000, 0, 0, 0]
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    fix = table_fix("skew", facts(partitions=parts), 28)
    assert fix.sql == (  # 11: named, so no name can clash with one already used
        "ALTER TABLE `shop`.`orders` ADD PARTITION (PARTITION `p8`, PARTITION `p9`, "
        "PARTITION `p10`)"
    )
    assert "every 4th partition" in fix.advice
    # Rewritten partitions read 0 rows until analysed.
    assert fix.advice.endswith("then run ALTER TABLE `shop`.`orders` ANALYZE PARTITION ALL.")


@pytest.mark.parametrize(
    ("rows", "period"),
    [
        ([8000, 0, 0, 0, 8000, 0, 0, 0], 4),
        ([1000, 50, 0, 0, 1000, 0, 0, 0], 4),  # a stride and a few stray ids
        ([0, 900, 0, 1000, 0, 1100, 0, 950], 2),
        ([0, 0, 5000, 0, 0, 0, 0, 0], 8),
        ([8000, 1143, 1143, 1143, 1143, 1143, 1143, 1143], 8),  # the excess in one
        ([1200, 1100, 1150, 7100, 1180, 1120, 7050, 1130], None),  # p3 and p6: no stride
        ([0, 0, 0], None),
    ],
)
def test_the_stride_of_a_hash_table_from_where_its_rows_are(rows, period):
    assert stride_period(rows) == period


def test_a_few_values_in_partitions_no_stride_explains_get_no_statement():
    rows = [1200, 1100, 1150, 7100, 1180, 1120, 7050, 1130]
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    fix = table_fix("skew", facts(partitions=parts), 28)
    assert fix.sql is None and fix.advice.startswith("A few values of the partitioning key")


def test_all_the_excess_in_one_hash_partition_asks_how_many_values_it_holds():
    rows = [8000, 1143, 1143, 1143, 1143, 1143, 1143, 1143]
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    fix = table_fix("skew", facts(partitions=parts), 28)
    assert fix.sql is None
    assert "SELECT COUNT(*), COUNT(DISTINCT `id`) FROM `shop`.`orders` PARTITION (`p0`)" in (
        fix.advice
    )
    assert "ADD PARTITION (PARTITION `p8`, PARTITION `p9`, PARTITION `p10`)" in fix.advice
    assert fix.advice.endswith("ANALYZE PARTITION ALL.")


@pytest.mark.parametrize(
    ("number", "words"),
    [
        (1, "1st"),
        (2, "2nd"),
        (3, "3rd"),
        (4, "4th"),
        (11, "11th"),
        (12, "12th"),
        (13, "13th"),
        (21, "21st"),
        (22, "22nd"),
        (23, "23rd"),
        (103, "103rd"),
        (111, "111th"),
        (113, "113th"),
    ],
)
def test_ordinals(number, words):
    assert ordinal(number) == words


@pytest.mark.parametrize(
    ("names", "count", "added"),
    [
        (["p1", "p2"], 1, ["p3"]),  # PARTITIONS 1 would name it p2: a duplicate
        (["p0", "p1", "p2"], 2, ["p3", "p4"]),
        (["part07", "part9"], 1, ["part10"]),
        (["a", "b", "P2"], 2, ["P3", "P4"]),
        (["x", "P3", "p2"], 1, ["p4"]),  # p3 is P3 to the server: names ignore case
        (["x1", "y2"], 2, ["p2", "p3"]),
    ],
)
def test_new_partitions_get_names_not_already_used(names, count, added):
    assert new_partition_names(names, count) == added


@pytest.mark.parametrize(
    ("method", "count", "sql"),
    [
        ("KEY", 8, "ADD PARTITION (PARTITION `p8`, PARTITION `p9`, PARTITION `p10`)"),
        ("KEY", 16, "ADD PARTITION (PARTITION `p16`, PARTITION `p17`, PARTITION `p18`)"),  # 19
        ("LINEAR KEY", 4, "PARTITION BY KEY (`id`) (PARTITION `p0`, PARTITION `p1`, "),
        ("LINEAR HASH", 4, "PARTITION BY HASH (`id`) (PARTITION `p0`, PARTITION `p1`, "),
    ],
)
def test_key_and_linear_skew_get_a_count_their_hash_spreads(method, count, sql):
    rows = [9000 if i % 2 == 0 else 0 for i in range(count)]
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    fix = table_fix("skew", facts(method=method, partitions=parts), 28)
    assert sql in fix.sql and "ANALYZE PARTITION ALL" in fix.advice


def test_one_key_partition_holding_the_excess_asks_how_many_values_it_holds():
    rows = [1000, 9000, 1000, 1000]  # one big tenant, or many ids the hash put in p1
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    fix = table_fix("skew", facts(method="KEY", expression="`tenant`", partitions=parts), 28)
    assert fix.sql is None
    assert "COUNT(DISTINCT `tenant`) FROM `shop`.`orders` PARTITION (`p1`)" in fix.advice
    assert "run ALTER TABLE `shop`.`orders` ADD PARTITION (PARTITION `p4`)" in fix.advice


def test_an_odd_key_count_is_a_few_values():
    parts = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate([9000, 10, 10])]
    fix = table_fix("skew", facts(method="KEY", partitions=parts), 28)
    assert fix.sql is None and fix.advice.startswith("A few values")


def list_fix(method: str, expression: str, descriptions: list[str]):
    rows = [1000] * (len(descriptions) - 1) + [9000]
    parts = [
        PartitionState(
            f"p{i}" if i < len(rows) - 1 else "p_other", ordinal=i, description=d, rows=r
        )
        for i, (d, r) in enumerate(zip(descriptions, rows, strict=True))
    ]
    return table_fix("skew", facts(method=method, expression=expression, partitions=parts), 28)


def test_a_big_list_default_partition_needs_its_values_in_lists_of_their_own():
    fix = list_fix("LIST COLUMNS", "`r`", ["'a','b'", "'c'", "MAXVALUE"])
    assert fix.sql is None and fix.advice.startswith("`p_other` is the DEFAULT partition")
    assert (
        "SELECT `r`, COUNT(*) FROM `shop`.`orders` PARTITION (`p_other`) GROUP BY `r` "
        "ORDER BY COUNT(*) DESC LIMIT 20" in fix.advice
    )
    assert "REORGANIZE PARTITION `p_other` INTO (PARTITION `p_<value>` VALUES IN (<value>)" in (
        fix.advice
    )
    assert "PARTITION `p_other` DEFAULT)" in fix.advice and "ANALYZE PARTITION ALL" in fix.advice


def test_a_big_list_partition_of_0_may_be_default_or_one_value():
    fix = list_fix("LIST", "`r`", ["1,2", "3", "0"])  # DEFAULT, or VALUES IN (0)
    assert fix.sql is None and "If it is the DEFAULT partition" in fix.advice
    assert "If it lists 0 alone, that one value holds most rows" in fix.advice


def test_a_big_list_is_split_into_lists():
    fix = list_fix("LIST", "`r`", ["1,2", "3", "4,5,6"])
    assert fix.sql is None and fix.advice.startswith("`p_other` holds most rows")
    assert "VALUES IN (<the other values>)" in fix.advice


@pytest.mark.parametrize(
    ("description", "others", "default"),
    [
        ("MAXVALUE", "'a'", True),  # LIST COLUMNS
        ("(MAXVALUE,MAXVALUE)", "(1,2)", True),
        ("0", "0,2", True),  # 0 is listed elsewhere: this one is DEFAULT
        ("0", "1,2", None),  # VALUES IN (0) reads the same: unknown
        ("1,0", "2", False),
    ],
)
def test_the_list_default_partition_as_information_schema_spells_it(description, others, default):
    parts = [
        PartitionState("p1", ordinal=0, description=others),
        PartitionState("px", ordinal=1, description=description),
    ]
    assert is_list_default(parts[1], parts) is default


@pytest.mark.parametrize(
    ("method", "expression"),
    [("HASH", "`id`"), ("LINEAR HASH", "`id`"), ("LIST", "`region`"), ("RANGE", "`id`")],
)
def test_skew_without_figures_is_advice_only(method, expression):
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


# -- safety -----------------------------------------------------------------------------


def sized(name: str, ordinal: int, rows: int, description: str | None = None):
    return PartitionState(
        name, ordinal=ordinal, rows=rows, data_bytes=rows * 100, index_bytes=rows * 10,
        description=description,
    )  # fmt: skip


def test_each_fix_says_what_running_it_does():
    parts = [sized("p0", 0, 1000), sized("p1", 1, 3000), sized("p2", 2, 5000)]
    table = facts(partitions=parts, fragmented=["p1"], stale=["p2"])
    rebuild = table_fix("fragmentation", table, 28)
    assert (rebuild.safety, rebuild.rows, rebuild.bytes) == ("copies", 3000, 330_000)
    analyze = table_fix("staleness", table, 28)
    assert (analyze.safety, analyze.rows, analyze.bytes) == ("instant", None, None)
    recompress = compression_fix(facts(partitions=parts, compression=failing(4)))
    assert (recompress.safety, recompress.rows, recompress.bytes) == ("copies", 9000, 990_000)
    strided = [sized(f"p{i}", i, r) for i, r in enumerate([800, 0, 0, 0, 800, 0, 0, 0])]
    hashed = table_fix("skew", facts(partitions=strided), 28)
    assert (hashed.safety, hashed.rows) == ("copies", 1600)  # every row moves
    assert limit_fix(limit_pressure("table_open_cache", 4321, 4000)).safety == "instant"
    pool = working_set_fix(written_against_pool(900 << 20, 40, 1 << 30))
    assert pool.safety == "instant"
    advice = table_fix("hotspot", table, 28)
    assert (advice.sql, advice.safety, advice.rows, advice.bytes) == (None, None, None, None)


def test_a_runway_fix_copies_the_catchalls_rows_or_is_instant():
    full = daily(catchall_rows=1234)
    full[-1] = sized("pmax", 9, 1234, "MAXVALUE")
    fix = runway_fix_of(full)
    assert (fix.safety, fix.rows, fix.bytes) == ("copies", 1234, 135_740)
    assert runway_fix_of(daily(catchall_rows=0)).safety == "instant"
    no_catchall = runway_fix_of(daily(catchall_rows=0)[:-1])
    assert "ADD PARTITION" in no_catchall.sql and no_catchall.safety == "instant"


@pytest.mark.parametrize(
    ("safety", "rows", "size", "words"),
    [
        ("copies", 1234, 5 << 20, "copies ~1,234 rows, 5.0 MiB"),
        ("copies", None, None, "copies its rows"),
        ("destroys", 10, 1536, "destroys ~10 rows, 1.5 KiB"),
        ("instant", None, None, "instant"),
        ("blocks", None, None, "blocks writes while it runs"),
        (None, None, None, ""),
    ],
)
def test_the_safety_line(safety, rows, size, words):
    assert safety_words(safety, rows, size) == words


def test_a_fix_has_a_safety_class_exactly_when_it_has_a_statement():
    with pytest.raises(ValueError):
        Fix("advice", "ALTER TABLE t ANALYZE PARTITION ALL")
    with pytest.raises(ValueError):
        Fix("advice", None, "instant")


def test_a_fix_stored_before_safety_classes_shows_no_statement_until_written_again():
    old = {"advice": "Add partitions.", "sql": "ALTER TABLE t ADD PARTITION (PARTITION p9)"}
    shown = stored_fix(old)
    assert shown == {
        "advice": "Add partitions. (The statement returns with the table's next analysis.)",
        "sql": None,
        "safety": None,
        "rows": None,
        "bytes": None,
    }
    current = {**old, "safety": "instant", "rows": None, "bytes": None}
    assert stored_fix(current) == current
    assert stored_fix({"advice": "Key."}) == {
        "advice": "Key.", "sql": None, "safety": None, "rows": None, "bytes": None
    }  # fmt: skip
    assert stored_fix(None) is None
