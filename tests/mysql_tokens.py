"""A MySQL tokenizer for tests: how the server (default sql_mode) and the mysql/mariadb
command-line client split a statement a DBA pastes, so a test can assert that a fix is one
statement of the expected kind and nothing else.

It knows what changes where a statement ends or what runs: quoted strings (`'` and `"`,
with backslash escapes and doubled quotes), back-quoted identifiers (doubled backticks,
no escapes), the three comment styles (`-- ` needs a space or control character after it;
`/*! ... */` and `/*M! ... */` are executed, not comments), `;`, and a backslash outside
quotes (a client command: `\\!` runs a shell). Anything it cannot close is an error.
"""

import re
from dataclasses import dataclass

_WORD = re.compile(r"[\w$]+")
_SPACE = " \t\n\r\f\v"


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word, string, identifier, comment, punct
    text: str  # as written
    value: str = ""  # a string's or identifier's decoded text; a word upper-cased


class NotOneStatement(AssertionError):
    pass


_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _quoted(sql: str, i: int) -> tuple[Token, int]:
    quote, chars, j = sql[i], [], i + 1
    while j < len(sql):
        char = sql[j]
        if char == "\\" and quote != "`":
            if j + 1 == len(sql):
                break
            chars.append(_ESCAPES.get(sql[j + 1], sql[j + 1]))
            j += 2
        elif char == quote and sql[j + 1 : j + 2] == quote:
            chars.append(quote)
            j += 2
        elif char == quote:
            kind = "identifier" if quote == "`" else "string"
            return Token(kind, sql[i : j + 1], "".join(chars)), j + 1
        else:
            chars.append(char)
            j += 1
    raise NotOneStatement(f"unclosed {quote} at {i}: {sql[i : i + 40]!r}")


def _comment(sql: str, i: int) -> tuple[Token, int] | None:
    if sql.startswith("/*", i):
        end = sql.find("*/", i + 2)
        if end < 0:
            raise NotOneStatement(f"unclosed comment at {i}")
        text = sql[i : end + 2]
        if text.startswith(("/*!", "/*M!")):
            raise NotOneStatement(f"an executable comment: {text!r}")
        return Token("comment", text), end + 2
    dashes = sql.startswith("--", i) and (i + 2 == len(sql) or ord(sql[i + 2]) <= 0x20)
    if dashes or sql[i] == "#":
        end = sql.find("\n", i)
        end = len(sql) if end < 0 else end
        return Token("comment", sql[i:end]), end
    return None


def tokens(sql: str) -> list[Token]:
    """The statement's tokens; NotOneStatement where it cannot be split as one."""
    found, i = [], 0
    while i < len(sql):
        char = sql[i]
        if char == "\0":
            raise NotOneStatement("a NUL byte")
        if char in _SPACE:
            i += 1
            continue
        comment = _comment(sql, i)
        if comment:
            found.append(comment[0])
            i = comment[1]
        elif char in "'\"`":
            token, i = _quoted(sql, i)
            found.append(token)
        elif char == "\\":
            raise NotOneStatement(f"a client command outside quotes: {sql[i : i + 2]!r}")
        elif char == ";":
            raise NotOneStatement(f"a statement ends at {i}: {sql[i : i + 40]!r}")
        else:
            word = _WORD.match(sql, i)
            if word:
                found.append(Token("word", word[0], word[0].upper()))
                i = word.end()
            else:
                found.append(Token("punct", char, char))
                i += 1
    return found


# Words a fix's statement may hold outside quotes: its keywords and functions.
KEYWORDS = frozenset(
    """ALTER TABLE PARTITION PARTITIONS REORGANIZE INTO ADD VALUES LESS THAN MAXVALUE IN
    REBUILD ANALYZE ALL BY HASH KEY LINEAR RANGE LIST COLUMNS ROW_FORMAT DYNAMIC
    KEY_BLOCK_SIZE SET GLOBAL NULL MOD DIV DEFAULT""".split()
)
FUNCTIONS = frozenset(
    """TO_DAYS TO_SECONDS UNIX_TIMESTAMP YEAR ABS CEILING DATEDIFF DAY DAYOFMONTH DAYOFWEEK
    DAYOFYEAR FLOOR HOUR MICROSECOND MINUTE MONTH QUARTER SECOND TIME_TO_SEC WEEKDAY
    YEARWEEK""".split()
)
SETTINGS = frozenset({"TABLE_OPEN_CACHE", "TABLE_DEFINITION_CACHE", "INNODB_BUFFER_POOL_SIZE"})
# The one comment partdash writes: the UTC time of an epoch-seconds bound.
_TIME_COMMENT = re.compile(r"/\* \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \*/")


def _check_token(token: Token) -> None:
    if token.kind == "comment" and not _TIME_COMMENT.fullmatch(token.text):
        raise NotOneStatement(f"a comment partdash does not write: {token.text!r}")
    if token.kind == "word" and not (
        token.value.isdigit() or token.value in KEYWORDS | FUNCTIONS | SETTINGS
    ):
        raise NotOneStatement(f"an unexpected word outside quotes: {token.text!r}")
    if token.kind in ("string", "identifier") and any(
        ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in token.value
    ):
        raise NotOneStatement(f"control characters inside quotes: {token.text!r}")
    if token.kind == "string" and ("\\" in token.text or not token.value.isascii()):
        raise NotOneStatement(f"a string that reads differently by mode or charset: {token.text!r}")


def one_statement(sql: str, table: tuple[str, str] | None, *kind: str) -> list[Token]:
    """Assert `sql` is one statement: `ALTER TABLE schema.table <kind words>...` (or
    `SET GLOBAL ...` for `table` None), every word outside quotes a keyword, function or
    number, no comment but partdash's own. Returns its tokens."""
    found = tokens(sql)
    for token in found:
        _check_token(token)
    if table is None:
        head = [t.value for t in found[: 2 + len(kind)]]
        if head != ["SET", "GLOBAL", *kind]:
            raise NotOneStatement(f"not SET GLOBAL {kind}: {sql[:80]!r}")
        return found
    schema, name = table
    head = found[:5]
    expected = [
        ("word", "ALTER"),
        ("word", "TABLE"),
        ("identifier", schema),
        ("punct", "."),
        ("identifier", name),
    ]
    if [(t.kind, t.value) for t in head] != expected:
        raise NotOneStatement(f"not ALTER TABLE {schema}.{name}: {sql[:80]!r}")
    words = [t.value for t in found[5 : 5 + len(kind)]]
    if words != list(kind):
        raise NotOneStatement(f"not {' '.join(kind)}: {sql[:80]!r}")
    return found
