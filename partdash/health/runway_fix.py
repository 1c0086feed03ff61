"""The statement that gives a RANGE table its runway back: `REORGANIZE PARTITION` of the
catch-all (or `ADD PARTITION` where there is none) into new partitions that continue
the table's own interval and naming, up to a horizon, the catch-all recreated last.

The interval is read from the last bounds: whole months (monthly, quarterly, yearly;
YEAR() bounds are 1 January) when consecutive bounds fall on the same day of the month at
the same time, else a fixed step (daily, weekly, hourly, id steps); the most frequent of
the last few steps wins, so a guard partition (`VALUES LESS THAN (0)`) or an old
catch-up partition at the start does not decide. Names are read from the last
partitions: digits that spell the partition's first day, its last day or its bound
(`p20240101`, `p202401`, `p2024`, `p_2024_01`, `P2024_01_01`), digits that equal the
raw bound (`p1000000`), or an ordinal (`p7`, `p007`); else `p` and the first value
the partition holds (`p20240101`, `p1000000`).

Bounds are written the way the table writes them: `TO_DAYS('2025-01-01')`,
`TO_SECONDS('2025-01-01 00:00:00')`, the year for `YEAR()`, the epoch seconds (with the
UTC time in a comment) for `UNIX_TIMESTAMP()`, which would otherwise depend on the
session's time zone, quoted literals for RANGE COLUMNS (the other columns' values
read from the last bound and written again: `fix_values`) and integers for ids. Nothing
the server sent is copied as text: a value or name partdash cannot parse and re-write
strictly makes the plan fail (`CannotPlan`), and the fix is advice without SQL.
"""

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import product

from partdash.health.bounds import (
    TO_DAYS_OFFSET,
    TO_SECONDS_EPOCH,
    Bound,
    Calendar,
    is_catchall,
    parse_expression,
    read_bounds,
)
from partdash.health.fix_values import Unsafe, bound_values, name_sql, table_problem
from partdash.health.partitions import RANGE_METHODS, PartitionState, merge_subpartitions

# MySQL and MariaDB refuse a table of more partitions than this (subpartitions count).
MAX_PARTITIONS = 8192
MAX_NAME_LENGTH = 64
# Steps compared to find the table's interval (the last ones: the pattern in force).
STEPS_COMPARED = 6
# Names compared to find the naming pattern.
NAMES_COMPARED = 3
# Runs of digits read as date fields (p_2024_01_01_00: four).
MAX_DATE_RUNS = 4

Point = datetime | int  # a bound: a naive datetime for time ranges, an int for ids
Step = tuple[str, int | timedelta]  # ("months", 1), ("delta", timedelta(days=1)), ("ids", 1000)


@dataclass(frozen=True, slots=True)
class NewPartition:
    name: str
    bound: Point


@dataclass(frozen=True, slots=True)
class RunwayPlan:
    """What the statement does: `partitions` added before the catch-all (`catchall`, the
    name recreated last; None where the table has none, and the statement is an ADD
    PARTITION); `covers` the highest value the new partitions were asked to hold."""

    sql: str
    partitions: list[NewPartition]
    catchall: str | None
    step: Step
    last_bound: Point
    encoding: str


class CannotPlan(ValueError):
    """The table's pattern cannot be continued (the reason says why)."""


# -- reading the table ------------------------------------------------------------------


def _as_point(bound: Bound | None) -> Point | None:
    if bound is None or isinstance(bound, int):
        return bound
    if isinstance(bound, datetime):
        return bound
    return datetime(bound.year, bound.month, bound.day)


def _encoding(expression: str | None, sample: Bound | None, calendar: Calendar | None) -> str:
    """How the table writes a bound: to_days, to_seconds, unix_timestamp, year, date,
    datetime (RANGE COLUMNS literals), yyyymm, yyyymmdd (integers spelling the calendar)
    or id."""
    parsed = parse_expression(expression)
    if parsed is None or sample is None:
        raise CannotPlan("the partitioning expression is not one partdash can continue")
    function, _column = parsed
    if function:
        return function
    if calendar:
        return calendar
    if isinstance(sample, int):
        return "id"
    return "datetime" if isinstance(sample, datetime) else "date"


def _month_gap(a: datetime, b: datetime) -> int | None:
    """Whole months from a to b when both fall on the same day (up to the 28th) and time."""
    if a.day != b.day or a.day > 28 or a.time() != b.time():
        return None
    months = (b.year - a.year) * 12 + b.month - a.month
    return months if months > 0 else None


