"""RANGE partition bounds as dates or ids, from PARTITION_EXPRESSION and
PARTITION_DESCRIPTION.

The server spells both loosely: MariaDB lower-cases and back-quotes the expression
(`to_days(\\`d\\`)`), MySQL may wrap it in parentheses; descriptions are an integer,
`MAXVALUE`, or for RANGE COLUMNS quoted literals, comma-separated for several columns
(`'2026-01-01',5`), sometimes in parentheses. Only the first column of a RANGE COLUMNS
bound decides where rows go next, so only it is read. Anything not understood is None:
an unknown runway, never a guessed one.

Integer bounds on a bare column are ids, unless they spell the calendar: a column named
for years (`year`, `fiscal_year`) with four-digit bounds, or bounds that read as YYYY,
YYYYMM or YYYYMMDD where the partitions' names spell the same dates (`p200912 VALUES LESS
THAN (201001)`). Those are dates (`read_bounds`): their runway runs on the calendar.

A function whose values repeat (HOUR, DAYOFMONTH, WEEKDAY, EXTRACT(MINUTE ...), MOD)
partitions a fixed set of values: such a table never runs out (`cyclic_function`).
"""

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Literal

# MySQL's TO_DAYS counts from year 0, Python's ordinal from year 1: TO_DAYS('1970-01-01')
# is 719528 and date(1970, 1, 1).toordinal() is 719163.
TO_DAYS_OFFSET = 365
# TO_SECONDS('1970-01-01 00:00:00'): seconds from year 0 to the Unix epoch.
TO_SECONDS_EPOCH = 62167219200

BoundKind = Literal["date", "id"]
Bound = date | datetime | int
# How integer bounds spell dates, when they do.
Calendar = Literal["year", "yyyymm", "yyyymmdd"]
_CALENDAR_DIGITS: dict[int, Calendar] = {4: "year", 6: "yyyymm", 8: "yyyymmdd"}
_YEAR_COLUMN = re.compile(r"year|^yr$|^yyyy$", re.I)
# Names compared with the bounds to tell a calendar from ids.
_NAMES_CHECKED = 3
MIN_CALENDAR_YEAR, MAX_CALENDAR_YEAR = 1900, 2200
CALENDAR_LAYOUTS: dict[Calendar, str] = {"year": "%Y", "yyyymm": "%Y%m", "yyyymmdd": "%Y%m%d"}

# Functions whose values come round again: an hour of the day, a day of the month...
CYCLIC_FUNCTIONS = frozenset(
    {
        "hour",
        "minute",
        "second",
        "microsecond",
        "day",
        "dayofmonth",
        "dayofweek",
        "dayofyear",
        "weekday",
        "week",
        "weekofyear",
        "month",
        "quarter",
        "time_to_sec",
    }
)
# EXTRACT units that do not repeat (the year goes on); every other unit does.
_GROWING_UNITS = frozenset({"year", "year_month"})
_CALL = re.compile(r"^([a-z_]+)\s*\(")
_EXTRACT = re.compile(r"^extract\s*\(\s*([a-z_]+)\s+from\b")

_FUNCTION = re.compile(r"^([a-z_]+)\s*\(\s*([^()]+?)\s*\)$")
_COLUMN = re.compile(r"^[\w$]+$")
_VALUES = re.compile(r"'(?:[^'\\]|\\.|'')*'|[^,]+")
_LITERAL = re.compile(r"^(?:_\w+)?'(.*)'$", re.S)
_DATE_FUNCTIONS = ("to_days", "to_seconds", "unix_timestamp", "year")


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def parse_expression(expression: str | None) -> tuple[str | None, str] | None:
    """`TO_DAYS(\\`d\\`)` -> ("to_days", "d"); a bare column -> (None, "d"); for several
    columns (RANGE COLUMNS) the first; None for anything else (arithmetic, other
    functions)."""
    text = _strip_parens((expression or "").replace("`", "").lower())
    text = text.split(",")[0].strip() if "(" not in text else text
    match = _FUNCTION.match(text)
    if match and match[1] in _DATE_FUNCTIONS and _COLUMN.match(match[2]):
        return match[1], match[2]
    return (None, text) if _COLUMN.match(text) else None


def _top_level(text: str) -> str:
    """The text outside any parentheses (`a MOD (b)` -> `a MOD `)."""
    depth, kept = 0, []
    for char in text:
        depth += char == "("
        if depth == 0:
            kept.append(char)
        depth -= char == ")" and depth > 0
    return "".join(kept)


def _closes_at_end(text: str, opening: int) -> bool:
    """Whether the parenthesis at `opening` is closed by the text's last character."""
    depth = 0
    for i, char in enumerate(text[opening:], start=opening):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def cyclic_function(expression: str | None) -> str | None:
    """What makes a partitioning expression cyclic, as words (`HOUR()`, `EXTRACT(MINUTE)`,
    `MOD`), or None: its values come round again, so the partitions (and a catch-all)
    hold a fixed set of values by design, and no partition ever runs out."""
    text = _strip_parens((expression or "").replace("`", "").lower())
    if re.search(r"\bmod\b|%", _top_level(text)):
        return "MOD"
    extract = _EXTRACT.match(text)
    if extract and _closes_at_end(text, text.index("(")):
        unit = extract[1]
        return None if unit in _GROWING_UNITS else f"EXTRACT({unit.upper()})"
    call = _CALL.match(text)
    if call and call[1] in CYCLIC_FUNCTIONS and _closes_at_end(text, call.end() - 1):
        return f"{call[1].upper()}()"
    return None


def first_value(description: str | None) -> str | None:
    """The first column's value of a bound: `('2026-01-01',5)` -> `'2026-01-01'`."""
    if description is None:
        return None
    values = _VALUES.findall(_strip_parens(description))
    return _strip_parens(values[0]) if values else None


