"""Quoting names into the SQL statements partdash suggests (GRANTs, fixes), so that a
statement a DBA copies and runs does exactly what it says, whatever the names hold.

Schema and table names can contain anything but NUL, including backticks, quotes,
semicolons and comment markers: a schema named ``x`.* TO evil; --`` must give one GRANT
on that schema, never a second statement.
"""

import re
import unicodedata


def identifier(name: str) -> str:
    """A schema, table or column name as a back-quoted identifier (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def qualified(*names: str) -> str:
    """`schema`.`table` (each part quoted)."""
    return ".".join(identifier(name) for name in names)


def string_literal(text: str) -> str:
    """A single-quoted string: backslashes and quotes escaped. Doubling the quote keeps it
    closed under NO_BACKSLASH_ESCAPES too, where a backslash is an ordinary character."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def account_part(text: str) -> str:
    """A user or host name in an account, right whatever the server's sql_mode: a quoted
    string with its quotes doubled (`'o''brien'`), which reads the same with and without
    NO_BACKSLASH_ESCAPES; a name holding a backslash, which no string literal writes the
    same way in both modes, is back-quoted instead (backticks doubled: a backslash means
    nothing inside backticks, in any mode)."""
    if "\\" in text:
        return identifier(text)
    return "'" + text.replace("'", "''") + "'"


def account(current_user: str) -> str:
    """`CURRENT_USER()` (`user@host`) as the account of a GRANT: `'user'@'host'`. The
    user name may itself hold `@`; the host never does, so the last `@` splits them."""
    user, _, host = current_user.rpartition("@")
    return f"{account_part(user)}@{account_part(host)}"


# How each multi-byte client character set of MySQL and MariaDB reads one character of
# two or more bytes (their ctype-*.c: the lead and trail byte ranges). A client reading
# partdash's utf8mb4 text in one of them may take a UTF-8 byte of 0x80 or above as a lead
# byte and the quote, backtick or backslash after it as the character's trail byte: the
# quote then no longer closes the name, and what follows the name runs as SQL (sjis,
# cp932, gbk, big5 and gb18030 take 0x40-0x7E as trail bytes). The EUC sets take no
# ASCII trail byte but are listed so the scan says so rather than assumes it.
_SJIS = re.compile(rb"[\x81-\x9f\xe0-\xfc][\x40-\x7e\x80-\xfc]")
MULTIBYTE_CLIENT_CHARSETS = {
    "sjis": _SJIS,
    "cp932": _SJIS,
    "gbk": re.compile(rb"[\x81-\xfe][\x40-\x7e\x80-\xfe]"),
    "gb18030": re.compile(
        rb"[\x81-\xfe][\x30-\x39][\x81-\xfe][\x30-\x39]|[\x81-\xfe][\x40-\x7e\x80-\xfe]"
    ),
    "big5": re.compile(rb"[\xa1-\xf9][\x40-\x7e\xa1-\xfe]"),
    "euckr": re.compile(rb"[\x81-\xfe][\x41-\x5a\x61-\x7a\x81-\xfe]"),
    "ujis": re.compile(rb"\x8e[\xa1-\xdf]|\x8f[\xa1-\xfe][\xa1-\xfe]|[\xa1-\xfe][\xa1-\xfe]"),
    "eucjpms": re.compile(rb"\x8e[\xa1-\xdf]|\x8f[\xa1-\xfe][\xa1-\xfe]|[\xa1-\xfe][\xa1-\xfe]"),
}
_DELIMITERS = frozenset(b"`'\"\\")


def misreading_charset(text: str) -> str | None:
    """The first multi-byte client character set that reads a quote, backtick or
    backslash of `text` (written in utf8mb4) as part of another character, or None.
    Scanned as the client and the server scan: from the start, one character at a time."""
    raw = text.encode()
    if raw.isascii():  # every one of these charsets' multi-byte characters leads past 0x80
        return None
    for charset, character in MULTIBYTE_CLIENT_CHARSETS.items():
        if _swallows_delimiter(raw, character):
            return charset
    return None


def _swallows_delimiter(raw: bytes, character: re.Pattern[bytes]) -> bool:
    i = 0
    while i < len(raw):
        match = character.match(raw, i)
        if match is None:
            i += 1
            continue
        if _DELIMITERS.intersection(match[0][1:]):
            return True
        i = match.end()
    return False


def invisible(char: str) -> bool:
    """Whether a character changes how text reads without showing itself: controls
    (line breaks among them), Unicode's format characters (the bidi overrides and
    isolates that reorder what an editor or page shows, zero-width joiners) and line and
    paragraph separators."""
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


_ASCII_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")  # the only ASCII of those categories


def holds_invisible(text: str) -> bool:
    """Whether `invisible` holds for a character of `text` (ASCII text in one search:
    the fixes of a fleet's findings are read through here on every page)."""
    if text.isascii():
        return _ASCII_CONTROLS.search(text) is not None
    return any(invisible(char) for char in text)


def visible(text: str) -> str:
    """`text` with each invisible character written as `<U+202E>`."""
    return "".join(f"<U+{ord(char):04X}>" if invisible(char) else char for char in text)