def _step_between(a: Point, b: Point) -> Step | None:
    if isinstance(a, int) and isinstance(b, int):
        return ("ids", b - a) if b > a else None
    if isinstance(a, datetime) and isinstance(b, datetime) and b > a:
        months = _month_gap(a, b)
        return ("months", months) if months else ("delta", b - a)
    return None


def _default_step(encoding: str, last: Point) -> Step | None:
    """With a single bound there is no step to read: yearly for YEAR(), monthly for a
    bound on the 1st, daily for other days; an id range steps by its only bound."""
    if isinstance(last, int):
        return ("ids", last) if last > 0 else None
    if encoding == "year":
        return ("months", 12)
    if last.time() != datetime.min.time():
        return ("delta", timedelta(hours=1))
    return ("months", 1) if last.day == 1 else ("delta", timedelta(days=1))


def table_step(encoding: str, bounds: Sequence[Point]) -> Step | None:
    """The table's interval: the most frequent of its last steps (the latest on a tie)."""
    recent = bounds[-(STEPS_COMPARED + 1) :]
    steps = [_step_between(a, b) for a, b in zip(recent, recent[1:], strict=False)]
    steps = [s for s in steps if s is not None]
    if not steps:
        return _default_step(encoding, bounds[-1]) if bounds else None
    counts = Counter(steps)
    best = max(counts.values())
    return next(s for s in reversed(steps) if counts[s] == best)


