"""The runway statement continues each table's own interval and naming far enough to
clear the runway finding (pure: the statement is applied to the partition list here;
tests/health/test_fixes_on_mariadb.py runs it on a server)."""

import re
from datetime import UTC, date, datetime, timedelta

import pytest

from partdash.health import findings as rules
from partdash.health.bounds import TO_DAYS_OFFSET, TO_SECONDS_EPOCH
from partdash.health.partitions import PartitionState
from partdash.health.runway import table_runway
from partdash.health.runway_fix import CannotPlan, partitions_words, runway_plan

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
TODAY = NOW.date()
HORIZON = TODAY + timedelta(days=rules.RUNWAY_HORIZON_DAYS)
EPOCH = datetime(1970, 1, 1)


def to_days(day: date) -> str:
    return str(day.toordinal() + TO_DAYS_OFFSET)


def to_seconds(moment: datetime) -> str:
    return str(int((moment - EPOCH).total_seconds()) + TO_SECONDS_EPOCH)


def unix(moment: datetime) -> str:
    return str(int((moment - EPOCH).total_seconds()))


def table(names, descriptions, catchall: str | None = "pmax", catchall_rows=0, **last):
    """Bounded partitions (names, descriptions), then the catch-all if any."""
    parts = [
        PartitionState(name, ordinal=i + 1, description=text, rows=100)
        for i, (name, text) in enumerate(zip(names, descriptions, strict=True))
    ]
    if last:
        parts[-1] = PartitionState(parts[-1].name, ordinal=len(parts), **last)
    if catchall is not None:
        parts.append(
            PartitionState(
                catchall, ordinal=len(parts) + 1, description="MAXVALUE", rows=catchall_rows
            )
        )
    return parts


def new_partitions(sql: str) -> list[tuple[str, str]]:
    """(name, bound text) of each PARTITION clause, names unquoted."""
    clauses = re.findall(r"^  PARTITION `((?:[^`]|``)+)` VALUES LESS THAN (.*?),?$", sql, re.M)
    return [(name.replace("``", "`"), bound) for name, bound in clauses]


def applied(parts, plan, described) -> list[PartitionState]:
    """The partition list after the statement, each new bound described as the server
    would store it (`described(bound)`), the catch-all emptied."""
    bounded = [p for p in parts if p.description != "MAXVALUE"]
    new = [
        PartitionState(p.name, ordinal=len(bounded) + i + 1, description=described(p.bound), rows=0)
        for i, p in enumerate(plan.partitions)
    ]
    tail = [PartitionState(plan.catchall, ordinal=999, description="MAXVALUE", rows=0)]
    return bounded + new + (tail if plan.catchall else [])


def assert_clears(method, expression, parts, plan, described):
    after = applied(parts, plan, described)
    runway = table_runway(method, expression, after, NOW)
    assert rules.runway_finding(runway) is None, runway
    assert runway.days_left >= rules.RUNWAY_HORIZON_DAYS


# -- time ranges ------------------------------------------------------------------------


def test_a_daily_to_days_table_gets_daily_partitions_named_by_their_first_day():
    days = [TODAY - timedelta(days=n) for n in (4, 3, 2, 1)]
    parts = table(
        [f"p{d:%Y%m%d}" for d in days], [to_days(d + timedelta(1)) for d in days], catchall_rows=500
    )
    plan = runway_plan("shop", "events", "RANGE", "to_days(`d`)", parts, HORIZON)

    added = new_partitions(plan.sql)
    assert added[0] == (f"p{TODAY:%Y%m%d}", f"(TO_DAYS('{TODAY + timedelta(1):%Y-%m-%d}'))")
    assert added[-1] == ("pmax", "MAXVALUE")
    assert len(plan.partitions) == rules.RUNWAY_HORIZON_DAYS
    assert plan.partitions[-1].bound.date() == HORIZON
    assert plan.sql.startswith("ALTER TABLE `shop`.`events` REORGANIZE PARTITION `pmax` INTO (")
    assert partitions_words(1, plan.step) == "1 daily partition"
    assert_clears("RANGE", "to_days(`d`)", parts, plan, lambda b: to_days(b.date()))


