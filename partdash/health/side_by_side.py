"""A table's copies on a server group's members, partition by partition, as a page shows
them (`partdash.metrics.drift.side_by_side` gathers the layouts).

Rows go in bound order, the catch-all last: a member's extra partition past the group's
last bound used to come after the other members' `pmax`, where no partition can be. Bounds
are written as the runway and drift fixes write them (`TO_DAYS('2026-12-01')`), not as
the integers the server stores (740209), so the side by side reads beside a fix's SQL.
"""

from collections.abc import Sequence
from datetime import date, datetime, time

from partdash.health.bounds import first_value, is_catchall, parse_expression, range_bound
from partdash.health.drift import RANGE_METHODS, Layout
from partdash.health.runway_fix import bound_value

# Functions whose integer bounds a fix writes as a date (`runway_fix.bound_value`).
_WRITTEN_AS_DATES = ("to_days", "to_seconds", "unix_timestamp")


def written_bound(expression: str | None, description: str | None) -> str | None:
    """A bound as a fix writes it: `TO_DAYS('2026-12-01')` for 740209 under
    TO_DAYS(d); the server's own text where a fix writes it the same way (MAXVALUE, ids,
    years, RANGE COLUMNS literals, LIST values) or partdash cannot read it."""
    parsed = parse_expression(expression)
    if description is None or parsed is None or parsed[0] not in _WRITTEN_AS_DATES:
        return description
    bound = range_bound(expression, description)
    if not isinstance(bound, date):
        return description
    point = bound if isinstance(bound, datetime) else datetime.combine(bound, time())
    return bound_value(parsed[0], point)


def bound_key(description: str | None) -> tuple[int, int, str]:
    """Where a RANGE bound sorts: integers by value, quoted literals by their text (ISO
    dates sort as dates), then MAXVALUE, then what cannot be read."""
    value = first_value(description)
    if value is None:
        return (3, 0, "")
    if is_catchall(description):
        return (2, 0, "")
    try:
        return (0, int(value), "")
    except ValueError:
        return (1, 0, description or "")


def side_by_side_names(layouts: Sequence[Layout]) -> list[str]:
    """Every partition name of the copies, once (compared in any case, spelled as the
    first layout spells it): the first layout's order, then the others' additions; for a
    RANGE table in bound order, each name at the bound of the first layout holding it,
    the catch-all last."""
    bounds: dict[str, tuple[str, str | None]] = {}  # lower-cased name: (as spelled, bound)
    for layout in layouts:
        for name, bound in layout.partitions:
            bounds.setdefault(name.lower(), (name, bound))
    names = list(bounds.values())
    if layouts and layouts[0].method in RANGE_METHODS:
        names.sort(key=lambda named: bound_key(named[1]))  # stable: ties keep their order
    return [name for name, _ in names]
