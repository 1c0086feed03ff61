"""RANGE partition bounds as dates or ids, from PARTITION_EXPRESSION and
PARTITION_DESCRIPTION.

The server spells both loosely: MariaDB lower-cases and back-quotes the expression
(`to_days(\\`d\\`)`), MySQL may wrap it in parentheses; descriptions are an integer,
`MAXVALUE`, or for RANGE COLUMNS quoted literals, comma-separated for several columns
(`'2026-01-01',5`), sometimes in parentheses. Only the first column of a RANGE COLUMNS
bound decides where rows go next, so only it is read. Anything not understood is None:
an unknown runway, never a guessed one.
"""

import re
from datetime import UTC, date, datetime, timedelta
from typing import Literal

# MySQL's TO_DAYS counts from year 0, Python's ordinal from year 1: TO_DAYS('1970-01-01')
# is 719528 and date(1970, 1, 1).toordinal() is 719163.
TO_DAYS_OFFSET = 365
# TO_SECONDS('1970-01-01 00:00:00'): seconds from year 0 to the Unix epoch.
TO_SECONDS_EPOCH = 62167219200

BoundKind = Literal["date", "id"]
Bound = date | datetime | int

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
