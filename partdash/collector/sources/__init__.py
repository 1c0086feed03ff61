"""One module per place partdash reads from. Each `read()` returns plain tuples or
dataclasses and raises `SourceUnavailable` when a privilege or setting is missing, so the
rest of the poll goes on without it."""

import pymysql

# Errors that mean "you may not read this" or "this does not exist here".
DENIED = {1044, 1142, 1143, 1227}
MISSING = {1054, 1109, 1146}


class SourceUnavailable(Exception):
    """A source cannot be read on this server; the message says why and how to fix it."""


def unavailable(source: str, exc: pymysql.MySQLError, fix: str = "") -> SourceUnavailable:
    code = exc.args[0] if exc.args else None
    reason = exc.args[-1] if exc.args else str(exc)
    if code in DENIED and fix:
        return SourceUnavailable(f"cannot read {source}: {reason} ({fix})")
    return SourceUnavailable(f"cannot read {source}: {reason}")
