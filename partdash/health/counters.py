"""Deltas of cumulative counters that can be reset.

performance_schema file counters reset on TRUNCATE and restart, INNODB_CMP_PER_INDEX on
restart, and MODIFIED_COUNTER every time InnoDB recalculates a partition's statistics.
A decrease therefore means a reset, and what accumulated since is the new value itself
(the part counted before the reset is lost: the delta is a lower bound). The same rule
as `partdash.metrics.store.counter_rate`.
"""


def counter_delta(new: int | None, old: int | None) -> int | None:
    """What a counter added between two readings; None when either is unknown."""
    if new is None or old is None:
        return None
    return new - old if new >= old else new


def rows_changed(new: int | None, old: int | None, rows: int | None) -> int | None:
    """Rows changed between two readings of a partition's MODIFIED_COUNTER. InnoDB resets
    it to 0 on the insert or delete that takes it past a tenth of the partition's rows
    (measured on MariaDB 10.11: 250 rows, resets at 29, 32, 36...; UPDATEs of non-key
    columns count but never reset it), then recalculates the statistics. So a decrease
    to a count counts the rows it took to reach that tenth, plus the new value: a lower
    bound (more than one reset between two polls shows as one). A decrease to 0 counts
    nothing: ANALYZE TABLE and a partition leaving InnoDB's dictionary cache do that too,
    with no row changed."""
    if new is None or old is None:
        return None
    if new >= old:
        return new - old
    return max(0, (rows or 0) // 10 + 1 - old) + new if new else 0


def level_change(first: int | None, last: int | None) -> int | None:
    """Growth of a level (rows, bytes) over a window; negative when it shrank."""
    if first is None or last is None:
        return None
    return last - first
