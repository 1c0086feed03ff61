"""Layout drift's words and statements (`partdash.health.drift`), case by case; the
statements are run on a real MariaDB in tests/metrics/test_drift_ground_truth.py."""

import pytest

from partdash.health.drift import (
    Holder,
    Layout,
    align_fix,
    differences,
    expected_everywhere,
    group_digest,
    layout_digest,
)


def ranges(*parts: tuple[str, str], method: str = "RANGE", expression: str = "`id`") -> Layout:
    return Layout.of(method, expression, "", "", [(n, "", b) for n, b in parts])


SIZES = {"p0": (10, 100), "p1": (20, 200), "p2": (30, 300), "pmax": (5, 50), "px": (7, 70)}
BASE = (("p0", "100"), ("p1", "200"), ("p2", "300"))


def fix(here: Layout, group: Layout):
    return align_fix("s", "t", here, group, SIZES)


def test_the_same_layout_spelled_two_ways_has_one_digest():
    a = ranges(*BASE, method="RANGE", expression="`id`")
    b = ranges(*BASE, method="range", expression="id")
    assert layout_digest(a) == layout_digest(b)
    assert layout_digest(a) != layout_digest(ranges(*BASE[:2]))
    assert differences(a, b) == []


def test_a_partition_missing_before_the_catch_all_is_reorganized_out_of_it():
    here = ranges(*BASE[:2], ("pmax", "MAXVALUE"))
    group = ranges(*BASE, ("pmax", "MAXVALUE"))
    assert differences(here, group) == ["lacks partition(s) p2"]
    found = fix(here, group)
    assert found.sql == (
        "ALTER TABLE `s`.`t` REORGANIZE PARTITION `pmax` INTO (PARTITION `p2` VALUES LESS "
        "THAN (300), PARTITION `pmax` VALUES LESS THAN MAXVALUE)"
    )
    assert (found.safety, found.rows, found.bytes) == ("copies", 5, 50)


def test_partitions_missing_past_the_last_bound_are_added():
    found = fix(ranges(*BASE[:1]), ranges(*BASE))
    assert found.sql == (
        "ALTER TABLE `s`.`t` ADD PARTITION (PARTITION `p1` VALUES LESS THAN (200), "
        "PARTITION `p2` VALUES LESS THAN (300))"
    )
    assert found.safety == "instant"


def test_a_partition_missing_at_the_start_is_split_from_the_next():
    found = fix(ranges(*BASE[1:]), ranges(*BASE))
    assert found.sql == (
        "ALTER TABLE `s`.`t` REORGANIZE PARTITION `p1` INTO (PARTITION `p0` VALUES LESS "
        "THAN (100), PARTITION `p1` VALUES LESS THAN (200))"
    )


def test_an_extra_partition_in_between_is_merged_into_the_next():
    here = ranges(("p0", "100"), ("px", "150"), ("p1", "200"), ("p2", "300"))
    assert differences(here, ranges(*BASE)) == ["has partition(s) the group has not: px"]
    found = fix(here, ranges(*BASE))
    assert found.sql == (
        "ALTER TABLE `s`.`t` REORGANIZE PARTITION `px`, `p1` INTO (PARTITION `p1` VALUES "
        "LESS THAN (200))"
    )
    assert (found.rows, found.bytes) == (27, 270)


def test_extra_partitions_past_the_groups_last_bound_are_dropped_and_said_to_destroy():
    found = fix(ranges(*BASE), ranges(*BASE[:2]))
    assert found.sql == "ALTER TABLE `s`.`t` DROP PARTITION `p2`"
    assert (found.safety, found.rows) == ("destroys", 30)
    assert "irreversible" in found.advice


def test_another_bound_is_rewritten_with_the_partitions_after_it():
    here = ranges(("p0", "100"), ("p1", "250"), ("pmax", "MAXVALUE"))
    group = ranges(("p0", "100"), ("p1", "200"), ("pmax", "MAXVALUE"))
    assert differences(here, group) == ["other bounds: p1 250 (group: 200)"]
    assert fix(here, group).sql == (
        "ALTER TABLE `s`.`t` REORGANIZE PARTITION `p1`, `pmax` INTO (PARTITION `p1` VALUES "
        "LESS THAN (200), PARTITION `pmax` VALUES LESS THAN MAXVALUE)"
    )


def test_another_method_is_partitioned_again_as_the_group_has_it():
    here = Layout.of("HASH", "`id`", "", "", [("p0", "", None), ("p1", "", None)])
    group = ranges(*BASE)
    assert differences(here, group)[0] == "partitioned by HASH, the group by RANGE"
    found = fix(here, group)
    assert found.sql == (
        "ALTER TABLE `s`.`t` PARTITION BY RANGE(`id`) (PARTITION `p0` VALUES LESS THAN "
        "(100), PARTITION `p1` VALUES LESS THAN (200), PARTITION `p2` VALUES LESS THAN (300))"
    )
    assert (found.safety, found.rows) == ("copies", 30)


def test_hash_partitions_are_added_or_coalesced_at_the_end():
    def hashed(count: int) -> Layout:
        return Layout.of("HASH", "`id`", "", "", [(f"p{i}", "", None) for i in range(count)])

    assert fix(hashed(2), hashed(4)).sql == (
        "ALTER TABLE `s`.`t` ADD PARTITION (PARTITION `p2`, PARTITION `p3`)"
    )
    assert fix(hashed(4), hashed(3)).sql == "ALTER TABLE `s`.`t` COALESCE PARTITION 1"


def test_nothing_the_server_sent_reaches_a_statement_as_text():
    here = ranges(*BASE[:2])
    group = ranges(*BASE[:2], ("p2", "300); DROP TABLE x; --"))
    found = fix(here, group)
    assert found.sql is None and "No statement" in found.advice
    evil = ranges(*BASE, expression="id) ; DROP TABLE x #")
    assert fix(ranges(*BASE, method="LIST"), evil).sql is None
    assert align_fix("s/x", "t", here, ranges(*BASE), SIZES).sql is None


def test_the_group_layout_is_the_reference_then_the_majority_then_the_superset():
    a, b = Holder(1, "A", 3), Holder(2, "B", 4)
    assert group_digest([a, b], reference=1) == "A"
    assert group_digest([a, b], reference=None) == "B"  # a tie: the one with more
    assert group_digest([a, b, Holder(3, "A", 3)], reference=None) == "A"
    assert group_digest([a, b], reference=9) == "B"  # the reference lacks the table


@pytest.mark.parametrize(
    ("holders", "members", "on_reference", "expected"),
    [(1, 2, None, True), (1, 3, None, False), (2, 3, None, True), (1, 3, True, True)],
)
def test_a_table_belongs_everywhere_on_half_the_members_or_the_reference(
    holders, members, on_reference, expected
):
    assert expected_everywhere(holders, members, on_reference) is expected