def is_catchall(description: str | None) -> bool:
    """The MAXVALUE partition (for RANGE COLUMNS: MAXVALUE in the first column)."""
    value = first_value(description)
    return value is not None and value.upper() == "MAXVALUE"


def _literal_date(text: str) -> date | datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    has_time = len(text.strip()) > 10
    return moment if has_time else moment.date()


def _function_date(function: str, number: int) -> date | datetime | None:
    """Converts the integer bound of a date function; None when it is out of range."""
    try:
        if function == "to_days":
            return date.fromordinal(number - TO_DAYS_OFFSET)
        if function == "year":
            return date(number, 1, 1)
        seconds = number - TO_SECONDS_EPOCH if function == "to_seconds" else number
        return datetime(1970, 1, 1) + timedelta(seconds=seconds)
    except (ValueError, OverflowError):
        return None


def range_bound(expression: str | None, description: str | None) -> Bound | None:
    """The exclusive upper bound of one RANGE partition: a date or datetime for time
    ranges, an int for id ranges (a bare integer column); None for MAXVALUE or anything
    not understood. Datetimes are naive: UTC for UNIX_TIMESTAMP, the server's wall
    clock for TO_SECONDS and DATETIME literals (which partdash cannot know)."""
    parsed, value = parse_expression(expression), first_value(description)
    if parsed is None or value is None or is_catchall(description):
        return None
    function, _column = parsed
    literal = _LITERAL.match(value)
    if literal:
        return _literal_date(literal[1]) if function is None else None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if function is None else _function_date(function, number)


def calendar_day(calendar: Calendar, number: int) -> date | None:
    """An integer bound spelling a date: 2026 (1 January), 202603 (1 March; 202513 is
    1 January 2026, as `LESS THAN (202513)` holds all of 2025), 20260310; None when the
    digits spell no date between 1900 and 2200."""
    text = str(number)
    if len(text) != {"year": 4, "yyyymm": 6, "yyyymmdd": 8}[calendar]:
        return None
    year, month = int(text[:4]), int(text[4:6] or 1)
    if not MIN_CALENDAR_YEAR <= year <= MAX_CALENDAR_YEAR:
        return None
    try:
        if calendar == "yyyymm" and month == 13:
            return date(year + 1, 1, 1)
        return date(year, month, int(text[6:8] or 1))
    except ValueError:
        return None


def _value_before(calendar: Calendar, day: date) -> date:
    """The last year, month or day below a bound: what its partition's name may spell."""
    if calendar == "year":
        return day.replace(year=day.year - 1)
    if calendar == "yyyymm":
        return (day - timedelta(days=1)).replace(day=1)
    return day - timedelta(days=1)


def _spells(calendar: Calendar, number: int, name: str) -> bool:
    """Whether a partition's name spells its bound, or the last value below it."""
    day = calendar_day(calendar, number)
    if day is None:
        return False
    layout = CALENDAR_LAYOUTS[calendar]
    digits = "".join(re.findall(r"\d+", name))
    spellings = {str(number), f"{day:{layout}}", f"{_value_before(calendar, day):{layout}}"}
    return digits in spellings


def integer_calendar(
    expression: str | None, bounds: Sequence[Bound | None], names: Sequence[str]
) -> Calendar | None:
    """The calendar integer bounds on a bare column spell, or None for ids: years where
    the column is named for them, else YYYY, YYYYMM or YYYYMMDD where the last names
    spell the same dates. A guard partition first (`LESS THAN (0)`) does not count."""
    parsed = parse_expression(expression)
    if parsed is None or parsed[0] is not None:
        return None
    read = [(b, n) for b, n in zip(bounds, names, strict=True) if b is not None]
    if read and isinstance(read[0][0], int) and read[0][0] <= 0:
        read = read[1:]
    if not read or not all(isinstance(b, int) for b, _name in read):
        return None
    calendar = _CALENDAR_DIGITS.get(len(str(read[-1][0])))
    if calendar is None or any(calendar_day(calendar, b) is None for b, _ in read):  # type: ignore[arg-type]
        return None
    if calendar == "year" and _YEAR_COLUMN.search(parsed[1]):
        return calendar
    checked = read[-_NAMES_CHECKED:]
    return calendar if all(_spells(calendar, b, n) for b, n in checked) else None  # type: ignore[arg-type]


def read_bounds(
    expression: str | None, descriptions: Sequence[str | None], names: Sequence[str]
) -> tuple[list[Bound | None], Calendar | None]:
    """The bounds of a table's bounded partitions, in order, integers that spell the
    calendar read as dates; and that calendar (None where there is none)."""
    bounds = [range_bound(expression, d) for d in descriptions]
    calendar = integer_calendar(expression, bounds, names)
    if calendar is None:
        return bounds, None
    return [calendar_day(calendar, b) if isinstance(b, int) else b for b in bounds], calendar


def bound_to_date(expression: str | None, description: str | None) -> date | datetime | None:
    """A RANGE bound as a date or datetime; None for id ranges, MAXVALUE and the unknown."""
    bound = range_bound(expression, description)
    return bound if isinstance(bound, date) else None


def bound_kind(bound: Bound | None) -> BoundKind | None:
    if bound is None:
        return None
    return "date" if isinstance(bound, date) else "id"


def bound_day(bound: date | datetime) -> date:
    """The calendar day of a bound (a datetime bound's date)."""
    return bound.date() if isinstance(bound, datetime) else bound


def utc_today(now: datetime) -> date:
    """Today in UTC, the zone bounds are compared in."""
    return (now.astimezone(UTC) if now.tzinfo else now).date()
