"""What a monitored server sent, checked and re-written before it reaches a fix's SQL.

A fix is run as is, so nothing the server sent is copied into it as text: a proxy between
partdash and the server (or a server that lies) could otherwise make a shown fix carry
`; GRANT ALL ...`. Each value is parsed strictly into a typed literal and written again
by partdash; what does not parse raises `Unsafe`, and the fix is advice without SQL.

- Bound values (PARTITION_DESCRIPTION of RANGE, RANGE COLUMNS and LIST): integers,
  decimals, MAXVALUE, NULL, and quoted strings (an optional charset introducer, `''` and
  backslash escapes) whose text is printable ASCII without a backslash: such a string is
  written with its quotes doubled, which reads the same under NO_BACKSLASH_ESCAPES and in
  any client character set. Anything else (hex, an expression, `;`) is refused.
- Names (schemas, tables, partitions, columns): back-quoted by `lib.quoting`, refused
  where the server would refuse them (NUL, characters beyond the BMP, a trailing space,
  over 64 characters) or a client could misread them: control and format characters
  (bidi overrides that make an editor show other text than runs), and bytes that a
  multi-byte client character set (sjis, cp932, gbk, big5, gb18030) reads together with
  the closing backtick, which would end the name early and run the rest as SQL.
- Partitioning expressions: columns (re-quoted), integers, `+ - * / % MOD DIV`,
  parentheses, commas, and the functions MySQL allows in a partitioning expression.
"""

import re
from typing import cast

from partdash.lib.quoting import holds_invisible, identifier, misreading_charset, visible

MAX_NAME_LENGTH = 64
# Functions MySQL and MariaDB allow in partitioning expressions (the manual's list, less
# EXTRACT, whose unit word is not a column).
PARTITION_FUNCTIONS = frozenset(
    {
        "abs",
        "ceiling",
        "datediff",
        "day",
        "dayofmonth",
        "dayofweek",
        "dayofyear",
        "floor",
        "hour",
        "microsecond",
        "minute",
        "mod",
        "month",
        "quarter",
        "second",
        "time_to_sec",
        "to_days",
        "to_seconds",
        "unix_timestamp",
        "weekday",
        "year",
        "yearweek",
    }
)
# MariaDB 10.11: REORGANIZE, REBUILD and ADD PARTITION on a table whose name holds `/`
# fail with "Unknown database" after deleting the table's definition (measured: the
# table is gone). partdash writes no statement for such a table.
SLASH_BUG = (
    "the table's name holds `/`, and MariaDB (measured on 10.11) fails partition "
    'ALTERs on such a table with "Unknown database" after deleting the table\'s '
    "definition: the table is lost. Rename it (RENAME TABLE, to a name without `/`) "
    "and the next analysis writes the fix"
)


class Unsafe(ValueError):
    """A value partdash will not write into a statement (the reason says why)."""


# -- bound values --------------------------------------------------------------------------

_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
_WORD = re.compile(r"MAXVALUE|NULL", re.I)
_INTRODUCER = re.compile(r"_[A-Za-z0-9]+")
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
_SAFE_TEXT = re.compile(r"[\x20-\x5b\x5d-\x7e]*")  # printable ASCII but the backslash


def _string_at(text: str, start: int) -> tuple[str, int]:
    """The text of the quoted string opening at `start`, and the index after it."""
    chars, i = [], start + 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            chars.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        elif char == "'" and text[i + 1 : i + 2] == "'":
            chars.append("'")
            i += 2
        elif char == "'":
            return "".join(chars), i + 1
        else:
            chars.append(char)
            i += 1
    raise Unsafe("a quoted bound value is not closed")


def string_sql(value: str) -> str:
    """A string partdash writes: printable ASCII without a backslash, quotes doubled."""
    if not _SAFE_TEXT.fullmatch(value):
        raise Unsafe("a bound's string holds characters partdash does not re-quote")
    return "'" + value.replace("'", "''") + "'"


def _value_at(text: str, i: int) -> tuple[str, int]:
    """One literal from `i`, as partdash writes it, and the index after it."""
    for pattern in (_NUMBER, _WORD):
        match = pattern.match(text, i)
        if match:
            word = match[0].upper()
            return word, match.end()
    introducer = _INTRODUCER.match(text, i)
    start = introducer.end() if introducer else i
    if text[start : start + 1] == "'":
        value, end = _string_at(text, start)
        return string_sql(value), end
    raise Unsafe("a bound holds something other than numbers, strings, MAXVALUE or NULL")


def bound_values(description: str | None) -> tuple[str, ...]:
    """The literals of one bound (`'2026-01-01',5` or `(MAXVALUE,MAXVALUE)`), each as
    partdash writes it. Raises Unsafe for anything else."""
    text = (description or "").strip(" ")
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip(" ")
    values, i = [], 0
    while True:
        while text[i : i + 1] == " ":
            i += 1
        value, i = _value_at(text, i)
        values.append(value)
        while text[i : i + 1] == " ":
            i += 1
        if i == len(text):
            return tuple(values)
        if text[i] != ",":
            raise Unsafe("a bound holds something other than a list of values")
        i += 1


