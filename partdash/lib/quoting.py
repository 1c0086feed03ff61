"""Quoting names into the SQL statements partdash suggests (GRANTs, fixes), so that a
statement a DBA copies and runs does exactly what it says, whatever the names hold.

Schema and table names can contain anything but NUL, including backticks, quotes,
semicolons and comment markers: a schema named ``x`.* TO evil; --`` must give one GRANT
on that schema, never a second statement.
"""


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
