"""Skew of a table's partitions, its figures and how each partitioning method is judged
(the pure `partdash.health.skew`)."""

import math
import random
from datetime import date, timedelta

import pytest

from partdash.health import skew
from partdash.health.partitions import PartitionState
from tests.health.builders import NOW, MiB, monthly, part, table

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
