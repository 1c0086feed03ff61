"""Server pressure from partitioning: caches and file limits, the written working set
against the buffer pool, free space inside tablespaces, and stale statistics.

Every partition is its own InnoDB table and tablespace: it takes an entry in InnoDB's
dictionary cache (bounded by table_definition_cache), an open .ibd file (bounded by
open_files_limit) and, through its table, the table cache (table_open_cache). Tens of
thousands of partitions against caches of a few hundred mean constant evictions and
reopenings.
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from partdash.health.estimates import age_seconds, oldest
from partdash.health.partitions import PartitionState
from partdash.health.sizes import estimated_data_free

# Partitions per slot of a cache or limit: warn from 80% full, critical once over it.
WARN_RATIO = 0.8
CRITICAL_RATIO = 1.0
LIMIT_SETTINGS = ("table_open_cache", "table_definition_cache", "open_files_limit")
# Insert rate collapses once the partitions being written no longer fit in the buffer
# pool (one field report: 2,100 rows/s down to 150); flag from 80% of it.
WORKING_SET_RATIO = 0.8
# Free space inside a tablespace worth reclaiming (OPTIMIZE / REBUILD PARTITION): over a
# quarter of the file and at least 64 MiB (InnoDB keeps a few MiB of free extents in
# every growing file).
FRAGMENTATION_RATIO = 0.25
FRAGMENTATION_MIN_BYTES = 64 << 20
# InnoDB recalculates statistics after 10% of a partition changes; past twice that, the
# recalculation is not happening (innodb_stats_auto_recalc=OFF, or a pending one) and
# rows and sizes no longer describe the partition.
STALE_MODIFIED_RATIO = 0.2
# ...and at least this many rows changed: a few changes in a tiny partition are noise
# InnoDB's next background recalculation (within seconds) clears.
STALE_MIN_MODIFIED = 1000
# Statistics older than this are shown as old (not a finding on their own: an untouched
# partition keeps correct statistics forever).
OLD_STATISTICS = timedelta(days=7)

Level = Literal["ok", "warn", "critical", "unknown"]


@dataclass(frozen=True, slots=True)
class LimitPressure:
    """Partitions on the server against one setting."""

    setting: str
    partitions: int
    limit: int | None
    ratio: float | None
    level: Level


@dataclass(frozen=True, slots=True)
class WorkingSet:
    """Data plus index bytes of the partitions written in the window, against the buffer
    pool. An estimate: sizes come from the statistics."""

    bytes: int
    buffer_pool_bytes: int | None
    ratio: float | None
    partitions: list[str]
    is_finding: bool
    reason: str
    estimated: bool = True
    as_of: datetime | None = None


@dataclass(frozen=True, slots=True)
class Fragmentation:
    """Free space inside one partition's tablespace (an estimate, see sizes.py)."""

    name: str
    data_free: int | None
    file_bytes: int | None
    ratio: float | None
    is_finding: bool
    estimated: bool = True


@dataclass(frozen=True, slots=True)
class Staleness:
    """How far one partition's statistics may be from the truth."""

    name: str
    age_seconds: float | None
    modified_ratio: float | None
    is_old: bool
    is_stale: bool


def as_number(value: int | str | None) -> int | None:
    """A server variable as an int (SHOW VARIABLES gives strings); None when not a number."""
    if isinstance(value, int):
        return value
    text = (value or "").strip()
    return int(text) if text.isdigit() else None


def level_of(ratio: float | None) -> Level:
    if ratio is None:
        return "unknown"
    if ratio > CRITICAL_RATIO:
        return "critical"
    return "warn" if ratio >= WARN_RATIO else "ok"


def limit_pressure(setting: str, partitions: int, limit: int | str | None) -> LimitPressure:
    """Partitions over one limit; unknown when the limit is unknown or 0."""
    number = as_number(limit)
    ratio = partitions / number if number else None
    return LimitPressure(setting, partitions, number, ratio, level_of(ratio))


def server_limits(
    partitions: int,
    variables: Mapping[str, int | str],
    other_partitions: int = 0,
    other_files: int = 0,
) -> list[LimitPressure]:
    """Partitions on the server against table_open_cache, table_definition_cache and
    open_files_limit (the ServerSnapshot's `variables`). The partitions of other engines
    (MyISAM, Aria, MEMORY: `other_partitions`, holding `other_files` data and index
    files) count against the table cache (the partitioning handler opens each of them
    in every instance of its table) and the file limit, not against the definition
    cache, whose per-partition entries are InnoDB's dictionary."""
    counted = {
        "table_open_cache": partitions + other_partitions,
        "table_definition_cache": partitions,
        "open_files_limit": partitions + other_files,
    }
    return [limit_pressure(name, counted[name], variables.get(name)) for name in LIMIT_SETTINGS]


