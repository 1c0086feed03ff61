"""A poll frees what it built when it returns. Polls run with the cyclic collector paused
(`partdash.lib.cyclic_gc.cyclic_gc_paused`), so anything a poll leaves in a reference cycle
stays in memory until the collector runs again after the poll, and costs that run the
time to traverse it: a first poll of 64,000 partitions left 230,000 objects so (the
FieldError Django keeps while resolving "health__stale" held the poll's frames), and
every poll left the monitored server's connection with its last result (the password
guard and the connection held each other)."""

import gc

import pytest

from partdash.mysql.connection import ClearTextRefused, _GuardedPassword
from partdash.polling.service import poll_server
from tests.mysql.test_incremental import tables_and_server

# Whose objects a poll must never leave to the cyclic collector.
POLL_MODULES = ("partdash.", "pymysql.", "django.db.")


def cyclic_garbage_of(action) -> list[str]:
    """The types of the objects `action` left in reference cycles, collector paused."""
    gc.collect()
    gc.disable()
    try:
        action()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return left


def test_a_poll_leaves_nothing_to_the_cyclic_collector(transactional_db, mariadb_ps, new_schema):
    """A first poll (every definition read and analysed) and a second (figures
    compared) leave none of the poll's objects, the connection's or a query's in a
    reference cycle, nor any frame."""
    _, server = tables_and_server(mariadb_ps, new_schema, "no-cycles")
    for poll in ("first", "second"):
        left = cyclic_garbage_of(lambda: poll_server(server))
        ours = sorted({t for t in left if t.startswith(POLL_MODULES) or t.endswith(".frame")})
        assert not ours, f"the {poll} poll left in cycles: {ours}"


class _Connection:
    def __init__(self) -> None:
        self.asked = 0

    def check(self) -> None:
        self.asked += 1


def test_the_password_guard_does_not_keep_its_connection():
    """The guard asks its connection before the password is sent, holds it weakly, and
    refuses once the connection is gone."""
    connection = _Connection()
    password = _GuardedPassword(b"secret", connection.check)
    assert password + b"\0" == b"secret\0" and connection.asked == 1
    del connection
    with pytest.raises(ClearTextRefused):
        _ = b"" + password
    assert _GuardedPassword(b"", _Connection().check) + b"\0" == b"\0"  # empty: not asked
