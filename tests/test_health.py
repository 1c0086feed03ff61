"""The pure health analytics: skew, hotspots, compression, runway and server pressure.

No database: plain values in, plain values out. Bounds and CREATE_OPTIONS spellings are
the ones MariaDB 10.11 returns (checked on a live server: TO_DAYS('2026-01-01') = 739982,
TO_SECONDS('2026-01-01') = 63934444800, "`PAGE_COMPRESSED`='1'")."""

import math
import random
from dataclasses import fields
from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace

import pytest

from partdash.health import compression, hotspots, pressure, skew
from partdash.health.bounds import first_value, is_catchall, parse_expression, range_bound
from partdash.health.counters import counter_delta, level_change
from partdash.health.estimates import age_seconds, oldest
from partdash.health.hotspots import PartitionActivity, find_hotspots, hot_share_threshold
from partdash.health.partitions import PartitionState, merge_subpartitions
from partdash.health.runway import bound_to_date, growth_per_day, table_runway

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
APRIL = date(2026, 4, 1)
MiB = 1 << 20
GiB = 1 << 30


def to_days(day: date) -> int:
    """MySQL's TO_DAYS."""
    return day.toordinal() + 365


def epoch(day: date) -> int:
    """UNIX_TIMESTAMP of midnight UTC."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def part(name: str, rows: int | None = None, ordinal: int = 0, **figures) -> PartitionState:
    return PartitionState(name=name, rows=rows, ordinal=ordinal, **figures)


def table(rows: list[int | None], **figures) -> list[PartitionState]:
    """p0..pN-1 with these row counts, in order."""
    return [part(f"p{i}", r, i, **figures) for i, r in enumerate(rows)]


def ranged(bounds_and_rows: list[tuple[str, int | None]], **figures) -> list[PartitionState]:
    """RANGE partitions from (description, rows), in order."""
    return [
        part(f"p{i}", rows, i, description=description, **figures)
        for i, (description, rows) in enumerate(bounds_and_rows)
    ]


def monthly(months: list[tuple[date, int | None]], catchall: int | None = 0):
    """A TO_DAYS table: (exclusive upper bound, rows) per partition, then MAXVALUE."""
    bounds = [(str(to_days(bound)), rows) for bound, rows in months]
    return ranged([*bounds, ("MAXVALUE", catchall)])


# -- skew: the figures ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "ratio", "cv", "gini"),
    [
        ([1, 1, 1, 1], 1.0, 0.0, 0.0),
        ([0, 0, 0, 1], 4.0, math.sqrt(3), 0.75),
        ([300, 100, 100, 100], 2.0, 1 / math.sqrt(3), 0.25),
        ([10, 30], 1.5, 0.5, 0.25),
        ([7], 1.0, 0.0, 0.0),
        ([0, 0, 0], 1.0, 0.0, 0.0),
        ([None, 5, None, 5], 1.0, 0.0, 0.0),
    ],
)
def test_skew_figures_have_known_values(values, ratio, cv, gini):
    figure = skew.skew(values)
    assert figure.max_mean_ratio == pytest.approx(ratio)
    assert figure.cv == pytest.approx(cv)
    assert figure.gini == pytest.approx(gini, abs=1e-12)


@pytest.mark.parametrize("values", [[], [None], [None, None]])
def test_skew_of_nothing_known_is_unknown_not_even(values):
    assert skew.skew(values) is None


def test_gini_equals_the_mean_absolute_difference_definition():
    values = [3, 0, 17, 4, 4, 250, 9]
    n, mean = len(values), sum(values) / len(values)
    pairwise = sum(abs(a - b) for a in values for b in values) / (2 * n * n * mean)
    assert skew.gini(values) == pytest.approx(pairwise)


def test_gini_of_one_partition_holding_everything_is_n_minus_one_over_n():
    assert skew.gini([0] * 127 + [1000]) == pytest.approx(127 / 128)


# -- skew: judged by method -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["HASH", "KEY", "LINEAR HASH", "LINEAR KEY", "hash"])
def test_a_hash_partition_holding_half_the_rows_is_a_finding(method):
    finding = skew.judge_skew(method, table([300_000, 100_000, 100_000, 100_000]))
    assert finding.is_finding
    assert finding.skew.max_mean_ratio == 2.0  # mean 150,000
    assert finding.largest == "p0"
    assert finding.judged_on == ["p0", "p1", "p2", "p3"]
    assert finding.threshold == skew.HASH_SKEW_RATIO
    assert "2.00x" in finding.reason


def test_a_uniform_hash_table_of_128_partitions_is_even():
    finding = skew.judge_skew("HASH", table([50_000] * 128))
    assert not finding.is_finding
    assert finding.skew == skew.Skew(1.0, 0.0, 0.0)
    assert len(finding.judged_on) == 128


def test_statistics_noise_in_a_uniform_hash_table_is_not_a_finding():
    noise = random.Random(4)
    rows = [int(50_000 * noise.uniform(0.85, 1.15)) for _ in range(128)]
    finding = skew.judge_skew("KEY", table(rows))
    assert not finding.is_finding
    assert 1.0 < finding.skew.max_mean_ratio < 1.2


def test_a_hash_table_just_over_the_limit_is_a_finding_and_just_under_is_not():
    assert skew.judge_skew("HASH", table([1510, 830, 830, 830])).is_finding  # 1.51x
    assert not skew.judge_skew("HASH", table([1490, 837, 837, 836])).is_finding  # 1.49x


def test_a_tiny_hash_table_is_too_small_to_judge():
    finding = skew.judge_skew("HASH", table([30, 1, 1, 0]))
    assert finding.skew.max_mean_ratio == 3.75
    assert not finding.is_finding
    assert "too little to judge" in finding.reason


@pytest.mark.parametrize(
    ("rows", "judged"),
    [([], []), ([5000], ["p0"]), ([None, None], []), ([None, 5000], ["p1"])],
)
def test_fewer_than_two_known_partitions_are_never_a_finding(rows, judged):
    finding = skew.judge_skew("HASH", table(rows))
    assert not finding.is_finding
    assert finding.judged_on == judged
    assert "fewer than two" in finding.reason


def test_partitions_with_unknown_rows_are_left_out_of_the_judgement():
    finding = skew.judge_skew("HASH", table([3000, None, 1000, 1000, 1000]))
    assert finding.judged_on == ["p0", "p2", "p3", "p4"]
    assert finding.skew.max_mean_ratio == 2.0


def test_range_is_judged_on_closed_partitions_only():
    partitions = monthly(
        [
            (date(2026, 1, 1), 10_000),
            (date(2026, 2, 1), 11_000),
            (date(2026, 3, 1), 12_000),
            (date(2026, 4, 1), 400),  # filling
            (date(2026, 5, 1), 0),  # future
            (date(2026, 6, 1), 0),
        ]
    )
    finding = skew.judge_skew("RANGE", partitions)
    assert finding.judged_on == ["p0", "p1", "p2"]
    assert finding.skew.max_mean_ratio == pytest.approx(12_000 / 11_000)
    assert not finding.is_finding


def test_a_closed_range_partition_far_above_the_others_is_a_finding():
    partitions = monthly(
        [(date(2026, m, 1), rows) for m, rows in [(1, 1000), (2, 1000), (3, 10_000), (4, 50)]]
    )
    finding = skew.judge_skew("RANGE", partitions)
    assert finding.judged_on == ["p0", "p1", "p2"]
    assert finding.skew.max_mean_ratio == 2.5  # mean 4,000: under RANGE's 3.0
    assert not finding.is_finding
    bigger = monthly(
        [
            (date(2026, m, 1), rows)
            for m, rows in [(1, 1000), (2, 1000), (3, 1000), (4, 20_000), (5, 9)]
        ]
    )
    finding = skew.judge_skew("RANGE COLUMNS", bigger)
    assert finding.is_finding
    assert finding.largest == "p3"
    assert finding.skew.max_mean_ratio == pytest.approx(20_000 / 5_750)


def test_rows_in_the_catchall_close_every_bounded_range_partition():
    partitions = monthly([(date(2026, 1, 1), 5000), (date(2026, 2, 1), 5000)], catchall=900)
    assert skew.judge_skew("RANGE", partitions).judged_on == ["p0", "p1"]


def test_a_range_table_still_filling_its_first_partition_has_nothing_to_judge():
    partitions = monthly([(date(2026, 4, 1), 500), (date(2026, 5, 1), 0)])
    finding = skew.judge_skew("RANGE", partitions)
    assert finding.skew is None
    assert finding.judged_on == []
    assert not finding.is_finding


@pytest.mark.parametrize(
    ("rows", "is_finding"),
    [
        ([50_000, 10_000, 10_000, 10_000], True),  # 2.5x the mean
        ([30_000, 20_000, 15_000, 15_000], False),  # 1.5x: business as usual for lists
        ([90_000, 10_000], False),  # two lists cannot exceed 2.0x
    ],
)
def test_list_partitions_are_judged_on_the_spread_between_lists(rows, is_finding):
    assert skew.judge_skew("LIST", table(rows)).is_finding is is_finding
    assert skew.judge_skew("LIST COLUMNS", table(rows)).is_finding is is_finding


def test_a_method_without_an_expected_spread_is_measured_but_not_judged():
    finding = skew.judge_skew("SYSTEM_TIME", table([100_000, 1000]))
    assert finding.skew is not None
    assert not finding.is_finding
    assert "not judged" in finding.reason


def test_skew_over_bytes_uses_data_plus_index_bytes():
    partitions = [
        part("p0", 10, 0, data_bytes=40 * MiB, index_bytes=20 * MiB),
        part("p1", 10, 1, data_bytes=8 * MiB, index_bytes=2 * MiB),
        part("p2", 10, 2, data_bytes=8 * MiB, index_bytes=2 * MiB),
        part("p3", 10, 3, data_bytes=8 * MiB, index_bytes=None),  # unknown: left out
    ]
    finding = skew.judge_skew("HASH", partitions, measure="bytes")
    assert finding.measure == "bytes"
    assert finding.judged_on == ["p0", "p1", "p2"]
    assert finding.skew.max_mean_ratio == pytest.approx(60 / (80 / 3))
    assert finding.is_finding


def test_hash_subpartitions_are_summed_into_their_range_partition():
    partitions = [
        PartitionState("p0", "p0sp0", 0, "100", rows=3000),
        PartitionState("p0", "p0sp1", 0, "100", rows=3000),
        PartitionState("p1", "p1sp0", 1, "200", rows=2000),
        PartitionState("p1", "p1sp1", 1, "200", rows=4000),
        PartitionState("p2", "p2sp0", 2, "300", rows=10),
        PartitionState("p2", "p2sp1", 2, "300", rows=0),
    ]
    finding = skew.judge_skew("RANGE", partitions)
    assert finding.judged_on == ["p0", "p1"]
    assert finding.skew.max_mean_ratio == 1.0


def test_a_skew_finding_is_an_estimate_as_old_as_its_stalest_statistics():
    old, new = NOW - timedelta(days=3), NOW - timedelta(minutes=5)
    partitions = [
        part("p0", 5000, 0, stats_updated_at=new),
        part("p1", 5000, 1, stats_updated_at=old),
        part("p2", 5000, 2, stats_updated_at=None),
    ]
    finding = skew.judge_skew("HASH", partitions)
    assert finding.estimated
    assert finding.as_of == old


# -- hotspots --------------------------------------------------------------------------------


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
    assert result.source == "io"
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
    assert result.source == "io"
    assert result.shares == {"p0": 0.0, "p1": 0.0, "p2": 0.0}
    assert result.hot == []


@pytest.mark.parametrize(
    ("activity", "source"),
    [
        (
            [PartitionActivity("p0", write_bytes=0, modified=5000, rows_added=10)],
            "io",
        ),
        ([PartitionActivity("p0", read_bytes=0, modified=5)], "io"),
        ([PartitionActivity("p0", modified=5, rows_added=10, bytes_added=1)], "modified"),
        ([PartitionActivity("p0", rows_added=10, bytes_added=1)], "rows"),
        ([PartitionActivity("p0", bytes_added=1)], "size"),
    ],
)
def test_without_performance_schema_hotspots_fall_back_in_order(activity, source):
    result = find_hotspots(activity)
    assert result.source == source
    assert result.estimated is (source != "io")
    assert (result.read_shares == {}) is (source != "io")


def test_without_any_source_there_are_no_hotspots():
    assert find_hotspots([PartitionActivity("p0"), PartitionActivity("p1")]) is None
    assert find_hotspots([]) is None


def test_modified_counter_deltas_find_the_newest_range_partition():
    activity = [PartitionActivity(f"p{i}", modified=0) for i in range(12)]
    activity.append(PartitionActivity("p12", modified=40_000))
    activity.append(PartitionActivity("pmax", modified=0))
    result = steadily(activity)
    assert (result.source, result.hot) == ("modified", ["p12"])


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
def test_a_hot_partition_must_be_hot_in_half_the_active_slots_and_at_least_three(active, needed):
    assert hotspots.slots_needed(active) == needed


def test_one_burst_shows_in_the_shares_and_is_not_a_hotspot():
    burst = [slot({"p1": 500 * MiB})]
    result = judged(HASH4, burst)
    assert result.shares["p1"] == 1.0
    assert result.hot == [] and result.detail == ()


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


# -- compression -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row_format", "options", "kind"),
    [
        ("Compressed", "row_format=COMPRESSED key_block_size=8 partitioned", "row"),
        ("Compressed", "partitioned", "row"),
        ("", "row_format=COMPRESSED partitioned", "row"),
        ("Dynamic", "KEY_BLOCK_SIZE=4", "row"),
        ("", "partitioned `PAGE_COMPRESSED`='1'", "page"),
        ("", "partitioned `page_compressed`='ON' `page_compression_level`='3'", "page"),
        ("", "PAGE_COMPRESSED=1", "page"),
        ("", 'COMPRESSION="zlib" partitioned', "page"),
        ("", "COMPRESSION='lz4'", "page"),
        ("", "partitioned `PAGE_COMPRESSED`='0'", None),
        ("", "partitioned `page_compressed`='OFF'", None),
        ("", 'COMPRESSION="None"', None),
        ("Dynamic", "partitioned", None),
        ("", "", None),
        ("", None, None),
        ("Dynamic", "key_block_size=0", None),
    ],
)
def test_compression_kind_from_row_format_and_create_options(row_format, options, kind):
    assert compression.compression_kind([row_format], options) == kind


@pytest.mark.parametrize(
    ("ops", "ok", "rate"),
    [(1000, 950, 0.05), (1000, 1000, 0.0), (200, 0, 1.0), (0, 0, None), (None, None, None)],
)
def test_failure_rate(ops, ok, rate):
    assert compression.failure_rate(ops, ok) == (pytest.approx(rate) if rate is not None else None)


def test_an_uncompressed_table_has_no_compression():
    partitions = table([100, 100], row_format="Dynamic", page_size=16384)
    assert compression.table_compression(partitions, "partitioned") is None
    assert compression.partition_compression(partitions[0], "partitioned") is None


def compressed(zip_size: int, counters: list[tuple[int | None, int | None]]):
    return [
        part(
            f"p{i}",
            1000,
            i,
            row_format="Compressed",
            page_size=zip_size,
            compress_ops=ops,
            compress_ops_ok=ok,
        )
        for i, (ops, ok) in enumerate(counters)
    ]


def test_key_block_size_8_that_compresses_well_is_no_finding():
    result = compression.table_compression(
        compressed(8192, [(1000, 990), (1000, 980)]), "row_format=COMPRESSED key_block_size=8"
    )
    assert result.kind == "row"
    assert result.ratio == 2.0
    assert result.ratio_is_nominal
    assert result.failure_rate == pytest.approx(0.015)
    assert not result.is_finding
    assert result.zip_page_size == 8192


def test_incompressible_data_at_key_block_size_4_says_reconsider_key_block_size():
    result = compression.table_compression(compressed(4096, [(1000, 700), (3000, 2100)]))
    assert result.ratio == 4.0
    assert result.failure_rate == pytest.approx(0.3)
    assert result.is_finding
    assert "KEY_BLOCK_SIZE=4" in result.verdict


def test_without_per_index_counters_the_failure_rate_is_unknown_and_says_how_to_get_it():
    result = compression.table_compression(compressed(8192, [(None, None), (None, None)]))
    assert result.failure_rate is None
    assert not result.is_finding
    assert "innodb_cmp_per_index_enabled=ON" in result.verdict


def test_partitions_without_counters_do_not_dilute_the_rate():
    result = compression.table_compression(compressed(8192, [(1000, 800), (None, None)]))
    assert result.failure_rate == pytest.approx(0.2)


def test_too_few_compressions_are_not_judged():
    result = compression.table_compression(compressed(8192, [(10, 5)]))
    assert result.failure_rate == 0.5
    assert not result.is_finding
    assert "too few" in result.verdict


def test_each_partition_has_its_own_failure_rate():
    partitions = compressed(8192, [(1000, 1000), (1000, 500)])
    rates = [compression.partition_compression(p).failure_rate for p in partitions]
    assert rates == [0.0, 0.5]


@pytest.mark.parametrize(
    ("page_size", "options", "innodb_page_size", "zip_size"),
    [
        (8192, "", 16384, 8192),  # the tablespace says
        (16384, "row_format=COMPRESSED key_block_size=4", 16384, 4096),  # options say
        (None, "row_format=COMPRESSED", 16384, 8192),  # InnoDB's default: half a page
        (None, "row_format=COMPRESSED", 32768, 16384),
    ],
)
def test_the_zip_page_size(page_size, options, innodb_page_size, zip_size):
    partitions = [part("p0", 1, row_format="Compressed", page_size=page_size)]
    result = compression.table_compression(partitions, options, innodb_page_size)
    assert result.zip_page_size == zip_size
    assert result.ratio == innodb_page_size / zip_size


def test_page_compression_ratio_is_file_size_over_allocated_size():
    partitions = [
        part("p0", 1, 0, file_bytes=100 * MiB, allocated_bytes=40 * MiB),
        part("p1", 1, 1, file_bytes=100 * MiB, allocated_bytes=40 * MiB),
        part("p2", 1, 2, file_bytes=None, allocated_bytes=None),
    ]
    result = compression.table_compression(partitions, "`PAGE_COMPRESSED`='1'")
    assert result.kind == "page"
    assert result.ratio == 2.5
    assert not result.ratio_is_nominal
    assert result.failure_rate is None
    assert not result.is_finding
    assert "60%" in result.verdict


def test_page_compression_of_incompressible_data_is_a_finding():
    partitions = [part("p0", 1, file_bytes=100 * MiB, allocated_bytes=98 * MiB)]
    result = compression.table_compression(partitions, 'COMPRESSION="zlib"')
    assert result.ratio == pytest.approx(100 / 98)
    assert result.is_finding


@pytest.mark.parametrize(
    ("file_bytes", "allocated", "ratio"),
    [(100, 50, 2.0), (100, 100, 1.0), (0, 0, None), (None, 5, None), (5, None, None)],
)
def test_page_compression_ratio(file_bytes, allocated, ratio):
    assert compression.page_compression_ratio(file_bytes, allocated) == ratio


def test_server_wide_failure_rates_per_page_size_from_innodb_cmp():
    rows = [
        {"page_size": 1024, "compress_ops": 0, "compress_ops_ok": 0},
        {"page_size": 8192, "compress_ops": 2000, "compress_ops_ok": 1900},
    ]
    assert compression.server_failure_rates(rows) == {1024: None, 8192: pytest.approx(0.05)}


# -- runway: bounds --------------------------------------------------------------------------


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


# -- runway: tables --------------------------------------------------------------------------


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


def test_an_id_range_without_growth_has_an_unknown_runway():
    assert table_runway("RANGE", "`id`", id_table(), NOW).days_left is None


def test_an_id_range_without_a_current_id_counts_trailing_empty_partitions():
    result = table_runway("RANGE", "`id`", id_table(autoinc=None), NOW, fill_rate_per_day=1)
    assert result.days_left is None
    assert result.empty_future_partitions == 1


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


# -- server pressure -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("partitions", "limit", "ratio", "level"),
    [
        (64_000, 400, 160.0, "critical"),
        (300, 400, 0.75, "ok"),
        (320, 400, 0.8, "warn"),
        (400, 400, 1.0, "warn"),
        (401, "400", 1.0025, "critical"),
        (10, "0", None, "unknown"),
        (10, None, None, "unknown"),
        (10, "OFF", None, "unknown"),
    ],
)
def test_partitions_against_a_limit(partitions, limit, ratio, level):
    result = pressure.limit_pressure("table_open_cache", partitions, limit)
    assert result.ratio == (pytest.approx(ratio) if ratio is not None else None)
    assert result.level == level


def test_server_limits_read_the_three_settings_from_show_variables_strings():
    variables = {"table_open_cache": "400", "table_definition_cache": "400"}
    result = pressure.server_limits(64_000, variables)
    assert [(r.setting, r.level) for r in result] == [
        ("table_open_cache", "critical"),
        ("table_definition_cache", "critical"),
        ("open_files_limit", "unknown"),
    ]


def test_the_written_working_set_against_the_buffer_pool():
    partitions = [
        part("p0", 1, 0, data_bytes=600 * MiB, index_bytes=200 * MiB, stats_updated_at=NOW),
        part("p1", 1, 1, data_bytes=300 * MiB, index_bytes=100 * MiB),
        part("p2", 1, 2, data_bytes=5 * GiB, index_bytes=GiB),  # not written
    ]
    result = pressure.working_set(partitions, {"p0", "p1"}, str(GiB))
    assert result.bytes == 1200 * MiB
    assert result.ratio == pytest.approx(1200 / 1024)
    assert result.partitions == ["p0", "p1"]
    assert result.is_finding
    assert "insert rate collapses" in result.reason
    assert result.estimated
    assert result.as_of == NOW


def test_a_working_set_that_fits_is_no_finding():
    partitions = [part("p0", 1, data_bytes=100 * MiB, index_bytes=0)]
    result = pressure.working_set(partitions, ["p0"], GiB)
    assert result.ratio == pytest.approx(100 / 1024)
    assert not result.is_finding


def test_a_working_set_without_buffer_pool_size_is_unknown():
    result = pressure.working_set([part("p0", 1, data_bytes=1, index_bytes=1)], ["p0"], None)
    assert result.ratio is None
    assert not result.is_finding


@pytest.mark.parametrize(
    ("file_bytes", "data", "index", "free", "is_finding"),
    [
        (GiB, 600 * MiB, 100 * MiB, 324 * MiB, True),
        (GiB, 900 * MiB, 100 * MiB, 24 * MiB, False),
        (8 * MiB, 2 * MiB, MiB, 5 * MiB, False),  # a fresh file's free extents
        (100 * MiB, 200 * MiB, 0, 0, False),  # statistics newer than the file size
    ],
)
def test_fragmentation_is_free_space_over_the_file(file_bytes, data, index, free, is_finding):
    state = part("p0", 1, file_bytes=file_bytes, data_bytes=data, index_bytes=index)
    result = pressure.fragmentation(state)
    assert result.data_free == free
    assert result.ratio == pytest.approx(free / file_bytes)
    assert result.is_finding is is_finding


def test_fragmentation_of_unknown_sizes_is_unknown():
    result = pressure.fragmentation(part("p0", 1, file_bytes=None, data_bytes=1, index_bytes=1))
    assert (result.data_free, result.ratio, result.is_finding) == (None, None, False)


@pytest.mark.parametrize(
    ("modified", "rows", "ratio", "is_stale"),
    [
        (3000, 10_000, 0.3, True),
        (1500, 10_000, 0.15, False),  # InnoDB's 10% recalculation is due, not overdue
        (500, 1000, 0.5, False),  # too few changes to matter
        (2000, 0, 1.0, True),
        (0, 0, 0.0, False),
        (None, 100, None, False),
        (5, None, None, False),
    ],
)
def test_statistics_are_stale_once_far_more_changed_than_innodb_lets_pass(
    modified, rows, ratio, is_stale
):
    result = pressure.staleness(part("p0", rows, modified_counter=modified), NOW)
    assert result.modified_ratio == ratio
    assert result.is_stale is is_stale


def test_old_statistics_are_shown_as_old_but_not_stale():
    state = part("p0", 1000, modified_counter=0, stats_updated_at=NOW - timedelta(days=30))
    result = pressure.staleness(state, NOW)
    assert result.age_seconds == 30 * 86400
    assert result.is_old
    assert not result.is_stale


def test_stale_partitions_lists_only_the_stale():
    partitions = [
        part("p0", 10_000, 0, modified_counter=5000),
        part("p1", 10_000, 1, modified_counter=10),
    ]
    assert [s.name for s in pressure.stale_partitions(partitions, NOW)] == ["p0"]


# -- estimates and inputs --------------------------------------------------------------------


def test_the_oldest_timestamp_mixes_naive_utc_and_aware_times():
    naive_old = datetime(2026, 3, 1, 12, 0)
    assert oldest([NOW, None, naive_old]) == naive_old
    assert oldest([None]) is None


def test_age_is_never_negative_and_unknown_without_a_time():
    assert age_seconds(NOW - timedelta(hours=1), NOW) == 3600
    assert age_seconds(NOW + timedelta(hours=1), NOW) == 0
    assert age_seconds(datetime(2026, 3, 10, 11, 0), NOW) == 3600
    assert age_seconds(None, NOW) is None


def test_a_partition_state_copies_a_stored_partitions_attributes():
    stored = SimpleNamespace(
        name="p3",
        subpartition=None,
        ordinal=4,
        description="MAXVALUE",
        rows=12,
        data_bytes=16384,
        index_bytes=0,
        row_format=None,
        pk=99,
        table_id=7,
    )
    state = PartitionState.from_object(stored)
    assert (state.name, state.subpartition, state.ordinal, state.rows) == ("p3", "", 4, 12)
    assert state.row_format == ""
    assert state.total_bytes == 16384
    assert state.file_bytes is None


def test_merging_subpartitions_sums_figures_and_keeps_unknown_unknown():
    partitions = [
        PartitionState("p1", "p1sp1", 1, "200", rows=5, data_bytes=10, autoinc=7),
        PartitionState("p1", "p1sp0", 1, "200", rows=3, data_bytes=None, autoinc=9),
        PartitionState("p0", "", 0, "100", rows=1, stats_updated_at=NOW),
    ]
    merged = merge_subpartitions(partitions)
    assert [p.label for p in merged] == ["p0", "p1"]
    assert merged[0] is partitions[2]
    assert (merged[1].rows, merged[1].data_bytes, merged[1].autoinc) == (8, None, 9)
    assert merged[1].description == "200"


def test_a_subpartition_label_carries_both_names():
    assert PartitionState("p1", "p1sp0").label == "p1#p1sp0"
    assert PartitionState("p1").label == "p1"
