"""Deltas of counters and changes of levels between two polls (the pure
`partdash.health.counters`)."""

import pytest

from partdash.health.counters import counter_delta, level_change


@pytest.mark.parametrize(
    ("new", "old", "delta"),
    [(150, 100, 50), (100, 100, 0), (30, 100, 30), (0, 100, 0), (None, 5, None), (5, None, None)],
)
def test_counter_delta_treats_a_decrease_as_a_reset(new, old, delta):
    assert counter_delta(new, old) == delta


def test_level_change_can_be_negative_and_is_unknown_without_both_ends():
    assert level_change(100, 80) == -20
    assert level_change(None, 80) is None
