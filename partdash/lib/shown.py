"""Names as pages and emails show them: schema, table and partition names come from the
monitored server and may hold anything but NUL, including a right-to-left override
(U+202E) that shows `orders\u202etxt.exe` as `ordersexe.txt`, or a newline that starts a
line of its own. Control, formatting and separator characters are shown escaped, in
Python's notation (`\\u202e`, `\\n`), so a name reads in the order it is stored.

The same rule is in frontend/src/format.js (`shown`) for what the pages' scripts draw."""

import unicodedata

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def shown(name: str) -> str:
    """`name` with control, formatting (bidi, zero-width) and line separator characters
    escaped, so it reads as one line in the order it is stored."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch) in ESCAPED_CATEGORIES
        else ch
        for ch in name
    )
