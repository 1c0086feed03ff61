"""Hot partitions: shares of a table's activity on its write signal (rows changed, else
disk writes, else growth) and disk reads, and persistence over the window's slots (the
pure `partdash.health.hotspots`)."""

import random
from dataclasses import fields
from datetime import date, timedelta

import pytest

from partdash.health import hotspots
from partdash.health.hotspots import (
    HotPartition,
    Hotspots,
    PartitionActivity,
    Signals,
    find_hotspots,
    hot_share_threshold,
    old_partition_writes,
)
from partdash.health.partitions import PartitionState
from tests.health.builders import NOW, MiB, ranged, to_days


@pytest.mark.parametrize(
    ("partitions", "threshold"),
    [(2, 0.75), (3, 0.5), (8, 0.5), (16, 0.5), (32, 0.25), (128, 0.0625), (1024, 8 / 1024)],
)
def test_the_hot_share_threshold_by_partition_count(partitions, threshold):
    assert hot_share_threshold(partitions) == pytest.approx(threshold)


def io(writes: list[int], reads: list[int] | None = None) -> list[PartitionActivity]:
    reads = reads or [0] * len(writes)
    return [
        PartitionActivity(f"p{i}", write_bytes=w, read_bytes=r)
        for i, (w, r) in enumerate(zip(writes, reads, strict=True))
    ]


SLOTS = 4  # slots of the window in which a steady workload was seen


