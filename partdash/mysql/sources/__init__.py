"""One module per place partdash reads from; what each reads, needs and the fix are
declared in `partdash.mysql.catalogue`. Each `read()` returns plain tuples or
dataclasses and raises `SourceUnavailable` when a privilege or setting is missing, so the
rest of the poll goes on without it. A lost connection is not a source's shortfall: it
ends the poll (`unavailable` hands the error back), so a poll cut short is never stored
as if complete."""

import pymysql

from partdash.mysql.catalogue import (
    ERROR,
    PRIVILEGE,
    SETTING,
    Shortfall,
    Source,
    error_shortfall,
    privilege_shortfall,
    setting_shortfall,
)
from partdash.mysql.connection import TooManyRows
from partdash.mysql.dialects import Dialect

# Errors that mean "you may not read this" or "this does not exist here".
DENIED = {1044, 1142, 1143, 1227}
MISSING = {1054, 1109, 1146}
# Errors after which the session is gone: the server shut down (1053) or killed it
# (1927), and the client's own (2000-2999: timed out, server gone, lost connection).
SESSION_ENDED = {1053, 1927}
CLIENT_ERRORS = range(2000, 3000)


class SourceUnavailable(Exception):
    """A source cannot be read on this server: a missing privilege, a setting that is
    OFF, or another refusal (`reason`). The collector turns it into a `Shortfall`, with
    the account to GRANT to."""

    def __init__(self, source: Source, cause: str, reason: str = "", repeat: bool = False):
        super().__init__(f"cannot read {source.key}: {reason or cause}")
        self.source, self.cause, self.reason = source, cause, reason
        # Not read because an earlier source went over PARTDASH_MAX_ROWS_PER_SOURCE (the
        # session is closed): that source's shortfall says so, this one adds nothing.
        self.repeat = repeat

    def shortfall(self, account: str, dialect: Dialect) -> Shortfall:
        if self.cause == PRIVILEGE:
            return privilege_shortfall(self.source, account, dialect)
        if self.cause == SETTING:
            return setting_shortfall(self.source)
        return error_shortfall(self.source, dialect, self.reason)


def session_lost(exc: pymysql.MySQLError) -> bool:
    """Whether `exc` ended the session (an `InterfaceError`: used after it closed)."""
    code = exc.args[0] if exc.args else None
    return (
        isinstance(exc, pymysql.err.InterfaceError)
        or code in SESSION_ENDED
        or (isinstance(code, int) and code in CLIENT_ERRORS)
    )


def unavailable(source: Source, exc: pymysql.MySQLError) -> Exception:
    """What to raise for `exc` while reading `source`: a `SourceUnavailable`, or `exc`
    itself where the session was lost, for `open_session` to fail the poll with."""
    if session_lost(exc):
        return exc
    if isinstance(exc, TooManyRows):
        return SourceUnavailable(source, ERROR, str(exc), repeat=exc.repeat)
    code = exc.args[0] if exc.args else None
    if code in DENIED:
        return SourceUnavailable(source, PRIVILEGE)
    reason = str(exc.args[-1]) if exc.args else str(exc)
    return SourceUnavailable(source, ERROR, reason.splitlines()[0] if reason else "error")


def setting_off(source: Source) -> SourceUnavailable:
    return SourceUnavailable(source, SETTING)
