"""Deltas of counters and changes of levels between two polls (the pure
`partdash.health.counters`)."""

import pytest

from partdash.health.counters import counter_delta, level_change, rows_changed


@pytest.mark.parametrize(
    ("new", "old", "delta"),
    [(150, 100, 50), (100, 100, 0), (30, 100, 30), (0, 100, 0), (None, 5, None), (5, None, None)],
)
def test_counter_delta_treats_a_decrease_as_a_reset(new, old, delta):
    assert counter_delta(new, old) == delta


def test_level_change_can_be_negative_and_is_unknown_without_both_ends():
    assert level_change(100, 80) == -20
    assert level_change(None, 80) is None


@pytest.mark.parametrize(
    ("new", "old", "rows", "changed"),
    [
        (40, 10, 250, 30),  # counting up
        (3, 20, 250, 26 - 20 + 3),  # reset past a tenth of 250 rows (26), then 3 more
        (3, 30, 250, 3),  # reset with the tenth already reached before the last poll
        (0, 20, 250, 0),  # ANALYZE, or the partition left the dictionary cache
        (5, None, 250, None),
        (None, 5, 250, None),
    ],
)
def test_rows_changed_count_the_tenth_a_reset_took(new, old, rows, changed):
    assert rows_changed(new, old, rows) == changed