def _scaled(activity: PartitionActivity, slots: int) -> PartitionActivity:
    figures = {
        f.name: (v // slots if isinstance(v, int) else v)
        for f in fields(PartitionActivity)
        if (v := getattr(activity, f.name)) is not None
    }
    return PartitionActivity(**figures)


def steadily(activity: list[PartitionActivity], slots: int = SLOTS) -> hotspots.Hotspots:
    """`find_hotspots` of a workload with the same proportions in each of `slots` slots
    (the window's sums are `activity`)."""
    per_slot = [_scaled(a, slots) for a in activity]
    return find_hotspots(activity, [per_slot] * slots)


def test_all_writes_into_the_newest_range_partition_make_it_hot():
    result = steadily(io([0] * 12 + [200 * MiB, 0]))
    assert result.source == "disk"
    assert result.hot == ["p12"]
    assert result.shares["p12"] == 1.0
    assert result.shares["p0"] == 0.0
    assert not result.estimated


@pytest.mark.parametrize("count", [2, 8, 128])
def test_a_uniformly_written_hash_table_has_no_hotspot(count):
    assert steadily(io([64 * MiB] * count)).hot == []


@pytest.mark.parametrize("count", [2, 8, 128])
def test_uneven_flushing_in_a_uniform_hash_table_is_not_a_hotspot(count):
    noise = random.Random(count)
    writes = [int(64 * MiB * noise.uniform(0.6, 1.4)) for _ in range(count)]
    reads = [int(8 * MiB * noise.uniform(0.6, 1.4)) for _ in range(count)]
    assert steadily(io(writes, reads)).hot == []


def test_a_lightly_written_hash_table_with_a_chance_cluster_has_no_hotspot():
    # 40 pages over 128 partitions: 3 in one is over 1/16 of the writes, by chance
    pages = [3] + [1] * 37 + [0] * 90
    result = steadily(io([p * hotspots.PAGE_BYTES for p in pages]))
    assert result.shares["p0"] == 3 / 40
    assert result.shares["p0"] > hot_share_threshold(128)
    assert result.hot == []


@pytest.mark.parametrize(
    ("writes", "hot"),
    [
        ([55, 45], []),  # the busier half of two is not hot
        ([90, 10], ["p0"]),
        ([60, 20, 20], ["p0"]),
        ([40, 30, 30], []),
        ([50, 0, 0, 0, 0, 0, 0, 50], ["p0", "p7"]),  # two halves of an 8-partition table
        ([10] + [1] * 127, ["p0"]),  # 10/137 of 128: over 8x the even share
        ([5] + [1] * 127, []),
    ],
)
def test_hot_partitions_by_share(writes, hot):
    result = steadily(io([w * 100 * hotspots.PAGE_BYTES for w in writes]))
    assert result.hot == hot


def test_a_few_writes_are_too_little_activity_to_call_a_hotspot():
    few = steadily(io([10 * hotspots.PAGE_BYTES, 0, 0, 0]))
    assert few.shares["p0"] == 1.0
    assert few.hot == []
    enough = steadily(io([hotspots.MIN_HOT_EVENTS * hotspots.PAGE_BYTES, 0, 0, 0]))
    assert enough.hot == ["p0"]


def test_a_partition_taking_most_reads_is_hot_even_when_writes_are_even():
    result = steadily(io([64 * MiB] * 4, reads=[900 * MiB, 10 * MiB, 10 * MiB, 10 * MiB]))
    assert result.hot == ["p0"]
    assert result.read_shares["p0"] == pytest.approx(0.9677, abs=1e-4)
    assert result.shares["p0"] == 0.25


def test_a_single_partition_is_never_hot():
    assert steadily(io([500 * MiB])).hot == []


def test_an_idle_table_has_zero_shares_and_no_hotspot():
    result = find_hotspots(io([0, 0, 0]))
    assert result.source == "disk"
    assert result.shares == {"p0": 0.0, "p1": 0.0, "p2": 0.0}
    assert result.hot == []


@pytest.mark.parametrize(
    ("activity", "source"),
    [
        ([PartitionActivity("p0", write_bytes=0, modified=5000, rows_added=10)], "rows_changed"),
        ([PartitionActivity("p0", write_bytes=5, rows_added=10)], "disk"),
        ([PartitionActivity("p0", read_bytes=0, modified=5)], "rows_changed"),
        ([PartitionActivity("p0", rows_added=10, bytes_added=1)], "growth"),
        ([PartitionActivity("p0", bytes_added=1)], "growth"),
    ],
)
def test_without_the_servers_signals_the_best_known_one_is_judged_on(activity, source):
    result = find_hotspots(activity)
    assert result.source == source
    assert result.estimated is (source == "growth")


def test_rows_changed_are_judged_on_wherever_the_server_gives_them():
    """Disk writes with no row changed anywhere: a checkpoint flushing pages a bulk load
    dirtied. Shown as disk writes, never as the application's writes."""
    flush = [PartitionActivity(f"p{i}", write_bytes=(900 if i == 3 else 1) * MiB) for i in range(8)]
    per_slot = [_scaled(a, 4) for a in flush]
    result = find_hotspots(flush, [per_slot] * 4, Signals(rows_changed=True, disk=True))
    assert result.source == "rows_changed"
    assert result.hot == [] and set(result.shares.values()) == {0.0}
    assert hotspots.written_partitions(flush, result.source) == []
    # Where rows changed cannot be read, disk writes stand in: then p3 is hot.
    stand_in = find_hotspots(flush, [per_slot] * 4, Signals(rows_changed=False, disk=True))
    assert (stand_in.source, stand_in.hot) == ("disk", ["p3"])


def test_without_rows_changed_or_disk_growth_stands_in():
    grown = [PartitionActivity("p0", rows_added=5000), PartitionActivity("p1", rows_added=0)]
    result = find_hotspots(grown, signals=Signals(rows_changed=False, disk=False))
    assert (result.source, result.estimated, result.read_shares) == ("growth", True, {})


def test_without_any_source_there_are_no_hotspots():
    assert find_hotspots([PartitionActivity("p0"), PartitionActivity("p1")]) is None
    assert find_hotspots([]) is None


def test_modified_counter_deltas_find_the_newest_range_partition():
    activity = [PartitionActivity(f"p{i}", modified=0) for i in range(12)]
    activity.append(PartitionActivity("p12", modified=40_000))
    activity.append(PartitionActivity("pmax", modified=0))
    result = steadily(activity)
    assert (result.source, result.hot) == ("rows_changed", ["p12"])


def test_shrinking_partitions_count_as_no_growth():
    activity = [
        PartitionActivity("p0", rows_added=-5000),
        PartitionActivity("p1", rows_added=3000),
        PartitionActivity("p2", rows_added=1000),
    ]
    result = steadily(activity)
    assert result.shares == {"p0": 0.0, "p1": 0.75, "p2": 0.25}
    assert result.hot == ["p1"]


def test_written_partitions_are_those_with_any_sign_of_writes():
    activity = [
        PartitionActivity("p0", write_bytes=0, modified=0),
        PartitionActivity("p1", write_bytes=16384),
        PartitionActivity("p2", modified=3),
        PartitionActivity("p3", rows_added=-10, bytes_added=0),
        PartitionActivity("p4"),
    ]
    assert hotspots.written_partitions(activity) == ["p1", "p2"]
    # With rows changed known, a disk write alone is a flush, not the application.
    assert hotspots.written_partitions(activity, "rows_changed") == ["p2"]


# -- hotspots: persistence over the window's slots ---------------------------------------


def slot(writes: dict[str, int] | None = None, reads: dict[str, int] | None = None):
    """One slot's activity: only the partitions named did something."""
    writes, reads = writes or {}, reads or {}
    return [
        PartitionActivity(name, write_bytes=writes.get(name, 0), read_bytes=reads.get(name, 0))
        for name in dict.fromkeys([*writes, *reads])
    ]


def window_of(names: list[str], slots: list[list[PartitionActivity]]):
    """Every partition's sums over the slots, as the analysis passes them."""
    return [
        PartitionActivity(
            name,
            write_bytes=sum(a.write_bytes or 0 for s in slots for a in s if a.name == name),
            read_bytes=sum(a.read_bytes or 0 for s in slots for a in s if a.name == name),
        )
        for name in names
    ]


def judged(names: list[str], slots: list[list[PartitionActivity]]) -> hotspots.Hotspots:
    return find_hotspots(window_of(names, slots), slots)


HASH4 = ["p0", "p1", "p2", "p3"]


@pytest.mark.parametrize(
    ("active", "needed"), [(0, 3), (1, 3), (3, 3), (6, 3), (7, 4), (12, 6), (13, 7)]
)
def test_on_disk_io_a_hot_partition_must_be_hot_in_half_the_active_slots_and_three(active, needed):
    assert hotspots.slots_needed(active, "disk") == needed
    assert hotspots.slots_needed(active, "growth") == needed
    assert hotspots.slots_needed(active, "rows_changed", kind="read") == needed


@pytest.mark.parametrize(
    ("active", "hold", "needed"), [(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 2), (1, 2, 2)]
)
def test_on_rows_changed_the_hold_and_half_the_active_slots(active, hold, needed):
    assert hotspots.slots_needed(active, "rows_changed", hotspots.Hold(hold)) == needed


@pytest.mark.parametrize(
    ("window", "hold", "poll", "expected"),
    [
        # The default window (3600 s, slots of 300 s) polled every minute: as before.
        (3600, 300, 60, hotspots.Hold(1, 12)),
        (3600, 600, 60, hotspots.Hold(2, 12)),
        (3600, 3600, 60, hotspots.Hold(12, 12)),
        # Polled every 10 minutes: a slot stands for a poll's 10 minutes, six in the hour.
        (3600, 300, 600, hotspots.Hold(1, 6)),
        (3600, 1800, 600, hotspots.Hold(3, 6)),
        # Issue 43: a window of two minutes (slots of 10 s) polled every minute holds
        # two polls. The old hold (300 s over 10 s slots) asked for 30 slots of 12.
        (120, 10, 60, hotspots.Hold(1, 2)),
        (120, 120, 60, hotspots.Hold(2, 2)),
        (120, 300, 60, hotspots.Hold(2, 2)),  # clamped to the window
        (120, 300, None, hotspots.Hold(12, 12)),
        # Polls further apart than the window: one poll's worth is all there is.
        (120, 10, 600, hotspots.Hold(1, 1)),
    ],
)
def test_the_hold_never_asks_for_more_slots_than_the_window_has_polls(window, hold, poll, expected):
    assert hotspots.hold_for(window, hold, poll) == expected


def test_on_disk_io_a_window_with_two_polls_asks_for_two_hot_slots_not_three():
    two_polls = hotspots.Hold(1, 2)
    assert hotspots.slots_needed(2, "disk", two_polls) == 2
    assert hotspots.slots_needed(2, "rows_changed", two_polls) == 1
    # Extra polls (by hand) in the window still need half of the active slots.
    assert hotspots.slots_needed(6, "disk", two_polls) == 3


def test_one_burst_of_disk_writes_shows_in_the_shares_and_is_not_a_hotspot():
    burst = [slot({"p1": 500 * MiB})]
    result = judged(HASH4, burst)
    assert result.shares["p1"] == 1.0
    assert result.hot == [] and result.detail == ()


def test_one_slot_of_rows_changed_is_a_hotspot_and_a_longer_hold_waits():
    """A hot UPDATE loop seen by one poll: flagged at once with the default hold (one
    slot); with a hold of two slots, only once it kept on into the next."""
    names = ["p0", "p1", "p2", "p3"]
    one = [[PartitionActivity("p2", modified=300)]]
    window = [PartitionActivity(n, modified=300 if n == "p2" else None) for n in names]
    assert find_hotspots(window, one).hot == ["p2"]
    assert find_hotspots(window, one, hold=hotspots.Hold(2)).hot == []
    two = one * 2
    window2 = [PartitionActivity(n, modified=600 if n == "p2" else None) for n in names]
    assert find_hotspots(window2, two, hold=hotspots.Hold(2)).detail == (
        hotspots.HotPartition("p2", "write", 1.0, 2, 2),
    )


def test_two_slots_of_writes_are_not_yet_persistent_and_three_are():
    two = [slot({"p1": 50 * MiB})] * 2
    assert judged(HASH4, two).hot == []
    three = [slot({"p1": 50 * MiB})] * 3
    result = judged(HASH4, three)
    assert result.hot == ["p1"]
    assert result.detail == (hotspots.HotPartition("p1", "write", 1.0, 3, 3),)


def test_hot_in_half_the_active_slots_is_enough_and_fewer_is_not():
    even = slot({name: 10 * MiB for name in HASH4})
    hot = slot({"p1": 100 * MiB, "p0": 1 * MiB})
    half = [hot] * 5 + [even] * 5
    result = judged(HASH4, half)
    assert [(d.partition, d.slots_hot, d.slots_active) for d in result.detail] == [("p1", 5, 10)]
    assert judged(HASH4, [hot] * 4 + [even] * 6).hot == []


def test_slots_without_activity_of_a_kind_are_not_active_for_it():
    """Reads in three slots out of twelve with writes: the three are all the read slots."""
    writes = [slot({name: 10 * MiB for name in HASH4})] * 9
    reads = [slot(reads={"p2": 80 * MiB, "p3": 2 * MiB})] * 3
    result = judged(HASH4, writes + reads)
    assert result.detail == (hotspots.HotPartition("p2", "read", pytest.approx(80 / 82), 3, 3),)


def test_one_count_star_over_a_skewed_table_shows_its_reads_and_flags_nothing():
    """The diagnostic scan read every partition once, most of it the big one."""
    writes = [slot({name: 10 * MiB for name in HASH4})] * 6
    scan = slot(reads={"p0": 80 * MiB, "p1": 7 * MiB, "p2": 7 * MiB, "p3": 6 * MiB})
    result = judged(HASH4, [*writes[:3], scan, *writes[3:]])
    assert result.read_shares["p0"] == pytest.approx(0.8)
    assert result.hot == [] and result.detail == ()


def test_writes_and_reads_are_judged_and_reported_separately():
    steady = slot({"p0": 90 * MiB, "p1": 10 * MiB}, reads={"p3": 40 * MiB, "p2": 10 * MiB})
    result = judged(HASH4, [steady] * 4)
    assert result.hot == ["p0", "p3"]
    assert [(d.partition, d.kind, round(d.share, 2)) for d in result.detail] == [
        ("p0", "write", 0.9),
        ("p3", "read", 0.8),
    ]


def test_the_slots_are_built_only_when_a_partition_passes_the_share_rule():
    """Building them for a busy HASH table costs more than the rest of its analysis."""
    built = []

    def slots_of(slots):
        return lambda: built.append(1) or slots

    even = [slot({name: 10 * MiB for name in HASH4})] * 4
    assert find_hotspots(window_of(HASH4, even), slots_of(even)).hot == []
    assert built == []
    hot = [slot({"p1": 10 * MiB})] * 4
    assert find_hotspots(window_of(HASH4, hot), slots_of(hot)).hot == ["p1"]
    assert built == [1]


def test_a_partition_hot_in_many_slots_but_not_over_the_window_is_not_hot():
    """Hot in the quiet slots only: a trickle, while the big writes went elsewhere."""
    trickle = slot({"p0": 1 * MiB})
    flood = slot({name: 100 * MiB for name in HASH4})
    result = judged(HASH4, [trickle] * 6 + [flood] * 2)
    assert result.shares["p0"] < hot_share_threshold(4)
    assert result.hot == []


# -- writes into an old RANGE partition --------------------------------------------------


def daily(first: date, days: int, catchall: int = 0) -> list[PartitionState]:
    """A TO_DAYS table of `days` daily partitions from `first` (10 rows each), then pmax."""
    bounds = [(str(to_days(first + timedelta(days=i + 1))), 10) for i in range(days)]
    return ranged([*bounds, ("MAXVALUE", catchall)])


def writes_to(*names: str, share: float = 0.98) -> Hotspots:
    detail = tuple(HotPartition(name, "write", share, 6, 6) for name in names)
    return Hotspots("rows_changed", {}, {}, list(names), False, detail)


def old_writes(hotspots: Hotspots, partitions, expression="to_days(`d`)", now=NOW) -> list[str]:
    found = old_partition_writes(hotspots, "RANGE", expression, partitions, now)
    return [hot.partition for hot in found]


def test_writes_into_a_month_old_day_are_old_and_into_today_are_not():
    """p0..p39 hold 2026-01-30 .. 2026-03-10 (NOW's day, p39), p40 and p41 are ahead."""
    table = daily(date(2026, 1, 30), 42)
    assert old_writes(writes_to("p9"), table) == ["p9"]  # 2026-02-08: a month old
    assert old_writes(writes_to("p39"), table) == []  # today
    # Around a rollover (or a server clock in another zone) yesterday and tomorrow are
    # where rows may go; two days ahead is not.
    assert old_writes(writes_to("p38", "p40", "p41"), table) == ["p41"]
    # The catch-all counts once the last bound is reached, not before.
    assert old_writes(writes_to("p42"), table) == ["p42"]
    assert old_writes(writes_to("p30"), daily(date(2026, 1, 1), 30, catchall=500)) == []
    # Reads, and tables not RANGE, are another rule's.
    reads = Hotspots("rows_changed", {}, {}, ["p9"], False, (HotPartition("p9", "read", 1, 6, 6),))
    assert old_writes(reads, table) == []
    assert old_partition_writes(writes_to("p9"), "HASH", "id", table, NOW) == []


def test_on_ids_only_the_newest_partition_holding_rows_takes_new_rows():
    table = ranged([("100", 100), ("200", 100), ("300", 40), ("400", 0), ("MAXVALUE", 0)])
    assert old_writes(writes_to("p0"), table, "id") == ["p0"]
    assert old_writes(writes_to("p2"), table, "id") == []
    # Unknown rows after it: it may not be old.
    unknown = ranged([("100", 100), ("200", None), ("MAXVALUE", 0)])
    assert old_writes(writes_to("p0"), unknown, "id") == []
