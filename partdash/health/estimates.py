"""How estimated figures are labelled.

Row counts and index sizes come from InnoDB's persistent statistics, refreshed in the
background after about 10% of a table changes or on ANALYZE TABLE; they are never exact
and may be old. The convention: every result built on them carries `estimated=True` and
`as_of`, the oldest `stats_updated_at` among the partitions it used (a figure is only as
fresh as its stalest input). Figures from counters or the tablespace list (I/O bytes,
file sizes, compression counters) carry `estimated=False`.
"""

from collections.abc import Iterable
from datetime import UTC, datetime

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