def test_names_spelling_the_last_day_or_the_bound_are_continued_too():
    days = [TODAY - timedelta(days=n) for n in (3, 2, 1)]
    last_day = table([f"p{d - timedelta(1):%Y%m%d}" for d in days], [to_days(d) for d in days])
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", last_day, HORIZON)
    assert plan.partitions[0].name == f"p{TODAY - timedelta(1):%Y%m%d}"
    assert plan.partitions[0].bound.date() == TODAY

    bound_named = table([f"before_{d:%Y_%m_%d}" for d in days], [to_days(d) for d in days])
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", bound_named, HORIZON)
    assert plan.partitions[0].name == f"before_{TODAY:%Y_%m_%d}"


def test_a_monthly_table_named_p_yyyymm_continues_month_by_month():
    months = [date(2024, m, 1) for m in (10, 11, 12)] + [date(2025, m, 1) for m in (1, 2, 3)]
    names = [f"p{m:%Y%m}" for m in months[:-1]]
    parts = table(names, [to_days(m) for m in months[1:]])
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", parts, HORIZON)

    assert [p.name for p in plan.partitions] == ["p202503", "p202504"]
    assert new_partitions(plan.sql)[:2] == [
        ("p202503", "(TO_DAYS('2025-04-01'))"),
        ("p202504", "(TO_DAYS('2025-05-01'))"),
    ]
    assert partitions_words(1, plan.step) == "1 monthly partition"
    assert_clears("RANGE", "to_days(`d`)", parts, plan, lambda b: to_days(b.date()))


def test_range_columns_on_a_date_continues_quoted_literals_and_underscored_names():
    months = [date(2024, 12, 1), date(2025, 1, 1), date(2025, 2, 1), date(2025, 3, 1)]
    parts = table(
        [f"p_{m:%Y_%m}" for m in months[:-1]],
        [f"'{m:%Y-%m-%d}'" for m in months[1:]],
        catchall=None,
    )
    plan = runway_plan("s", "t", "RANGE COLUMNS", "`d`", parts, HORIZON)

    assert plan.sql.startswith("ALTER TABLE `s`.`t` ADD PARTITION (")
    assert new_partitions(plan.sql) == [
        ("p_2025_03", "('2025-04-01')"),
        ("p_2025_04", "('2025-05-01')"),
    ]
    assert_clears("RANGE COLUMNS", "`d`", parts, plan, lambda b: f"'{b:%Y-%m-%d}'")


def test_range_columns_on_several_columns_copies_the_other_values_and_the_catchall():
    days = [TODAY - timedelta(days=n) for n in (2, 1, 0)]
    parts = table(
        [f"d{d:%Y%m%d}" for d in days], [f"'{d:%Y-%m-%d} 00:00:00',0" for d in days], catchall=None
    )
    parts.append(PartitionState("pmax", ordinal=9, description="MAXVALUE,MAXVALUE", rows=0))
    plan = runway_plan("s", "t", "RANGE COLUMNS", "`ts`,`id`", parts, HORIZON)

    added = new_partitions(plan.sql)
    tomorrow = TODAY + timedelta(1)
    assert added[0] == (f"d{tomorrow:%Y%m%d}", f"('{tomorrow:%Y-%m-%d} 00:00:00',0)")
    assert added[-1] == ("pmax", "(MAXVALUE,MAXVALUE)")