# -- names ------------------------------------------------------------------------------------


def name_problem(name: str) -> str | None:
    """Why a name cannot go into a statement, or None."""
    if not name or len(name) > MAX_NAME_LENGTH or name != name.rstrip(" "):
        return f"the name {name[:MAX_NAME_LENGTH]!r} is not one the server accepts"
    if any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in name):
        return f"the name {name!r} holds control characters"
    if any(ord(char) > 0xFFFF for char in name):
        return f"the name {name!r} holds characters the server refuses in names"
    if holds_invisible(name):
        return (
            f"the name {visible(name)!r} holds invisible characters (bidi controls or other "
            "format characters) that make a statement show otherwise than it runs"
        )
    return charset_problem(identifier(name))


def charset_problem(sql: str) -> str | None:
    """Why a statement is unsafe in some client character set, or None: one of its
    names, read in sjis, cp932, gbk, big5 or gb18030, swallows its own closing quote
    (`lib.quoting.misreading_charset`), and what follows would run as SQL."""
    charset = misreading_charset(sql)
    if charset is None:
        return None
    return (
        f"a name in it, read by a client whose character set is {charset}, would swallow "
        "its closing quote and run what follows as SQL; partdash writes no statement a "
        "client could read so"
    )


def name_sql(name: str) -> str:
    """A name back-quoted; Unsafe where it cannot be."""
    problem = name_problem(name)
    if problem:
        raise Unsafe(problem)
    return identifier(name)


# MariaDB reads a schema or table name beginning so as the file name that follows (the
# pre-5.1 encoding): a statement naming it may reach another table than the one shown.
FILE_NAME_PREFIX = "#mysql50#"


def table_problem(schema: str, table: str) -> str | None:
    """Why no statement may be written for this table, or None."""
    if "/" in schema or "/" in table:
        return SLASH_BUG
    if FILE_NAME_PREFIX in (schema[:9].lower(), table[:9].lower()):
        return (
            f"MariaDB reads a name beginning {FILE_NAME_PREFIX} as a file name, so a "
            "statement naming this table may reach another one"
        )
    return name_problem(schema) or name_problem(table)


# -- partitioning expressions -------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>`(?:[^`]|``)*`)|(?P<word>[A-Za-z_][A-Za-z0-9_$]*)"
    r"|(?P<number>[0-9]+)|(?P<op>[-+*/%(),]))"
)
_OPERATOR_WORDS = frozenset({"mod", "div"})


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens, i = [], 0
    while i < len(expression):
        match = _TOKEN.match(expression, i)
        if match is None:
            if expression[i:].strip() == "":
                break
            raise Unsafe("the partitioning expression is not one partdash re-writes")
        kind = cast(str, match.lastgroup)  # every alternative is a named group
        tokens.append((kind, match[kind]))
        i = match.end()
    return tokens


def _token_sql(tokens: list[tuple[str, str]], i: int) -> str:
    kind, text = tokens[i]
    if kind == "quoted":
        return name_sql(text[1:-1].replace("``", "`"))
    if kind != "word":
        return text
    follows = tokens[i + 1][1] if i + 1 < len(tokens) else ""
    word = text.lower()
    if follows == "(":
        if word not in PARTITION_FUNCTIONS:
            raise Unsafe(f"the partitioning expression calls {text}()")
        return word
    if word in _OPERATOR_WORDS:
        return word.upper()
    return name_sql(text)


def expression_sql(expression: str | None) -> str:
    """A partitioning expression re-written from its tokens: `to_days(\\`d\\`)`,
    `\\`a\\`,\\`b\\``. Raises Unsafe for anything else."""
    tokens = _tokens(expression or "")
    depth = 0
    for _kind, text in tokens:
        depth += {"(": 1, ")": -1}.get(text, 0)
        if depth < 0:
            raise Unsafe("the partitioning expression's parentheses do not match")
    if not tokens or depth:
        raise Unsafe("the partitioning expression's parentheses do not match")
    written = [_token_sql(tokens, i) for i in range(len(tokens))]
    return written[0] + "".join(
        _gap(before, text) + text for before, text in zip(written, written[1:], strict=False)
    )


_ARITHMETIC = frozenset("+-*/%")


def _gap(before: str, after: str) -> str:
    """A space between two operators (`/` `*` would open a comment, `-` `-` start one)
    and between two words or names (two back-quoted names side by side read as one);
    none elsewhere: `to_days(` then the column."""
    operators = before in _ARITHMETIC and after in _ARITHMETIC
    words = _WORDLIKE.match(before[-1]) and _WORDLIKE.match(after[0])
    return " " if operators or words else ""


_WORDLIKE = re.compile(r"[\w$`]")
