"""RANGE partition bounds as MariaDB 10.11 returns them, read as dates or ids (the pure
`partdash.health.bounds`; checked on a live server: TO_DAYS('2026-01-01') = 739982,
TO_SECONDS('2026-01-01') = 63934444800)."""

from datetime import date, datetime

import pytest

from partdash.health.bounds import (
    bound_to_date,
    first_value,
    is_catchall,
    parse_expression,
    range_bound,
)
from tests.health.builders import to_days


def test_to_days_of_the_unix_epoch_and_of_2026():
    assert date.fromordinal(719528 - 365) == date(1970, 1, 1)
    assert to_days(date(2026, 1, 1)) == 739982  # SELECT TO_DAYS('2026-01-01') on MariaDB


@pytest.mark.parametrize(
    ("expression", "description", "bound"),
    [
        ("to_days(`d`)", "739951", date(2025, 12, 1)),
        ("TO_DAYS(d)", "739982", date(2026, 1, 1)),
        ("(to_days(`d`))", "719528", date(1970, 1, 1)),
        (" To_Days ( `created_at` ) ", "(739982)", date(2026, 1, 1)),
        ("to_seconds(`d`)", "63934444800", datetime(2026, 1, 1)),
        ("TO_SECONDS(d)", "63934466400", datetime(2026, 1, 1, 6)),
        ("unix_timestamp(`ts`)", "1767225600", datetime(2026, 1, 1)),
        ("UNIX_TIMESTAMP(ts)", "0", datetime(1970, 1, 1)),
        ("year(`d`)", "2026", date(2026, 1, 1)),
        ("YEAR(d)", "1999", date(1999, 1, 1)),
        ("`d`", "'2026-12-01'", date(2026, 12, 1)),
        ("d", "('2026-12-01')", date(2026, 12, 1)),
        ("`d`,`id`", "'2026-01-01',5", date(2026, 1, 1)),
        ("`d`", "_utf8mb4'2026-12-01'", date(2026, 12, 1)),
        ("`dt`", "'2026-01-01 06:00:00'", datetime(2026, 1, 1, 6)),
    ],
)
def test_range_bounds_become_dates(expression, description, bound):
    assert bound_to_date(expression, description) == bound
    assert type(bound_to_date(expression, description)) is type(bound)


@pytest.mark.parametrize(
    ("expression", "description"),
    [
        ("to_days(`d`)", "MAXVALUE"),
        ("`d`", "MAXVALUE"),
        ("`d`,`id`", "MAXVALUE,MAXVALUE"),
        ("`id`", "1000000"),  # an id range: not a date
        ("month(`d`)", "3"),
        ("year(`d`) * 100 + month(`d`)", "202603"),
        ("to_days(`d`)", "'2026-01-01'"),
        ("`d`", "'not a date'"),
        ("`d`", "'0000-00-00'"),
        ("to_days(`d`)", "0"),
        ("year(`d`)", "0"),
        ("unix_timestamp(`ts`)", "99999999999999999"),
        ("to_days(`d`)", None),
        ("", "100"),
        (None, "100"),
    ],
)
def test_bounds_that_are_not_dates_are_none(expression, description):
    assert bound_to_date(expression, description) is None


@pytest.mark.parametrize(
    ("expression", "description", "bound"),
    [("`id`", "1000000", 1_000_000), ("ID", "(42)", 42), ("`id`", "5000", 5000)],
)
def test_a_bare_integer_column_gives_an_id_bound(expression, description, bound):
    assert range_bound(expression, description) == bound


@pytest.mark.parametrize(
    ("expression", "parsed"),
    [
        ("to_days(`d`)", ("to_days", "d")),
        ("(UNIX_TIMESTAMP(`ts`))", ("unix_timestamp", "ts")),
        ("`d`", (None, "d")),
        ("`d`,`id`", (None, "d")),
        ("abs(`d`)", None),
        ("`a` + `b`", None),
    ],
)
def test_parse_expression(expression, parsed):
    assert parse_expression(expression) == parsed


@pytest.mark.parametrize(
    ("description", "catchall"),
    [
        ("MAXVALUE", True),
        ("(MAXVALUE)", True),
        ("maxvalue", True),
        ("MAXVALUE,MAXVALUE", True),
        ("'2026-01-01',MAXVALUE", False),
        ("739982", False),
        (None, False),
    ],
)
def test_the_catchall_is_maxvalue_in_the_first_column(description, catchall):
    assert is_catchall(description) is catchall


def test_first_value_keeps_commas_inside_quotes():
    assert first_value("'a,b',5") == "'a,b'"
