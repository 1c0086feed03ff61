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
# Rows changed (MODIFIED_COUNTER) make statistics stale only where InnoDB does not
# recalculate them itself (innodb_stats_auto_recalc=OFF, or the table's
# STATS_AUTO_RECALC=0). Where it does, the insert or delete that takes the counter past a
# tenth of the rows resets it and recalculates (measured on MariaDB 10.11.19: DELETE of
# 300 of 900 rows, statistics at 600 rows at once); what the counter holds beyond that
# are UPDATEs, which count but never reset it (65 UPDATEs of 20 rows: 1,300 on a
# partition of 900, its n_rows still COUNT(*)), and which move no row count.
# Past twice a tenth, then, with recalculation off:
STALE_MODIFIED_RATIO = 0.2
# ...and at least this many rows changed: a few changes in a tiny partition are noise.
STALE_MIN_MODIFIED = 1000
# A rewritten partition (REORGANIZE, REBUILD, EXCHANGE) keeps the statistics of an empty
# tree until analysed (MDEV-35163; measured on 10.11.19: REORGANIZE of 900 rows with
# recalculation off, 0 rows and 1 page, in a 196,608-byte file; REBUILD of 29,952 rows,
# 0 rows, in 5 MiB). Its file still holds the rows: a file of EMPTY_FILE_BYTES (a new
# partition's, measured) is empty, each page beyond it holds rows at the table's density.
EMPTY_FILE_BYTES = 65536
# The file says at least this many times the rows the statistics say, and at least
# STALE_MIN_FILE_ROWS rows: statistics far from the rows, not a sampling error.
STALE_FILE_FACTOR = 4
STALE_MIN_FILE_ROWS = 500
# Row density comes from partitions whose statistics span this many pages or more.
DENSITY_MIN_PAGES = 4
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
    """How far one partition's statistics may be from the truth. `rows`: what the
    statistics say; `file_rows`: the rows its file holds at the table's density (None
    where unknown); `reason` says why it is stale ("" when it is not)."""

    name: str
    age_seconds: float | None
    modified_ratio: float | None
    is_old: bool
    is_stale: bool
    rows: int | None = None
    file_rows: int | None = None
    reason: str = ""


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


def row_density(partitions: Iterable[PartitionState]) -> float | None:
    """Data plus index bytes per row, over the partitions whose statistics span
    DENSITY_MIN_PAGES pages or more (a fresh rewrite's single page says nothing)."""
    rows = size = 0
    for p in partitions:
        page = p.page_size or 16384
        if p.rows and p.data_bytes and p.data_bytes >= DENSITY_MIN_PAGES * page:
            rows, size = rows + p.rows, size + p.data_bytes + (p.index_bytes or 0)
    return size / rows if rows else None


def file_rows(partition: PartitionState, density: float | None) -> int | None:
    """The rows a partition's file holds at `density` bytes per row: an estimate from an
    exact size, None where either is unknown."""
    size = partition.allocated_bytes or partition.file_bytes
    if size is None or not density:
        return None
    return int(max(0, size - EMPTY_FILE_BYTES) / density)


def _stale_counter(partition: PartitionState, recalculates: bool) -> str:
    changed = modified_ratio(partition.modified_counter, partition.rows)
    if recalculates or changed is None or changed <= STALE_MODIFIED_RATIO:
        return ""
    if (partition.modified_counter or 0) < STALE_MIN_MODIFIED:
        return ""
    return (
        f"{partition.modified_counter:,} rows changed since its statistics "
        f"({changed:.0%}; InnoDB does not recalculate them here)"
    )


def _stale_file(partition: PartitionState, in_file: int | None) -> str:
    """Statistics of (nearly) an empty tree over a file full of rows: a rewrite."""
    page = partition.page_size or 16384
    if in_file is None or (partition.data_bytes or 0) > page:
        return ""
    stated = partition.rows or 0
    if in_file < STALE_MIN_FILE_ROWS or in_file < STALE_FILE_FACTOR * stated:
        return ""
    return (
        f"statistics say {stated:,} rows, its file holds ~{in_file:,} (rewritten by a "
        "REORGANIZE, REBUILD or EXCHANGE and not analysed since)"
    )


def staleness(
    partition: PartitionState,
    now: datetime,
    density: float | None = None,
    recalculates: bool = True,
) -> Staleness:
    """Age of a partition's statistics and whether they are far from its rows: rows
    inserted and deleted since they were computed where InnoDB does not recalculate them
    (`recalculates` False), or statistics of an empty tree over a file that holds rows
    at the table's `density` (`row_density`). UPDATEs never make them stale."""
    age = age_seconds(partition.stats_updated_at, now)
    in_file = file_rows(partition, density)
    reason = _stale_counter(partition, recalculates) or _stale_file(partition, in_file)
    return Staleness(
        name=partition.label,
        age_seconds=age,
        modified_ratio=modified_ratio(partition.modified_counter, partition.rows),
        is_old=age is not None and age > OLD_STATISTICS.total_seconds(),
        is_stale=bool(reason),
        rows=partition.rows,
        file_rows=in_file,
        reason=reason,
    )


def _may_be_stale(partition: PartitionState, recalculates: bool) -> bool:
    """Cheap pre-filter: only these can be stale (most partitions of most tables aren't)."""
    if not recalculates and (partition.modified_counter or 0) >= STALE_MIN_MODIFIED:
        return True
    page = partition.page_size or 16384
    size = partition.allocated_bytes or partition.file_bytes or 0
    return (partition.data_bytes or 0) <= page and size > EMPTY_FILE_BYTES


def stale_partitions(
    partitions: Iterable[PartitionState], now: datetime, recalculates: bool = True
) -> list[Staleness]:
    """The partitions of one table whose statistics are stale (`staleness`);
    `recalculates`: whether InnoDB recalculates this table's statistics itself
    (`recalculates_statistics`)."""
    states = list(partitions)
    candidates = [p for p in states if _may_be_stale(p, recalculates)]
    if not candidates:
        return []
    density = row_density(states)
    judged = (staleness(p, now, density, recalculates) for p in candidates)
    return [s for s in judged if s.is_stale]


def recalculates_statistics(auto_recalc: int | str | None, create_options: str | None) -> bool:
    """Whether InnoDB recalculates a table's statistics after a tenth of its rows change:
    innodb_stats_auto_recalc (ON unless said otherwise) unless the table's
    STATS_AUTO_RECALC says 0, or 1 whatever the server's."""
    options = (create_options or "").lower().replace(" ", "")
    if "stats_auto_recalc=0" in options:
        return False
    if "stats_auto_recalc=1" in options:
        return True
    return str(auto_recalc if auto_recalc is not None else "ON").strip().upper() not in (
        "OFF",
        "0",
    )


def with_file_rows(
    partitions: Sequence[PartitionState], stale: Iterable[Staleness]
) -> list[PartitionState]:
    """The partitions with the best row figure partdash has, for the fixes to count: a
    rewritten partition's rows from its file (`stale`, from `stale_partitions`), not
    from statistics known to be stale ("copies ~56 rows" was said of 1,860)."""
    in_file = {s.name: s.file_rows for s in stale if s.file_rows}
    if not in_file:
        return list(partitions)
    return [replace(p, rows=in_file[p.label]) if p.label in in_file else p for p in partitions]
