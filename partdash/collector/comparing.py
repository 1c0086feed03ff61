"""Why an incremental poll's store compares each partition it compares, logged at DEBUG.

A quiet poll compares only the partitions that may have changed since the previous poll
(`Collection.dirty`). When one compares more than expected, these lines say which
source named each: a tablespace or file I/O bucket whose aggregate moved (with the rows
read again, before and after), a statistics row refreshed since the last read, the
tablestats counters or compression. Nothing is gathered unless this module's logger is
enabled for DEBUG (`explained`), so a 64,000-partition poll builds no string for it
otherwise.

One line per poll (`extra`: `compared`, `reasons` as reason -> count), then one per
partition (`extra`: `partition`, its `PartitionKey`, and `reasons`, a tuple of names).
"""

import logging
from typing import Protocol

from partdash.mysql.names import PartitionKey

log = logging.getLogger(__name__)

# The reasons, in the order a partition's line gives them.
TABLESPACES = "tablespaces"  # its tablespace row's bucket aggregate moved
FILE_IO = "file_io"  # its file I/O row's bucket aggregate moved
STATISTICS = "statistics"  # its innodb_table_stats row was refreshed since the last read
COUNTERS = "counters"  # its tablestats modification counter moved
COMPRESSION = "compression"  # it has compression rows
UNKNOWN = "unknown"  # no source named it (or DEBUG was turned on during the poll)
REASONS = (TABLESPACES, FILE_IO, STATISTICS, COUNTERS, COMPRESSION)


class Collection(Protocol):
    """What this module reads of `collect.Collection` (which imports it)."""

    partitions: dict
    reasons: dict[str, set[PartitionKey]] | None
    evidence: dict[PartitionKey, list]


def explained() -> bool:
    """Whether polls gather and log why they compare what they compare."""
    return log.isEnabledFor(logging.DEBUG)


def gathered(collection: Collection, reason: str) -> set[PartitionKey] | None:
    """The set of partitions `reason` names in `collection`, to add to (None: not
    gathered)."""
    if collection.reasons is None:
        return None
    return collection.reasons.setdefault(reason, set())


def note(collection: Collection, why: set[PartitionKey], rows: list) -> None:
    """Partitions named by rows of buckets read again, (partition, row) each: the rows are
    kept as the evidence of the partition's line."""
    for key, row in rows:
        why.add(key)
        collection.evidence.setdefault(key, []).append(row)


def explain(collection: Collection, visit: set) -> None:
    """Log why the store compares each partition of `visit`."""
    if not explained():
        return
    reasons = collection.reasons or {}
    counts = {reason: len(visit & keys) for reason, keys in reasons.items() if visit & keys}
    if unnamed := len(visit - set().union(*reasons.values())):
        counts[UNKNOWN] = unnamed
    log.debug(
        "the store compares %d of %d partitions: %s",
        len(visit),
        len(collection.partitions),
        ", ".join(f"{reason} {count}" for reason, count in counts.items()) or "none",
        extra={"compared": len(visit), "reasons": counts},
    )
    for key in sorted(visit):
        why = tuple(reason for reason in REASONS if key in reasons.get(reason, ()))
        why = why or (UNKNOWN,)
        log.debug(
            "compares %s: %s",
            "/".join(part for part in key if part),
            "; ".join(_evidence(collection, key, reason) for reason in why),
            extra={"partition": key, "reasons": why},
        )


def _evidence(collection: Collection, key: PartitionKey, reason: str) -> str:
    """What `reason` saw of the partition `key`."""
    figures = collection.partitions.get(key)
    if reason == STATISTICS and figures is not None:
        return f"{reason} refreshed at {figures.stats_updated_at}"
    if reason == COUNTERS and figures is not None:
        return f"{reason} at {figures.modified_counter}"
    if reason not in (TABLESPACES, FILE_IO):
        return reason
    rows = [row for row in collection.evidence.get(key, ()) if _source(row) == reason]
    return f"{reason} bucket moved: {_difference(rows)}"


def _source(row) -> str:
    return TABLESPACES if hasattr(row, "space_id") else FILE_IO


def _difference(rows: list) -> str:
    """The fields two rows (before, after) differ in, or the one row read again."""
    if len(rows) != 2:
        return " / ".join(map(str, rows)) or "no row"
    before, after = rows
    moved = [
        f"{name} {old} -> {new}"
        for name, old, new in zip(before._fields, before, after, strict=True)
        if old != new
    ]
    return ", ".join(moved) or "the same row (below the quantum)"