def working_set(
    partitions: Sequence[PartitionState],
    written: Collection[str],
    buffer_pool_bytes: int | str | None,
) -> WorkingSet:
    """Size of the partitions written in the window (names in `written`, labels as in
    `PartitionState.label`, e.g. from hotspots.written_partitions) against
    innodb_buffer_pool_size; across tables, pass every table's partitions."""
    # Nothing written (most tables at most polls): no label to build for each partition.
    members = [p for p in partitions if p.label in written] if written else []
    verdict = written_against_pool(
        sum(p.total_bytes or 0 for p in members), len(members), buffer_pool_bytes
    )
    return replace(
        verdict,
        partitions=[p.label for p in members],
        as_of=oldest(p.stats_updated_at for p in members),
    )


def written_against_pool(size: int, count: int, buffer_pool_bytes: int | str | None) -> WorkingSet:
    """The verdict on `count` written partitions of `size` bytes in all (one table's, or
    a whole server's) against innodb_buffer_pool_size."""
    pool = as_number(buffer_pool_bytes)
    ratio = size / pool if pool else None
    return WorkingSet(
        bytes=size,
        buffer_pool_bytes=pool,
        ratio=ratio,
        partitions=[],
        is_finding=ratio is not None and ratio > WORKING_SET_RATIO,
        reason=_working_set_reason(ratio, count),
    )


def _working_set_reason(ratio: float | None, count: int) -> str:
    if ratio is None:
        return "innodb_buffer_pool_size unknown"
    text = f"{count} written partitions take {ratio:.0%} of the buffer pool"
    if ratio > WORKING_SET_RATIO:
        return (
            f"{text} (limit {WORKING_SET_RATIO:.0%}): insert rate collapses once written "
            "partitions no longer fit in the buffer pool"
        )
    return text


def fragmentation(partition: PartitionState) -> Fragmentation:
    """Estimated free space in a partition's file over its size."""
    free = estimated_data_free(partition.file_bytes, partition.data_bytes, partition.index_bytes)
    if free is None or not partition.file_bytes:
        return Fragmentation(partition.label, free, partition.file_bytes, None, False)
    ratio = free / partition.file_bytes
    is_finding = ratio > FRAGMENTATION_RATIO and free >= FRAGMENTATION_MIN_BYTES
    return Fragmentation(partition.label, free, partition.file_bytes, ratio, is_finding)


def may_be_fragmented(partitions: Iterable[PartitionState]) -> list[PartitionState]:
    """The partitions whose `fragmentation` can be a finding: those with at least
    FRAGMENTATION_MIN_BYTES free (so every size known). Passing over the rest without
    building their `Fragmentation` saves most of its cost on a big table."""
    return [
        p
        for p in partitions
        if p.file_bytes is not None
        and p.data_bytes is not None
        and p.index_bytes is not None
        and p.file_bytes - p.data_bytes - p.index_bytes >= FRAGMENTATION_MIN_BYTES
    ]


def modified_ratio(modified_counter: int | None, rows: int | None) -> float | None:
    """Rows changed since the last recalculation over the rows it counted; an empty
    partition that changed counts as entirely changed."""
    if modified_counter is None or rows is None:
        return None
    if rows <= 0:
        return 1.0 if modified_counter > 0 else 0.0
    return modified_counter / rows


def staleness(partition: PartitionState, now: datetime) -> Staleness:
    """Age of a partition's statistics and whether they are stale."""
    age = age_seconds(partition.stats_updated_at, now)
    changed = modified_ratio(partition.modified_counter, partition.rows)
    return Staleness(
        name=partition.label,
        age_seconds=age,
        modified_ratio=changed,
        is_old=age is not None and age > OLD_STATISTICS.total_seconds(),
        is_stale=changed is not None
        and changed > STALE_MODIFIED_RATIO
        and (partition.modified_counter or 0) >= STALE_MIN_MODIFIED,
    )


def stale_partitions(partitions: Iterable[PartitionState], now: datetime) -> list[Staleness]:
    """The partitions whose statistics are stale, for a table or a server."""
    changed = (p for p in partitions if (p.modified_counter or 0) >= STALE_MIN_MODIFIED)
    return [s for s in (staleness(p, now) for p in changed) if s.is_stale]