def test_a_yearly_table_by_year_adds_years_without_a_catchall():
    parts = table(["p2022", "p2023", "p2024"], ["2023", "2024", "2025"], catchall=None)
    plan = runway_plan("s", "t", "RANGE", "year(`d`)", parts, HORIZON)
    assert new_partitions(plan.sql) == [("p2025", "(2026)")]
    assert partitions_words(1, plan.step) == "1 yearly partition"
    assert_clears("RANGE", "year(`d`)", parts, plan, lambda b: str(b.year))


def test_a_yearly_to_days_table_after_a_guard_partition():
    """The guard partition for invalid dates (LESS THAN 0) and a catch-up partition do not
    decide the interval: the most frequent of the last steps does."""
    parts = table(
        ["p_invalid", "p_before", "y2023", "y2024"],
        ["0", to_days(date(2023, 1, 1)), to_days(date(2024, 1, 1)), to_days(date(2025, 1, 1))],
    )
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", parts, HORIZON)
    assert [p.name for p in plan.partitions] == ["y2025"]
    assert plan.partitions[0].bound == datetime(2026, 1, 1)


def test_to_seconds_hourly_partitions_keep_their_hour_in_the_name():
    start = datetime(2025, 3, 10, 8)
    hours = [start + timedelta(hours=n) for n in range(4)]
    parts = table(
        [f"p{h:%Y%m%d%H}" for h in hours], [to_seconds(h + timedelta(hours=1)) for h in hours]
    )
    plan = runway_plan("s", "t", "RANGE", "to_seconds(`ts`)", parts, TODAY + timedelta(days=2))

    assert new_partitions(plan.sql)[0] == ("p2025031012", "(TO_SECONDS('2025-03-10 13:00:00'))")
    assert partitions_words(1, plan.step) == "1 hourly partition"
    assert plan.partitions[-1].bound == datetime(2025, 3, 12)


def test_unix_timestamp_bounds_are_epoch_seconds_with_the_utc_time_beside_them():
    days = [datetime(2025, 3, d) for d in (7, 8, 9)]
    parts = table([f"p{d:%Y%m%d}" for d in days], [unix(d + timedelta(1)) for d in days])
    plan = runway_plan("s", "t", "RANGE", "unix_timestamp(`ts`)", parts, HORIZON)

    first = new_partitions(plan.sql)[0]
    assert first == ("p20250310", f"({unix(datetime(2025, 3, 11))} /* 2025-03-11 00:00:00 UTC */)")
    assert_clears("RANGE", "unix_timestamp(`ts`)", parts, plan, lambda b: unix(b))


def test_names_without_a_pattern_fall_back_to_p_and_the_first_day():
    days = [TODAY - timedelta(days=n) for n in (3, 2, 1)]
    parts = table(["old", "older", "recent"], [to_days(d) for d in days])
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", parts, HORIZON)
    assert plan.partitions[0].name == f"p{TODAY - timedelta(1):%Y%m%d}"


def test_a_date_reading_that_would_collide_gives_way_to_the_next_pattern():
    """p1, p2, p3 on the 2nd to 4th could be days of the month; they would reach p1
    again next month, so the ordinal reading is used."""
    days = [date(2025, 3, d) for d in (2, 3, 4)]
    parts = table(["p1", "p2", "p3"], [to_days(d) for d in days])
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", parts, HORIZON)
    names = [p.name for p in plan.partitions]
    assert names[:3] == ["p4", "p5", "p6"] and len(set(names)) == len(names)


# -- id ranges --------------------------------------------------------------------------