def _add_months(moment: datetime, months: int) -> datetime:
    month = moment.month - 1 + months
    return moment.replace(year=moment.year + month // 12, month=month % 12 + 1)


def next_bound(bound: Point, step: Step) -> Point:
    kind, size = step
    if kind == "months":
        return _add_months(bound, size)  # type: ignore[arg-type]
    return bound + size  # type: ignore[operator]


# -- naming -----------------------------------------------------------------------------

_RUNS = re.compile(r"(\d+)")
# Date fields a run of digits may spell, by its length.
_DATE_LAYOUTS = {
    1: ("-m", "-d", "-H", "-V"),
    2: ("m", "d", "H", "y", "V"),
    4: ("Y", "G"),
    6: ("Ym", "ymd"),
    8: ("Ymd",),
    10: ("YmdH",),
    12: ("YmdHM",),
    14: ("YmdHMS",),
}
_FIELDS: dict[str, Callable[[datetime], str]] = {
    "Y": lambda t: f"{t.year:04d}",
    "y": lambda t: f"{t.year % 100:02d}",
    "m": lambda t: f"{t.month:02d}",
    "d": lambda t: f"{t.day:02d}",
    "H": lambda t: f"{t.hour:02d}",
    "M": lambda t: f"{t.minute:02d}",
    "S": lambda t: f"{t.second:02d}",
    "G": lambda t: f"{t.isocalendar().year:04d}",  # the ISO week's year (p2024w07)
    "V": lambda t: f"{t.isocalendar().week:02d}",
}
_UNPADDED = {
    "-m": lambda t: str(t.month),
    "-d": lambda t: str(t.day),
    "-H": lambda t: str(t.hour),
    "-V": lambda t: str(t.isocalendar().week),
}
_WEEK_LAYOUTS = frozenset({"V", "-V"})
LITERAL = "literal"


def _render(layout: str, moment: datetime) -> str:
    if layout in _UNPADDED:
        return _UNPADDED[layout](moment)
    return "".join(_FIELDS[field](moment) for field in layout)


@dataclass(frozen=True, slots=True)
class Naming:
    """A name as text around runs of digits: each run a date layout (of the partition's
    `reference` day), the raw bound, an ordinal, or literal digits."""

    texts: tuple[str, ...]
    runs: tuple[str, ...]  # per run: a date layout, "upper", "lower", "ordinal", LITERAL
    reference: str = ""  # first, last or bound: which moment date layouts spell
    literals: tuple[str, ...] = ()  # the reference name's digits (kept where literal)
    ordinal_step: int = 1

    def name(self, lower: Point, upper: Point, index: int, raw: Callable[[Point], int]) -> str:
        """The name of the partition [lower, upper), the `index`th after the reference
        partition (1 for the first new one)."""
        moment = self._moment(lower, upper)
        parts = [self.texts[0]]
        for i, run in enumerate(self.runs):
            parts.append(self._digits(run, self.literals[i], moment, lower, upper, index, raw))
            parts.append(self.texts[i + 1])
        return "".join(parts)

    def _moment(self, lower: Point, upper: Point) -> datetime | None:
        if not isinstance(upper, datetime):
            return None
        if self.reference == "first":
            return lower if isinstance(lower, datetime) else None
        return upper - timedelta(seconds=1) if self.reference == "last" else upper

    def _digits(self, run, literal, moment, lower, upper, index, raw) -> str:
        if run == LITERAL:
            return literal
        if run in ("upper", "lower"):
            return str(raw(upper if run == "upper" else lower))
        if run == "ordinal":
            value = int(literal) + index * self.ordinal_step
            width = len(literal) if literal.startswith("0") and len(literal) > 1 else 0
            return str(value).zfill(width) if value >= 0 else str(value)
        if moment is None:
            raise CannotPlan("a date layout on a bound that is no date")
        return _render(run, moment)


def _split(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    pieces = _RUNS.split(name)
    return tuple(pieces[0::2]), tuple(pieces[1::2])


def _reading_rank(runs: tuple[str, ...]) -> tuple[int, bool]:
    """Fewest literal runs first; then an ISO week with its ISO year (p2024w01 for the
    week of 30 December 2024 is week 1 of 2025), a calendar year without one."""
    has_week = any(run in _WEEK_LAYOUTS for run in runs)
    return runs.count(LITERAL), has_week != ("G" in runs)


def _date_namings(texts, digits) -> Iterator[Naming]:
    """Every reading of the digits as date layouts (fewest literal runs first); none for
    names of more runs than a date has fields (their readings multiply)."""
    if len(digits) > MAX_DATE_RUNS:
        return
    options = [(*_DATE_LAYOUTS.get(len(run), ()), LITERAL) for run in digits]
    readings = sorted(product(*options), key=_reading_rank)
    for runs in readings:
        if all(run == LITERAL for run in runs):
            continue
        for reference in ("first", "last", "bound"):
            yield Naming(texts, runs, reference, digits)


def _number_namings(texts, digits) -> Iterator[Naming]:
    """One run spelling the raw bound (upper or lower) or an ordinal, the rest literal."""
    for i in reversed(range(len(digits))):
        for kind in ("upper", "lower", "ordinal"):
            runs = tuple(kind if j == i else LITERAL for j in range(len(digits)))
            yield Naming(texts, runs, "", digits)


def _fits(naming: Naming, known: Sequence[tuple[str, Point | None, Point, int]], raw) -> bool:
    """Whether the naming spells the known partitions' names: (name, lower, upper,
    index relative to the reference partition, 0 for it, -1 for the one before...)."""
    for name, lower, upper, index in known:
        if lower is None and (naming.reference == "first" or "lower" in naming.runs):
            return False
        try:
            spelled = naming.name(lower, upper, index, raw)  # type: ignore[arg-type]
        except (CannotPlan, ValueError, TypeError, OverflowError):
            return False
        if spelled.casefold() != name.casefold():
            return False
    return True


def infer_namings(
    names: Sequence[str], bounds: Sequence[Point], raw: Callable[[Point], int]
) -> list[Naming]:
    """The naming patterns that spell the last partitions' names (bounded ones, in order,
    with their bounds), likeliest first: those that spell the last three names, else the
    last two, else the last one."""
    texts, digits = _split(names[-1]) if names else ((), ())
    if not digits:
        return []
    lowers: list[Point | None] = [None, *bounds[:-1]]
    for count in range(min(NAMES_COMPARED, len(names)), 0, -1):
        start = len(names) - count
        known = [
            (names[i], lowers[i], bounds[i], i - len(names) + 1) for i in range(start, len(names))
        ]
        fitting = [n for n in _candidates(texts, digits, names[start:]) if _fits(n, known, raw)]
        if fitting:
            return fitting
    return []


def _candidates(texts, digits, names: Sequence[str]) -> Iterator[Naming]:
    yield from _date_namings(texts, digits)
    yield from _number_namings(texts, digits)
    for step in _ordinal_steps(names):
        for i in reversed(range(len(digits))):
            runs = tuple("ordinal" if j == i else LITERAL for j in range(len(digits)))
            yield Naming(texts, runs, "", digits, step)


def _ordinal_steps(names: Sequence[str]) -> list[int]:
    """Steps other than 1 between the last digits of consecutive names (p0, p10, p20)."""
    values = [_RUNS.findall(name) for name in names]
    last = [int(v[-1]) for v in values if v]
    steps = {b - a for a, b in zip(last, last[1:], strict=False)} - {0, 1}
    return sorted(steps)


def fallback_naming(step: Step, is_date: bool) -> Naming:
    """`p` and the first value the partition holds, at the step's resolution."""
    if not is_date:
        return Naming(("p", ""), ("lower",), "", ("0",))
    kind, size = step
    if kind == "months":
        layout = "Y" if size % 12 == 0 else "Ym"  # type: ignore[operator]  # months: an int
    else:
        layout = "Ymd" if size % timedelta(days=1) == timedelta(0) else "YmdHM"  # type: ignore[operator]
    return Naming(("p", ""), (layout,), "first", ("0",))


# -- writing the statement --------------------------------------------------------------


def raw_value(encoding: str, point: Point) -> int:
    """A bound as the integer the server stores (TO_DAYS, TO_SECONDS, epoch seconds, year,
    id); dates in RANGE COLUMNS have none."""
    if isinstance(point, int):
        return point
    if encoding == "to_days":
        return point.date().toordinal() + TO_DAYS_OFFSET
    if encoding == "to_seconds":
        return int((point - datetime(1970, 1, 1)).total_seconds()) + TO_SECONDS_EPOCH
    if encoding == "unix_timestamp":
        return int((point - datetime(1970, 1, 1)).total_seconds())
    if encoding == "year":
        return point.year
    if encoding == "yyyymm":
        return point.year * 100 + point.month
    if encoding == "yyyymmdd":
        return int(f"{point:%Y%m%d}")
    raise CannotPlan("a RANGE COLUMNS date has no integer bound")


def _literal(point: datetime, with_time: bool) -> str:
    return f"'{point:%Y-%m-%d %H:%M:%S}'" if with_time else f"'{point:%Y-%m-%d}'"


def bound_value(encoding: str, point: Point) -> str:
    """One bound as a statement writes it: `TO_DAYS('2025-01-01')` rather than 739617
    (the pages show bounds so too: `partdash.health.side_by_side`)."""
    if isinstance(point, int):
        return str(point)
    if encoding == "to_days":
        return f"TO_DAYS({_literal(point, False)})"
    if encoding == "to_seconds":
        return f"TO_SECONDS({_literal(point, True)})"
    if encoding == "unix_timestamp":
        return f"{raw_value(encoding, point)} /* {point:%Y-%m-%d %H:%M:%S} UTC */"
    if encoding in ("year", "yyyymm", "yyyymmdd"):
        return str(raw_value(encoding, point))
    return _literal(point, encoding == "datetime")


def bound_sql(encoding: str, point: Point, rest: str = "") -> str:
    """`VALUES LESS THAN (...)` for one bound; `rest` the other RANGE COLUMNS values."""
    return f"VALUES LESS THAN ({bound_value(encoding, point)}{rest})"


def _check_encoding(encoding: str, point: Point) -> None:
    """Bounds this encoding cannot spell exactly."""
    if not isinstance(point, datetime):
        return
    midnight = point.time() == datetime.min.time()
    if encoding in ("to_days", "date", "yyyymmdd") and not midnight:
        raise CannotPlan("a day bound that is not at midnight")
    if encoding == "yyyymm" and (not midnight or point.day != 1):
        raise CannotPlan("a YYYYMM bound that is not the 1st of a month")
    if encoding == "year" and (not midnight or (point.month, point.day) != (1, 1)):
        raise CannotPlan("a YEAR() bound that is not 1 January")


def _other_columns(description: str | None) -> str:
    """`,0` from `'2024-01-01',0`: the values after the first, parsed and written again
    (`fix_values.bound_values`), for the new bounds."""
    return "".join(f",{value}" for value in _values(description)[1:])


def _values(description: str | None) -> tuple[str, ...]:
    try:
        return bound_values(description)
    except Unsafe as reason:
        raise CannotPlan(str(reason)) from None


def _catchall_sql(method: str, description: str | None) -> str:
    if method.upper().strip() != "RANGE COLUMNS":
        return "VALUES LESS THAN MAXVALUE"
    values = _values(description or "MAXVALUE")
    if values[0] != "MAXVALUE":
        raise CannotPlan("the catch-all's bound is not MAXVALUE")
    return f"VALUES LESS THAN ({','.join(values)})"


def _name(name: str) -> str:
    """A name back-quoted, or CannotPlan where it cannot go into a statement."""
    try:
        return name_sql(name)
    except Unsafe as reason:
        raise CannotPlan(str(reason)) from None


def _reached(point: Point, target: Point) -> bool:
    """Whether a new exclusive bound holds everything below `target` too."""
    return point >= target  # type: ignore[operator]


def plan_bounds(last: Point, step: Step, target: Point, room: int) -> list[Point]:
    """New bounds after `last`, one step each, until one reaches `target`; at most `room`."""
    bounds: list[Point] = []
    point = last
    while not bounds or not _reached(bounds[-1], target):
        point = next_bound(point, step)
        bounds.append(point)
        if len(bounds) > room:
            raise CannotPlan(
                f"reaching it takes more than {room} new partitions "
                f"(a table holds at most {MAX_PARTITIONS})"
            )
    return bounds


def _looks_dated(name: str) -> bool:
    """Whether a name's digits spell a month or a day (`p200912`, `p_2024_01_31`)."""
    digits = "".join(_RUNS.findall(name))
    layout = {6: "%Y%m", 8: "%Y%m%d"}.get(len(digits))
    if layout is None:
        return False
    try:
        return 1900 <= datetime.strptime(digits, layout).year <= 2200
    except ValueError:
        return False


def _free(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`... whichever no partition has yet."""
    candidate, n = name, 1
    while candidate.casefold() in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate


def _names(
    naming: Naming, last: Point, bounds: list[Point], raw, taken: set[str], dated: bool = False
) -> list[str]:
    """The new names in this pattern; CannotPlan where they collide, are not valid, or
    break the calendar the old names spell (`dated`: p200912 must not become p201294)."""
    names, lower = [], last
    for index, bound in enumerate(bounds, start=1):
        names.append(naming.name(lower, bound, index, raw))
        lower = bound
    folded = [n.casefold() for n in names]
    if len(set(folded)) != len(folded) or taken & set(folded):
        raise CannotPlan("the pattern's names collide")
    if any(not n or len(n) > MAX_NAME_LENGTH or n != n.rstrip() for n in names):
        raise CannotPlan("the pattern's names are not valid partition names")
    if dated and not all(map(_looks_dated, names)):
        raise CannotPlan("the pattern's names leave the calendar the old names follow")
    return names


def _fallback_names(naming: Naming, last, bounds, raw, taken: set[str]) -> list[str]:
    """The fallback's names, each made unique with a suffix where it is taken."""
    names, lower, used = [], last, set(taken)
    for index, bound in enumerate(bounds, start=1):
        name = _free(naming.name(lower, bound, index, raw), used)
        used.add(name.casefold())
        names.append(name)
        lower = bound
    return names


def _name_new(namings: list[Naming], last, bounds, raw, taken, dated: bool) -> list[str]:
    """Names from the first pattern that spells them all, unique and valid; else the
    fallback, made unique."""
    for naming in namings[:-1]:
        try:
            return _names(naming, last, bounds, raw, taken, dated)
        except (CannotPlan, ValueError, TypeError, OverflowError):
            continue
    return _fallback_names(namings[-1], last, bounds, raw, taken)


def _subpartitions(partitions: Sequence[PartitionState]) -> int:
    return sum(1 for p in partitions if p.subpartition) or len(merge_subpartitions(partitions))


def _readable_tail(
    bounded: list[PartitionState], expression: str | None
) -> tuple[list[PartitionState], list[Bound], Calendar | None]:
    """The last partitions whose bounds read as dates or ids, with their bounds and the
    calendar integer bounds spell: a guard partition first (`VALUES LESS THAN (0)`, no
    date) does not stop the pattern."""
    read, calendar = read_bounds(
        expression, [p.description for p in bounded], [p.name for p in bounded]
    )
    start = len(read)
    while start > 0 and read[start - 1] is not None:
        start -= 1
    if start == len(read):
        raise CannotPlan("the last partition's bound is not one partdash can read")
    return bounded[start:], read[start:], calendar  # type: ignore[return-value]


def runway_plan(
    schema: str,
    table: str,
    method: str,
    expression: str | None,
    partitions: Sequence[PartitionState],
    target: date | datetime | int,
) -> RunwayPlan:
    """The statement adding partitions after the last bounded one, in the table's own
    step and naming, until the new last bound reaches `target` (a date, datetime or id:
    everything below it then has a bounded partition). Raises CannotPlan."""
    if (method or "").upper().strip() not in RANGE_METHODS:
        raise CannotPlan("the table is not RANGE-partitioned")
    problem = table_problem(schema, table)
    if problem:
        raise CannotPlan(problem)
    if parse_expression(expression) is None:
        raise CannotPlan("the partitioning expression is not one partdash can continue")
    merged = merge_subpartitions(partitions)
    catchalls = [p for p in merged if is_catchall(p.description)]
    bounded = [p for p in merged if not is_catchall(p.description)]
    bounded, read, calendar = _readable_tail(bounded, expression)
    encoding = _encoding(expression, read[-1], calendar)
    points = [_as_point(bound) for bound in read]
    if len({isinstance(point, int) for point in points}) > 1:
        # Dates and numbers mixed (a bound the server sent as something else): no one
        # step continues them.
        raise CannotPlan("the table's bounds are not all dates or all numbers")
    step = table_step(encoding, points)  # type: ignore[arg-type]
    if step is None:
        raise CannotPlan("the table's bounds give no interval to continue")
    last = points[-1]
    goal = _as_point(target)
    if isinstance(goal, int) != isinstance(last, int):
        raise CannotPlan("the horizon is not of the table's kind (a date or an id)")
    per_partition = max(1, _subpartitions(partitions) // max(1, len(merged)))
    room = MAX_PARTITIONS // per_partition - len(merged)
    bounds = plan_bounds(last, step, goal, room)  # type: ignore[arg-type]
    for bound in bounds:
        _check_encoding(encoding, bound)

    def raw(point: Point) -> int:
        return raw_value(encoding, point)

    namings = infer_namings([p.name for p in bounded], points, raw)  # type: ignore[arg-type]
    namings.append(fallback_naming(step, not isinstance(last, int)))
    taken = {p.name.casefold() for p in merged}
    dated = all(_looks_dated(p.name) for p in bounded[-NAMES_COMPARED:])
    names = _name_new(namings, last, bounds, raw, taken, dated)
    rest = _other_columns(bounded[-1].description)
    new = [NewPartition(n, b) for n, b in zip(names, bounds, strict=True)]
    lines = [f"PARTITION {_name(p.name)} {bound_sql(encoding, p.bound, rest)}" for p in new]
    catchall = catchalls[0] if catchalls else None
    if catchall is not None:
        lines.append(
            f"PARTITION {_name(catchall.name)} {_catchall_sql(method, catchall.description)}"
        )
        head = f"REORGANIZE PARTITION {_name(catchall.name)} INTO"
    else:
        head = "ADD PARTITION"
    body = ",\n  ".join(lines)
    sql = f"ALTER TABLE {_name(schema)}.{_name(table)} {head} (\n  {body}\n)"
    catchall_name = catchall.name if catchall else None
    return RunwayPlan(sql, new, catchall_name, step, last, encoding)  # type: ignore[arg-type]


def horizon_date(now: datetime, days: int) -> date:
    """The day a time range's last bound must reach: `days` after today (UTC)."""
    today = (now.astimezone(UTC) if now.tzinfo else now).date()
    return today + timedelta(days=days)


def partitions_words(count: int, step: Step) -> str:
    """`28 daily partitions`, `1 yearly partition`, `2 partitions of 1,000 ids`..."""
    noun = "partition" if count == 1 else "partitions"
    kind, size = step
    if kind == "ids":
        return f"{count} {noun} of {size:,} ids"
    if kind == "months":
        named = {1: "monthly", 3: "quarterly", 12: "yearly"}.get(size)  # type: ignore[arg-type]
        return f"{count} {named} {noun}" if named else f"{count} {noun} of {size} months"
    hours = size / timedelta(hours=1)  # type: ignore[operator]
    named = {1: "hourly", 24: "daily", 168: "weekly"}.get(hours)  # type: ignore[call-overload]
    if named:
        return f"{count} {named} {noun}"
    if hours % 24 == 0:
        return f"{count} {noun} of {hours / 24:g} days"
    return f"{count} {noun} of {hours:g} hours"


def bound_words(point: Point) -> str:
    if isinstance(point, int):
        return f"{point:,}"
    return f"{point:%Y-%m-%d}" if point.time() == datetime.min.time() else f"{point:%Y-%m-%d %H:%M}"


__all__ = [
    "CannotPlan",
    "NewPartition",
    "RunwayPlan",
    "horizon_date",
    "runway_plan",
    "partitions_words",
]
