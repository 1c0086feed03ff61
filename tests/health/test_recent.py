"""`partdash.health.recent`: each poll's deltas summed into slots of the window."""

import pytest

from partdash.health.recent import (
    FIGURES,
    Reading,
    dumps,
    loads,
    poll_deltas,
    record,
    slot_seconds,
    window_ends,
    window_slots,
    window_sums,
)

HOUR = 3600
SLOT = slot_seconds(HOUR)  # 300 s
T0 = 1_700_000_100  # a poll time, 100 s into a slot (1_700_000_100 % 300 == 0 + 100 at most)


def test_a_slot_is_a_twelfth_of_the_window():
    assert SLOT == 300 and slot_seconds(60) == 5 and slot_seconds(5) == 1


def test_deltas_of_counters_and_levels_in_figure_order():
    old = Reading(100, 50, 7, 1000, 16384, 16384, 10, 9)
    new = Reading(164, 50, 9, 1200, 32768, 16384, 14, 11)
    deltas = poll_deltas(new, old)
    assert dict(zip(FIGURES, deltas, strict=True)) == {
        "write_bytes": 64,
        "read_bytes": 0,
        "modified": 2,
        "rows_added": 200,
        "bytes_added": 16384,
        "compress_ops": 4,
        "compress_ops_ok": 2,
    }


def test_a_reset_counter_counts_what_it_holds_now_and_levels_may_shrink():
    old = Reading(write_bytes=10_000, modified_counter=500, rows=1000)
    new = Reading(write_bytes=300, modified_counter=20, rows=900)  # TRUNCATE, recalculation
    deltas = dict(zip(FIGURES, poll_deltas(new, old), strict=True))
    assert (deltas["write_bytes"], deltas["modified"], deltas["rows_added"]) == (300, 20, -100)


def test_unknown_figures_add_nothing():
    assert poll_deltas(Reading(rows=5), Reading()) == [0] * len(FIGURES)


def test_polls_in_one_slot_add_up_and_trailing_zeros_are_left_off():
    entries = record([], [10, 0, 0, 0, 0, 0, 0], T0, HOUR)
    entries = record(entries, [5, 0, 3, 0, 0, 0, 0], T0 + 30, HOUR)
    start = T0 // SLOT * SLOT
    assert entries == [[start, 15, 0, 3]]
    entries = record(entries, [1, 0, 0, 0, 0, 0, 0], T0 + SLOT, HOUR)  # the next slot
    assert entries == [[start, 15, 0, 3], [start + SLOT, 1]]


def test_nothing_new_keeps_the_entries():
    entries = [[T0 // SLOT * SLOT, 4]]
    assert record(entries, [0] * len(FIGURES), T0 + 10, HOUR) == entries


def test_slots_that_left_the_window_are_dropped_when_the_partition_changes_again():
    entries = record([], [10], T0, HOUR)
    later = T0 + 2 * HOUR
    assert record(entries, [3], later, HOUR) == [[later // SLOT * SLOT, 3]]


def test_window_sums_count_every_slot_that_overlaps_the_window():
    entries = record([], [8, 4], T0, HOUR)
    entries = record(entries, [2, 0, 0, 100], T0 + 20 * 60, HOUR)
    sums = window_sums(entries, T0 + 30 * 60, HOUR)
    assert sums["write_bytes"] == 10 and sums["read_bytes"] == 4 and sums["rows_added"] == 100
    assert sums["modified"] is None  # no sign of it: the hotspot rules fall back
    only_last = window_sums(entries, T0 + HOUR + 10 * 60, HOUR)
    assert only_last["write_bytes"] == 2 and only_last["read_bytes"] is None
    assert all(v is None for v in window_sums(entries, T0 + 3 * HOUR, HOUR).values())


def test_a_burst_after_a_quiet_spell_longer_than_the_window_counts_in_full():
    """The baseline is the last known value, however old: a quiet partition has no
    entries, and the burst's delta (from that value) is its first."""
    deltas = poll_deltas(Reading(write_bytes=5_000_000), Reading(write_bytes=1_000_000))
    entries = record([], deltas, T0 + 2 * HOUR, HOUR)
    assert window_sums(entries, T0 + 2 * HOUR, HOUR)["write_bytes"] == 4_000_000


def test_the_window_ends_when_its_oldest_slot_leaves_it():
    entries = record(record([], [1], T0, HOUR), [1], T0 + 15 * 60, HOUR)
    start = T0 // SLOT * SLOT
    ends = window_ends(entries, T0 + 20 * 60, HOUR)
    assert ends == start + SLOT + HOUR
    assert window_sums(entries, ends - 1, HOUR)["write_bytes"] == 2
    assert window_sums(entries, ends, HOUR)["write_bytes"] == 1
    assert window_ends([], T0, HOUR) is None


@pytest.mark.parametrize("window", [60, 3600, 86400])
def test_a_partition_keeps_at_most_thirteen_slots(window):
    entries = []
    for poll in range(200):
        entries = record(entries, [1], T0 + poll * window / 50, window)
    assert len(entries) <= 13


def test_entries_round_trip_through_their_stored_text():
    entries = [[1_700_000_100, 16384, 0, 1], [1_700_000_400, 0, 0, 0, -3]]
    text = dumps(entries)
    assert text == "1700000100,16384,0,1;1700000400,0,0,0,-3"
    assert loads(text) == entries
    assert dumps([]) is None and loads(None) == [] and loads("") == []


def test_the_slots_in_the_window_each_with_its_figures():
    entries = [[T0 - 2 * HOUR, 9], [T0 - HOUR + SLOT, 5, 7], [T0, 0, 0, 3]]
    slots = window_slots(entries, T0 + 1, HOUR)
    assert [start for start, _ in slots] == [T0 - HOUR + SLOT, T0]
    assert slots[0][1]["write_bytes"] == 5 and slots[0][1]["read_bytes"] == 7
    assert slots[1][1] == dict.fromkeys(FIGURES, 0) | {"modified": 3}