def test_an_id_range_with_ordinal_names_continues_its_step_past_the_target():
    parts = table(
        [f"p{i}" for i in range(4)], [str((i + 1) * 1_000_000) for i in range(4)], catchall_rows=9
    )
    plan = runway_plan("s", "t", "RANGE", "`id`", parts, 6_500_001)
    assert new_partitions(plan.sql) == [
        ("p4", "(5000000)"),
        ("p5", "(6000000)"),
        ("p6", "(7000000)"),
        ("pmax", "MAXVALUE"),
    ]
    assert partitions_words(3, plan.step) == "3 partitions of 1,000,000 ids"


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["p1000", "p2000", "p3000"], ["p4000", "p5000"]),  # the bound
        (["from_0", "from_1000", "from_2000"], ["from_3000", "from_4000"]),  # the first id
        (["part007", "part008", "part009"], ["part010", "part011"]),  # zero-padded ordinals
        (["p10", "p20", "p30"], ["p40", "p50"]),  # ordinals in tens
        (["a", "b", "c"], ["p3000", "p4000"]),  # no pattern: p and the first id
    ],
)
def test_id_names_continue_their_own_pattern(names, expected):
    parts = table(names, ["1000", "2000", "3000"])
    plan = runway_plan("s", "t", "RANGE", "`id`", parts, 5000)
    assert [p.name for p in plan.partitions] == expected


# -- names and limits -------------------------------------------------------------------


def test_odd_names_are_quoted_and_kept():
    days = [TODAY - timedelta(days=n) for n in (2, 1)]
    parts = table(
        [f"día `{d:%Y%m%d}` ç" for d in days],
        [to_days(d + timedelta(1)) for d in days],
        catchall="max ✓ `all`",
    )
    plan = runway_plan("sch`ema", "tab 表 le", "RANGE", "to_days(`d`)", parts, HORIZON)

    assert plan.sql.startswith(
        "ALTER TABLE `sch``ema`.`tab 表 le` REORGANIZE PARTITION `max ✓ ``all``` INTO ("
    )
    added = new_partitions(plan.sql)
    assert added[0][0] == f"día `{TODAY:%Y%m%d}` ç"
    assert added[-1] == ("max ✓ `all`", "MAXVALUE")
    assert "PARTITION `día ``" in plan.sql


def test_subpartitions_are_one_partition_each():
    days = [TODAY - timedelta(days=n) for n in (2, 1)]
    parts = [
        PartitionState(f"p{d:%Y%m%d}", sub, i, to_days(d + timedelta(1)), rows=5)
        for i, d in enumerate(days)
        for sub in (f"p{i}sp0", f"p{i}sp1")
    ] + [PartitionState("pmax", sub, 5, "MAXVALUE", rows=0) for sub in ("s0", "s1")]
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", parts, HORIZON)
    assert plan.partitions[0].name == f"p{TODAY:%Y%m%d}"
    assert len(new_partitions(plan.sql)) == rules.RUNWAY_HORIZON_DAYS + 1


@pytest.mark.parametrize(
    ("method", "expression", "descriptions", "reason"),
    [
        ("HASH", "`id`", ["1", "2"], "not RANGE"),
        ("RANGE", "year(`d`) * 100 + month(`d`)", ["202401", "202402"], "expression"),
        ("RANGE COLUMNS", "`name`", ["'m'", "'t'"], "bound"),
    ],
)
def test_what_cannot_be_continued_says_why(method, expression, descriptions, reason):
    parts = table(["p1", "p2"], descriptions)
    with pytest.raises(CannotPlan, match=reason):
        runway_plan("s", "t", method, expression, parts, HORIZON)


def test_a_plan_never_passes_the_partition_limit():
    parts = table(["p0", "p1"], ["1", "2"])
    with pytest.raises(CannotPlan, match="8192"):
        runway_plan("s", "t", "RANGE", "`id`", parts, 10_000)


def test_names_of_many_digit_runs_are_not_read_as_dates():
    """Their readings as date fields multiply (five layouts per run): only the last run
    is continued, as an ordinal."""
    names = [f"p_1_2_3_4_5_{i}" for i in range(3)]
    plan = runway_plan("s", "t", "RANGE", "`id`", table(names, ["10", "20", "30"]), 50)
    assert [p.name for p in plan.partitions] == ["p_1_2_3_4_5_3", "p_1_2_3_4_5_4"]


# -- names that follow the calendar ------------------------------------------------------


