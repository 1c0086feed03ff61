"""How estimated figures are labelled.

Row counts and index sizes come from InnoDB's persistent statistics, refreshed in the
background after about 10% of a table changes or on ANALYZE TABLE; they are never exact
and may be old. The convention: every result built on them carries `estimated=True` and
`as_of`, the oldest `stats_updated_at` among the partitions it used (a figure is only as
fresh as its stalest input). Figures from counters or the tablespace list (I/O bytes,
file sizes, compression counters) carry `estimated=False`.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter

# Sets of the time zones of timestamps that compare as they are (see `oldest`).
_NAIVE = {None}
_UTC = {UTC}


def oldest(timestamps: Iterable[datetime | None]) -> datetime | None:
    """The stalest known timestamp; None when none is known."""
    known = [t for t in timestamps if t is not None]
    if not known:
        return None
    # All naive (UTC) or all at UTC's offset, the usual case: they compare as they are,
    # and `min` keeps the same first stalest one, without a conversion each.
    zones = {t.tzinfo for t in known}
    if zones == _NAIVE or zones == _UTC:
        return min(known)
    return min(known, key=_utc)


def age_seconds(as_of: datetime | None, now: datetime) -> float | None:
    """How old an estimate is, never negative (clocks drift); None when its time is unknown."""
    if as_of is None:
        return None
    return max(0.0, (_utc(now) - _utc(as_of)).total_seconds())


def _utc(moment: datetime) -> datetime:
    """Naive times are taken as UTC (how the collector stores them)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class StatisticsAge:
    """How old the statistics behind a table's totals are. A total is as old as its
    stalest input, so `as_of` is the oldest partition's time and `partition` names it
    (the first such, in definition order); `newest_at` is the freshest, and equal to
    `as_of` when one ANALYZE TABLE refreshed every partition at once. `partitions`:
    how many had statistics."""

    as_of: datetime
    partition: str
    newest_at: datetime
    partitions: int


def statistics_age(times: Iterable[tuple[str, datetime | None]]) -> StatisticsAge | None:
    """From (partition label, stats_updated_at) pairs in definition order; None when no
    partition has statistics."""
    pairs = list(times)
    return statistics_age_of([label for label, _ in pairs].__getitem__, [at for _, at in pairs])


def statistics_age_of(
    label: Callable[[int], str], times: Sequence[datetime | None]
) -> StatisticsAge | None:
    """`statistics_age` of partitions given by their times in definition order and their
    labels, as a function of the position: only the two partitions it names
    are labelled (labelling all 128 partitions of each table changed was a tenth of the
    analysis after writes, profiled)."""
    known = [(at, moment) for at, moment in enumerate(times) if moment is not None]
    if not known:
        return None
    zones = {moment.tzinfo for _, moment in known}
    key: Callable[[tuple[int, datetime]], datetime] = itemgetter(1)
    if zones != _NAIVE and zones != _UTC:  # as in `oldest`: else compare them as they are
        key = lambda pair: _utc(pair[1])  # noqa: E731
    (stalest, as_of), (_, newest_at) = min(known, key=key), max(known, key=key)
    return StatisticsAge(as_of, label(stalest), newest_at, len(known))
