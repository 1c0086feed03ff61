"""Plain values for the tests of the pure health analytics: partition states built in a
line, and RANGE tables whose bounds are spelled as MariaDB 10.11 returns them (checked on
a live server: TO_DAYS('2026-01-01') = 739982)."""

from datetime import UTC, date, datetime

from partdash.health.partitions import PartitionState

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
MiB = 1 << 20


def to_days(day: date) -> int:
    """MySQL's TO_DAYS."""
    return day.toordinal() + 365


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
