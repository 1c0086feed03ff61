"""The one input shape of the health analytics: a partition's latest figures.

Plain values, no ORM: the API, the pages and the alerts build `PartitionState`s from
whatever they hold (`from_object` takes a stored `Partition` or anything with the same
attribute names) and every health function reads only these.
"""

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from datetime import datetime
from operator import attrgetter

from partdash.health.estimates import oldest

# Method families, as information_schema.PARTITIONS spells PARTITION_METHOD.
EVEN_METHODS = frozenset({"HASH", "KEY", "LINEAR HASH", "LINEAR KEY"})
RANGE_METHODS = frozenset({"RANGE", "RANGE COLUMNS"})
LIST_METHODS = frozenset({"LIST", "LIST COLUMNS"})

_SUMMED = (
    "rows",
    "data_bytes",
    "index_bytes",
    "file_bytes",
    "allocated_bytes",
    "modified_counter",
    "compress_ops",
    "compress_ops_ok",
)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition (or subpartition) as the analytics see it; None means unknown.

    `rows`, `data_bytes`, `index_bytes` and `modified_counter` come from InnoDB's
    statistics (estimates as of `stats_updated_at`); `file_bytes` and `allocated_bytes`
    from the tablespace list (exact). `compress_ops`/`compress_ops_ok` may be totals or
    deltas over a window: the compression module treats them alike.
    """

    name: str
    subpartition: str = ""
    ordinal: int = 0
    description: str | None = None
    rows: int | None = None
    data_bytes: int | None = None
    index_bytes: int | None = None
    file_bytes: int | None = None
    allocated_bytes: int | None = None
    stats_updated_at: datetime | None = None
    modified_counter: int | None = None
    autoinc: int | None = None
    row_format: str = ""
    page_size: int | None = None
    compress_ops: int | None = None
    compress_ops_ok: int | None = None

    @classmethod
    def from_object(cls, source: object) -> "PartitionState":
        """Copy the same-named attributes of `source` (a stored Partition, a collector
        record...); missing ones keep their defaults."""
        values = {f.name: getattr(source, f.name) for f in fields(cls) if hasattr(source, f.name)}
        values["subpartition"] = values.get("subpartition") or ""
        values["row_format"] = values.get("row_format") or ""
        return cls(**values)

    @property
    def label(self) -> str:
        """`p3`, or `p3#sp0` for a subpartition (the history API's spelling)."""
        return f"{self.name}#{self.subpartition}" if self.subpartition else self.name

    @property
    def total_bytes(self) -> int | None:
        """Data plus index bytes (statistics pages x page size); None when either is unknown."""
        if self.data_bytes is None or self.index_bytes is None:
            return None
        return self.data_bytes + self.index_bytes


_DEFINITION_ORDER = attrgetter("ordinal", "subpartition")
_SUBPARTITION = attrgetter("subpartition")
_NAME = attrgetter("name")


def in_order(partitions: Iterable[PartitionState]) -> list[PartitionState]:
    """Partitions in definition order (RANGE bounds only make sense in it)."""
    return sorted(partitions, key=_DEFINITION_ORDER)


def _sum(values: list[int | None]) -> int | None:
    """A total is only known when every part is."""
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def _merge(group: list[PartitionState]) -> PartitionState:
    first = group[0]
    if len(group) == 1 and not first.subpartition:
        return first
    totals = {name: _sum([getattr(p, name) for p in group]) for name in _SUMMED}
    autoincs = [p.autoinc for p in group if p.autoinc is not None]
    return replace(
        first,
        subpartition="",
        stats_updated_at=oldest(p.stats_updated_at for p in group),
        autoinc=max(autoincs) if autoincs else None,
        **totals,  # type: ignore[arg-type]  # the summed figures, each an int or None
    )


def merge_subpartitions(partitions: Iterable[PartitionState]) -> list[PartitionState]:
    """One state per partition, subpartitions summed: bounds, catch-all and skew between
    RANGE or LIST partitions are properties of partitions, not of their subpartitions."""
    ordered = in_order(partitions)
    # The usual table: no subpartitions and distinct names, so every group would be one
    # partition that `_merge` returns as it is (also true of an already merged list).
    if not any(map(_SUBPARTITION, ordered)) and len(set(map(_NAME, ordered))) == len(ordered):
        return ordered
    groups: dict[str, list[PartitionState]] = {}
    for partition in ordered:
        groups.setdefault(partition.name, []).append(partition)
    return [_merge(group) for group in groups.values()]
