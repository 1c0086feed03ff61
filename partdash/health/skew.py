"""How unevenly a table's rows (or bytes) are spread over its partitions, and whether
that is a defect for the table's partitioning method.

HASH and KEY partitioning exist to spread load evenly, so skew there is a defect (a bad
key, or a key with few distinct values). RANGE by time is uneven by design: the newest
partition is filling and future ones are empty, so only closed partitions are compared.
LIST partitions hold what the business puts in each list; only a large spread is worth
a look.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from math import sqrt
from operator import mul
from statistics import fmean
from typing import Literal, cast

from partdash.health.bounds import is_catchall
from partdash.health.estimates import oldest
from partdash.health.partitions import (
    EVEN_METHODS,
    LIST_METHODS,
    RANGE_METHODS,
    PartitionState,
    merge_subpartitions,
)

# A HASH/KEY table is skewed when its largest partition holds more than 1.5x the mean.
# InnoDB's row estimates sample a few pages per partition (innodb_stats_persistent_
# sample_pages, 20 by default) and wander by some percent; 1.5x is well beyond that.
HASH_SKEW_RATIO = 1.5
# Closed RANGE partitions vary with the business (seasons, growth), so only a partition
# three times the mean is flagged: usually unequal bounds or a backfill into one range.
RANGE_SKEW_RATIO = 3.0
# LIST: one list at twice the mean. With two lists the ratio cannot exceed 2.0, so a
# two-list table is never flagged (two lists are usually uneven on purpose: live/archive).
LIST_SKEW_RATIO = 2.0
# Below these means per judged partition the figures are noise (a few rows land where
# they land; every InnoDB partition holds a few 16 KiB pages even when empty).
MIN_MEAN = {"rows": 1000.0, "bytes": float(1 << 20)}

Measure = Literal["rows", "bytes"]


@dataclass(frozen=True, slots=True)
class Skew:
    """`max_mean_ratio`: the largest value over the mean (1.0 is perfectly even, at most
    n). `cv`: population standard deviation over the mean. `gini`: 0 even, up to
    (n-1)/n when one partition holds everything."""

    max_mean_ratio: float
    cv: float
    gini: float


@dataclass(frozen=True, slots=True)
class SkewFinding:
    """The skew of the partitions a table's method should be judged on, and the verdict."""

    skew: Skew | None
    judged_on: list[str]
    is_finding: bool
    reason: str
    measure: Measure = "rows"
    largest: str | None = None
    threshold: float | None = None
    estimated: bool = True
    as_of: datetime | None = None
    # Compared against its limit (enough partitions, enough rows, a method with a limit):
    # an even verdict means something only then.
    judged: bool = False


def gini(values: Sequence[float]) -> float:
    """Mean absolute difference over twice the mean: sum_i sum_j |x_i - x_j| / (2 n^2 mean),
    computed from the sorted values as 2 sum(i x_(i)) / (n sum x) - (n + 1) / n (i from 1).
    [1, 1, 1, 1] -> 0; [0, 0, 0, 1] -> 0.75. Needs a positive total."""
    ordered = sorted(values)
    n, total = len(ordered), sum(ordered)
    weighted = sum(map(mul, range(1, n + 1), ordered))  # i * x_(i), summed in order
    return 2 * weighted / (n * total) - (n + 1) / n


def skew(values: Iterable[float | None]) -> Skew | None:
    """Skew of the known (non-None) values. None when none is known: unknown is not even.
    All zeros (or one partition) is perfectly even: Skew(1.0, 0.0, 0.0)."""
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    mean = fmean(known)
    if mean <= 0:
        return Skew(1.0, 0.0, 0.0)
    # statistics.pstdev is exact (fractions) and ~50x slower; floats are plenty here.
    deviation = sqrt(fmean([(v - mean) ** 2 for v in known]))
    return Skew(max(known) / mean, deviation / mean, max(0.0, gini(known)))


def measure_of(partition: PartitionState, measure: Measure) -> int | None:
    """Rows, or data plus index bytes."""
    return partition.rows if measure == "rows" else partition.total_bytes


def _measures(partitions: Sequence[PartitionState], measure: Measure) -> list[int | None]:
    """`measure_of` each partition, in one pass (the properties cost more than the sums
    here, measured)."""
    if measure == "rows":
        return [p.rows for p in partitions]
    return [
        None if p.data_bytes is None or p.index_bytes is None else p.data_bytes + p.index_bytes
        for p in partitions
    ]


def closed_range_partitions(partitions: Sequence[PartitionState]) -> list[PartitionState]:
    """RANGE partitions whose range is over: bounded ones before the newest non-empty one
    (that one is filling; those after it are empty future ones). Once rows spill into the
    MAXVALUE catch-all, every bounded partition is closed."""
    bounded = [p for p in partitions if not is_catchall(p.description)]
    catchall_rows = sum(p.rows or 0 for p in partitions if is_catchall(p.description))
    if catchall_rows > 0:
        return bounded
    filled = [i for i, p in enumerate(bounded) if (p.rows or 0) > 0]
    return bounded[: filled[-1]] if filled else []


def _judged(method: str, partitions: list[PartitionState]):
    """The partitions a method is judged on, and the ratio that makes a finding."""
    if method in EVEN_METHODS:
        return partitions, HASH_SKEW_RATIO
    if method in RANGE_METHODS:
        return closed_range_partitions(partitions), RANGE_SKEW_RATIO
    if method in LIST_METHODS:
        return partitions, LIST_SKEW_RATIO
    return partitions, None


def _verdict(method: str, figure: Skew, mean: float, limit: float | None, measure: Measure):
    if limit is None:
        return False, f"no expected spread for {method or 'this'} partitioning; not judged"
    if mean < MIN_MEAN[measure]:
        return False, f"too little to judge: {mean:,.0f} {measure} per partition on average"
    ratio = f"the largest holds {figure.max_mean_ratio:.2f}x the mean {measure} (limit {limit})"
    if figure.max_mean_ratio > limit:
        return True, f"uneven {method} partitions: {ratio}"
    return False, f"even enough: {ratio}"


def judge_skew(
    method: str, partitions: Iterable[PartitionState], measure: Measure = "rows"
) -> SkewFinding:
    """Skew of a table's partitions as its method should be judged (subpartitions are
    summed into their partition first). `measure`: "rows" or "bytes" (data + index)."""
    method = (method or "").upper().strip()
    candidates, limit = _judged(method, merge_subpartitions(partitions))
    judged, values = candidates, _measures(candidates, measure)
    if None in values:  # some unknown: judged on the known ones only
        judged = [p for p, value in zip(candidates, values, strict=True) if value is not None]
        values = [value for value in values if value is not None]
    figure = skew(values)
    as_of = oldest([p.stats_updated_at for p in judged])
    if figure is None or len(judged) < 2:
        reason = "fewer than two partitions to compare" + (
            " (closed RANGE partitions only)" if method in RANGE_METHODS else ""
        )
        return SkewFinding(figure, [p.name for p in judged], False, reason, measure, as_of=as_of)
    known = cast(list[int], values)  # the unknown left out above
    mean = fmean(known)
    is_finding, reason = _verdict(method, figure, mean, limit, measure)
    largest = judged[known.index(max(known))].name
    compared = limit is not None and mean >= MIN_MEAN[measure]
    return SkewFinding(
        figure,
        [p.name for p in judged],
        is_finding,
        reason,
        measure,
        largest,
        limit,
        as_of=as_of,
        judged=compared,
    )