def test_dated_names_the_bounds_do_not_spell_never_leave_the_calendar():
    """MariaDB's suite: YEAR() bounds 2009 and 2011 named p200912 and p201103. Their step
    as numbers (191) once gave p201294, month 94: now `p` and each partition's first year."""
    parts = table(["p200912", "p201103"], ["2009", "2011"], catchall=None)
    plan = runway_plan("s", "t", "RANGE", "year(`d`)", parts, date(2014, 6, 1))
    assert new_partitions(plan.sql) == [("p2011", "(2013)"), ("p2013", "(2015)")]


@pytest.mark.parametrize(
    "bounds", [["201001", "201104"], ["200913", "201104"]], ids=["next month", "month 13"]
)
def test_yyyymm_integer_bounds_continue_on_the_calendar(bounds):
    parts = table(["p200912", "p201103"], bounds, catchall=None)
    plan = runway_plan("s", "t", "RANGE", "`ym`", parts, date(2013, 1, 1))
    # every 15 months, as the table steps; named by the last month each holds
    assert new_partitions(plan.sql) == [("p201206", "(201207)"), ("p201309", "(201310)")]


def test_a_monthly_yyyymm_table_goes_on_monthly_into_the_next_year():
    parts = table(["p202410", "p202411", "p202412"], ["202411", "202412", "202501"], catchall=None)
    plan = runway_plan("s", "t", "RANGE", "`period`", parts, HORIZON)  # 2025-04-07
    months = ["202501", "202502", "202503", "202504", "202505"]  # p202501 holds < 202502
    pairs = zip(months, months[1:], strict=False)
    assert new_partitions(plan.sql) == [(f"p{a}", f"({b})") for a, b in pairs]
    assert_clears("RANGE", "`period`", parts, plan, lambda b: f"{b:%Y%m}")


def test_a_daily_yyyymmdd_table_goes_on_daily():
    days = [TODAY - timedelta(days=n) for n in (3, 2, 1)]
    parts = table(
        [f"p{d:%Y%m%d}" for d in days], [f"{d + timedelta(1):%Y%m%d}" for d in days], None
    )
    plan = runway_plan("s", "t", "RANGE", "`day`", parts, HORIZON)
    assert plan.partitions[0].name == f"p{TODAY:%Y%m%d}"
    assert new_partitions(plan.sql)[0][1] == f"({TODAY + timedelta(1):%Y%m%d})"
    assert_clears("RANGE", "`day`", parts, plan, lambda b: f"{b:%Y%m%d}")


def test_a_year_column_without_a_catchall_adds_years():
    parts = table(["p2023", "p2024"], ["2024", "2025"], catchall=None)
    plan = runway_plan("s", "t", "RANGE", "`year`", parts, HORIZON)
    assert new_partitions(plan.sql) == [("p2025", "(2026)")]
    assert_clears("RANGE", "`year`", parts, plan, lambda b: str(b.year))


def test_weekly_names_follow_the_iso_week_across_the_new_year():
    mondays = [date(2024, 12, 9) + timedelta(weeks=n) for n in range(3)]
    parts = table(
        [f"p{m:%G}w{m:%V}" for m in mondays], [to_days(m + timedelta(weeks=1)) for m in mondays]
    )
    plan = runway_plan("s", "t", "RANGE", "to_days(`d`)", parts, date(2025, 1, 13))
    # the week from 30 December 2024 is week 1 of 2025
    assert [p.name for p in plan.partitions] == ["p2025w01", "p2025w02"]


def test_a_fallback_name_already_taken_gets_a_suffix():
    """Names no pattern spells: `p` and the first value held, made unique."""
    parts = table(["p2000", "last"], ["1000", "2000"], catchall=None)
    plan = runway_plan("s", "t", "RANGE", "`id`", parts, 3500)
    assert [p.name for p in plan.partitions] == ["p2000_2", "p3000"]
