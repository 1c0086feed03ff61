"""The side by side of a group's copies (partdash.health.side_by_side): bounds written as
the fixes write them, partitions in bound order with the catch-all last."""

import pytest

from partdash.health.drift import Layout
from partdash.health.side_by_side import side_by_side_names, written_bound


@pytest.mark.parametrize(
    ("expression", "description", "written"),
    [
        ("to_days(`d`)", "740196", "TO_DAYS('2026-08-03')"),
        ("(TO_DAYS(`d`))", "740196", "TO_DAYS('2026-08-03')"),
        ("to_seconds(`t`)", "63952934400", "TO_SECONDS('2026-08-03 00:00:00')"),
        ("unix_timestamp(`t`)", "1785715200", "1785715200 /* 2026-08-03 00:00:00 UTC */"),
        ("to_days(`d`)", "MAXVALUE", "MAXVALUE"),
        ("year(`d`)", "2027", "2027"),
        ("`id`", "1000000", "1000000"),
        ("`d`", "'2026-08-03'", "'2026-08-03'"),
        ("to_days(`d`)", "not a number", "not a number"),
        (None, "5", "5"),
    ],
)
def test_a_bound_is_written_as_a_fix_writes_it(expression, description, written):
    assert written_bound(expression, description) == written


def layout(method: str, *partitions: tuple[str, str | None]) -> Layout:
    return Layout(method, "to_days(`d`)", "", "", tuple(partitions))


def test_a_members_extra_partition_comes_before_the_catch_all():
    reference = layout("RANGE", ("p1", "740000"), ("p2", "740001"), ("pmax", "MAXVALUE"))
    member = layout(
        "RANGE", ("p1", "740000"), ("p2", "740001"), ("p3", "740002"), ("PMAX", "MAXVALUE")
    )
    assert side_by_side_names([reference, member]) == ["p1", "p2", "p3", "pmax"]


def test_a_member_missing_a_middle_day_keeps_it_where_its_bound_is():
    member = layout("RANGE", ("p1", "740000"), ("p3", "740002"))
    reference = layout("RANGE", ("p1", "740000"), ("p2", "740001"), ("p3", "740002"))
    assert side_by_side_names([member, reference]) == ["p1", "p2", "p3"]


def test_list_and_hash_copies_keep_the_definition_order():
    first = Layout("LIST", "`region`", "", "", (("p_west", "3,4"), ("p_east", "1,2")))
    other = Layout("LIST", "`region`", "", "", (("p_east", "1,2"), ("p_north", "5")))
    assert side_by_side_names([first, other]) == ["p_west", "p_east", "p_north"]
