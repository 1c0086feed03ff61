"""How long a RANGE table's bounds last: days left to the last bound, the catch-all, id
ranges, retention age and growth per day (the pure `partdash.health.runway`)."""

from datetime import UTC, date, datetime, timedelta

import pytest

from partdash.health.partitions import PartitionState
from partdash.health.runway import growth_per_day, table_runway
from tests.health.builders import NOW, monthly, ranged, table, to_days

APRIL = date(2026, 4, 1)


def epoch(day: date) -> int:
    """UNIX_TIMESTAMP of midnight UTC."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


@pytest.mark.parametrize("method", ["HASH", "KEY", "LIST", "LIST COLUMNS", "", "SYSTEM_TIME"])
def test_runway_is_none_unless_the_table_is_range_partitioned(method):
    assert table_runway(method, "`id`", table([1, 2]), NOW) is None


MONTHS = [
    (date(2026, 1, 1), 9000),
    (date(2026, 2, 1), 9500),
    (date(2026, 3, 1), 10_000),
    (date(2026, 4, 1), 3000),  # today, 2026-03-10, is in here
    (date(2026, 5, 1), 0),
    (date(2026, 6, 1), 0),
]


def test_a_monthly_to_days_table_has_its_runway_to_the_last_bound():
    result = table_runway("RANGE", "to_days(`d`)", monthly(MONTHS), NOW, fill_rate_per_day=300)
    assert result.days_left == 83  # 2026-03-10 to 2026-06-01
    assert result.last_bound == date(2026, 6, 1)
    assert result.bound_kind == "date"
    assert result.catchall_rows == 0
    assert result.empty_future_partitions == 2  # from 2026-04-01 and 2026-05-01
    assert result.oldest_partition_age_days == 68  # p0 ended 2026-01-01: its rows are older
    assert result.fill_rate_per_day == 300
    assert result.estimated


def test_a_last_bound_a_few_days_away_leaves_those_days():
    months = [(date(2026, 3, 1), 9000), (date(2026, 3, 13), 400)]
    result = table_runway("RANGE", "to_days(`d`)", monthly(months), NOW)
    assert result.days_left == 3
    assert result.empty_future_partitions == 0


def test_rows_in_the_maxvalue_partition_mean_no_runway_left():
    months = [(date(2026, 2, 1), 9000), (date(2026, 3, 1), 9000)]
    result = table_runway("RANGE", "to_days(`d`)", monthly(months, catchall=4200), NOW)
    assert result.days_left == 0
    assert result.catchall_rows == 4200


def test_rows_in_the_catchall_end_the_runway_even_before_the_last_bound():
    # rows with dates far in the future went to MAXVALUE: the runway is gone all the same
    result = table_runway("RANGE", "to_days(`d`)", monthly(MONTHS, catchall=1), NOW)
    assert result.days_left == 0


def test_a_last_bound_in_the_past_without_a_catchall_leaves_zero_days():
    partitions = ranged(
        [(str(to_days(date(2026, 2, 1))), 100), (str(to_days(date(2026, 3, 1))), 5)]
    )
    result = table_runway("RANGE", "to_days(`d`)", partitions, NOW)
    assert result.days_left == 0
    assert result.catchall_rows is None  # no MAXVALUE partition: inserts fail instead


def test_unknown_catchall_rows_leave_the_runway_to_the_bounds():
    result = table_runway("RANGE", "to_days(`d`)", monthly(MONTHS, catchall=None), NOW)
    assert result.catchall_rows is None
    assert result.days_left == 83


@pytest.mark.parametrize(
    ("method", "expression", "last", "days_left"),
    [
        ("RANGE", "to_days(`d`)", str(to_days(APRIL)), 22),  # 2026-03-10 to 2026-04-01
        ("RANGE", "TO_SECONDS(d)", str(epoch(APRIL) + 62167219200), 22),
        ("RANGE", "unix_timestamp(`ts`)", str(epoch(APRIL)), 22),
        ("RANGE", "year(`d`)", "2027", 297),  # to 2027-01-01
        ("RANGE COLUMNS", "`d`", "'2026-04-01'", 22),
        ("RANGE COLUMNS", "`d`,`id`", "'2026-04-01',0", 22),
        ("RANGE COLUMNS", "`dt`", "'2026-04-01 00:00:00'", 22),
        ("RANGE COLUMNS", "`dt`", "'2026-03-31 23:59:59'", 21),
    ],
)
def test_every_expression_form_gives_its_runway(method, expression, last, days_left):
    partitions = ranged([(last, 100), ("MAXVALUE", 0)])
    result = table_runway(method, expression, partitions, NOW)
    assert result.days_left == days_left
    assert result.bound_kind == "date"


def test_a_yearly_table_runs_to_the_first_of_january():
    partitions = ranged([("2026", 5), ("2027", 3), ("2028", 0), ("MAXVALUE", 0)])
    result = table_runway("RANGE", "year(`d`)", partitions, NOW)
    assert result.last_bound == date(2028, 1, 1)
    assert result.days_left == (date(2028, 1, 1) - date(2026, 3, 10)).days
    assert result.empty_future_partitions == 1  # 2027's; 2026's is the current one
    assert result.oldest_partition_age_days == (date(2026, 3, 10) - date(2026, 1, 1)).days


def test_an_unparseable_expression_has_an_unknown_runway():
    partitions = ranged([("202603", 5), ("202604", 0), ("MAXVALUE", 0)])
    result = table_runway("RANGE", "year(`d`) * 100 + month(`d`)", partitions, NOW)
    assert result.days_left is None
    assert result.last_bound is None
    assert result.catchall_rows == 0
    assert result.empty_future_partitions == 1  # the trailing empty one


def test_only_a_maxvalue_partition_has_no_bound_and_runs_out_once_it_has_rows():
    assert table_runway("RANGE", "`id`", ranged([("MAXVALUE", 0)]), NOW).days_left is None
    assert table_runway("RANGE", "`id`", ranged([("MAXVALUE", 10)]), NOW).days_left == 0


def id_table(autoinc: int | None = 1_500_000):
    return ranged(
        [("1000000", 999_999), ("2000000", 500_000), ("3000000", 0), ("MAXVALUE", 0)],
        autoinc=autoinc,
    )


def test_an_id_range_runs_out_at_its_id_growth():
    result = table_runway("RANGE", "`id`", id_table(), NOW, fill_rate_per_day=10_000)
    assert result.days_left == 150.0  # (3,000,000 - 1,500,000) / 10,000
    assert result.last_bound == 3_000_000
    assert result.bound_kind == "id"
    assert result.empty_future_partitions == 1  # p2 starts at 2,000,000
    assert result.oldest_partition_age_days is None
    assert result.fill_rate_per_day == 10_000


def test_an_id_range_without_growth_has_an_unknown_runway_and_says_why():
    result = table_runway("RANGE", "`id`", id_table(), NOW)
    assert result.days_left is None
    assert result.reason.startswith("id range: no growth measured yet")


def test_without_auto_increment_the_id_reached_is_estimated_from_the_rows():
    # p1 (ids 1,000,000 to 1,999,999) holds 500,000 rows: ids dense up to 1,500,000
    result = table_runway("RANGE", "`id`", id_table(autoinc=None), NOW, fill_rate_per_day=10_000)
    assert (result.current_id, result.current_id_from) == (1_500_000, "rows")
    assert result.days_left == 150.0
    assert result.empty_future_partitions == 1


def test_an_estimated_id_stays_inside_the_partition_holding_it():
    parts = ranged([("1000", 999), ("2000", 5000)], autoinc=None)
    result = table_runway("RANGE", "`id`", parts, NOW, fill_rate_per_day=100)
    assert result.current_id == 1999
    assert result.has_catchall is False


def test_an_id_range_whose_rows_are_unknown_says_the_id_reached_is_unknown():
    parts = ranged([("1000", 999), ("2000", None), ("MAXVALUE", 0)], autoinc=None)
    result = table_runway("RANGE", "`id`", parts, NOW, fill_rate_per_day=100)
    assert result.days_left is None
    assert "the id reached is unknown" in result.reason


def test_an_id_range_past_its_last_bound_has_no_runway_left():
    result = table_runway("RANGE", "`id`", id_table(3_000_001), NOW, fill_rate_per_day=10)
    assert result.days_left == 0


def test_a_given_current_id_overrides_autoinc():
    result = table_runway(
        "RANGE COLUMNS", "`id`", id_table(), NOW, fill_rate_per_day=1000, current_id=2_999_000
    )
    assert result.days_left == 1.0


def test_catchall_rows_are_summed_over_subpartitions():
    partitions = [
        PartitionState("p0", "p0sp0", 0, str(to_days(date(2026, 4, 1))), rows=10),
        PartitionState("p0", "p0sp1", 0, str(to_days(date(2026, 4, 1))), rows=10),
        PartitionState("pmax", "pmaxsp0", 1, "MAXVALUE", rows=3),
        PartitionState("pmax", "pmaxsp1", 1, "MAXVALUE", rows=4),
    ]
    result = table_runway("RANGE", "to_days(`d`)", partitions, NOW)
    assert result.catchall_rows == 7
    assert result.days_left == 0


def test_an_empty_partition_in_the_past_is_not_a_future_one():
    months = [(date(2026, 1, 1), 0), (date(2026, 2, 1), 0), (date(2026, 4, 1), 50)]
    result = table_runway("RANGE", "to_days(`d`)", monthly(months), NOW)
    assert result.empty_future_partitions == 0


def test_retention_age_skips_an_empty_guard_partition_for_invalid_dates():
    partitions = ranged(
        [
            ("0", 0),  # PARTITION p0 VALUES LESS THAN (0): not a date
            (str(to_days(date(1970, 1, 1))), 0),  # or one before any real date
            (str(to_days(date(2025, 12, 1))), 700),
            (str(to_days(APRIL)), 300),
            ("MAXVALUE", 0),
        ]
    )
    result = table_runway("RANGE", "to_days(`d`)", partitions, NOW)
    assert result.oldest_partition_age_days == 99  # 2025-12-01 to 2026-03-10
    assert result.days_left == 22
    assert result.empty_future_partitions == 0


def test_retention_age_is_unknown_when_no_partition_holds_rows():
    result = table_runway("RANGE", "to_days(`d`)", monthly([(APRIL, 0)]), NOW)
    assert result.oldest_partition_age_days is None


def test_naive_now_is_taken_as_utc():
    naive = table_runway("RANGE", "to_days(`d`)", monthly(MONTHS), NOW.replace(tzinfo=None))
    assert naive.days_left == 83


@pytest.mark.parametrize(
    ("old", "new", "days", "rate"),
    [(1000, 31_000, 3, 10_000.0), (1000, 1000, 1, 0.0), (5000, 10, 1, None), (None, 5, 1, None)],
)
def test_growth_per_day(old, new, days, rate):
    assert growth_per_day(old, NOW - timedelta(days=days), new, NOW) == rate


def test_growth_over_no_time_is_unknown():
    assert growth_per_day(1, NOW, 5, NOW) is None


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("year(`d`) * 100 + month(`d`)", "is not a date function"),
        ("`name`", "is not a date or an integer"),
    ],
)
def test_an_unknown_runway_always_says_why(expression, why):
    partitions = ranged([("'abc'" if "name" in expression else "202603", 5), ("MAXVALUE", 0)])
    result = table_runway("RANGE COLUMNS", expression, partitions, NOW)
    assert result.days_left is None
    assert why in result.reason


def test_only_a_maxvalue_partition_says_there_is_no_bound():
    result = table_runway("RANGE", "`id`", ranged([("MAXVALUE", 0)]), NOW)
    assert result.reason == "only a MAXVALUE partition: no bound to run out"


def test_a_known_runway_has_no_reason():
    assert table_runway("RANGE", "to_days(`d`)", monthly(MONTHS), NOW).reason is None


@pytest.mark.parametrize(
    ("expression", "cyclic"),
    [
        ("hour(`ts`)", "HOUR()"),
        ("minute(`ts`)", "MINUTE()"),
        ("second(`ts`)", "SECOND()"),
        ("dayofyear(`d`)", "DAYOFYEAR()"),
        ("dayofmonth(`d`)", "DAYOFMONTH()"),  # MariaDB's spelling of DAY(d)
        ("(month(`d`))", "MONTH()"),
        ("weekday(`d`)", "WEEKDAY()"),
        ("extract(minute from `d`)", "EXTRACT(MINUTE)"),
        ("`id` MOD 7", "MOD"),
    ],
)
def test_a_cyclic_expression_has_no_runway_and_says_why(expression, cyclic):
    # 1,000 rows in the catch-all: hours 10 to 23 live there by design
    result = table_runway("RANGE", expression, ranged([("10", 400), ("MAXVALUE", 1000)]), NOW)
    assert result.cyclic == cyclic
    assert result.days_left is None
    assert result.reason.startswith(f"cyclic partitioning ({cyclic})")
    assert result.catchall_rows == 1000


@pytest.mark.parametrize(
    "expression", ["year(`d`)", "extract(year from `d`)", "hour(`a`) + to_days(`d`)", "`id`"]
)
def test_growing_expressions_are_not_cyclic(expression):
    result = table_runway("RANGE", expression, ranged([("2030", 4), ("MAXVALUE", 0)]), NOW)
    assert result.cyclic is None


@pytest.mark.parametrize(
    ("expression", "names", "bounds", "last"),
    [
        ("`year`", ["p2025", "p2026"], ["2026", "2027"], date(2027, 1, 1)),
        ("`fiscal_year`", ["a", "b"], ["2026", "2027"], date(2027, 1, 1)),
        ("`y`", ["p2025", "p2026"], ["2026", "2027"], date(2027, 1, 1)),  # the names say
        ("`ym`", ["p202601", "p202602"], ["202602", "202603"], date(2026, 3, 1)),
        ("`ym`", ["p202601", "p202602"], ["202601", "202602"], date(2026, 2, 1)),
        ("`ym`", ["p202511", "p202512"], ["202512", "202513"], date(2026, 1, 1)),
        ("`day`", ["p_2026_03_01", "p_2026_03_02"], ["20260302", "20260303"], date(2026, 3, 3)),
    ],
)
def test_integer_bounds_that_spell_the_calendar_run_on_the_calendar(
    expression, names, bounds, last
):
    parts = [
        PartitionState(n, ordinal=i, description=b, rows=10)
        for i, (n, b) in enumerate(zip(names, bounds, strict=True))
    ]
    result = table_runway("RANGE", expression, parts, NOW)
    assert result.bound_kind == "date"
    assert result.last_bound == last
    assert result.days_left == max(0, (last - NOW.date()).days)


@pytest.mark.parametrize(
    ("names", "bounds"),
    [
        (["p1", "p2"], ["2026", "2027"]),  # four digits, but names that say nothing
        (["p1000", "p2000"], ["1000", "2000"]),  # ids named by their bound, not years
        (["p202601", "p202602"], ["202601", "202699"]),  # no month 99
    ],
)
def test_integer_bounds_that_do_not_spell_the_calendar_are_ids(names, bounds):
    parts = [
        PartitionState(n, ordinal=i, description=b, rows=10)
        for i, (n, b) in enumerate(zip(names, bounds, strict=True))
    ]
    assert table_runway("RANGE", "`a`", parts, NOW).bound_kind == "id"
