"""The fleet benchmark's monitored servers: private MariaDBs with partitioned tables, black
holes that accept TCP and never answer, and a MariaDB that keeps stopping and resuming."""

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.services import MariaDB  # noqa: E402

SCHEMA = "fleet"


@dataclass(frozen=True)
class Shape:
    """A monitored server's partitioned tables: `tables` x `partitions` by `method`."""

    method: str  # HASH or RANGE
    tables: int
    partitions: int
    rows: int = 200  # per table

    @property
    def total(self) -> int:
        return self.tables * self.partitions


# The big servers (2,000 to 4,000 partitions each), then the small ones, in turn.
BIG = (Shape("HASH", 20, 100), Shape("RANGE", 15, 200), Shape("HASH", 40, 100))
SMALL = (Shape("HASH", 2, 8), Shape("RANGE", 3, 12), Shape("HASH", 1, 24))


def table_sql(shape: Shape, number: int) -> str:
    columns = "(id BIGINT NOT NULL PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB"
    if shape.method == "HASH":
        layout = f"PARTITION BY HASH(id) PARTITIONS {shape.partitions}"
    else:  # RANGE: equal id ranges, the last one open-ended
        last = shape.partitions - 1
        bounds = [f"PARTITION p{n} VALUES LESS THAN ({(n + 1) * 100})" for n in range(last)]
        bounds.append("PARTITION pmax VALUES LESS THAN MAXVALUE")
        layout = f"PARTITION BY RANGE(id) ({', '.join(bounds)})"
    return f"CREATE TABLE {SCHEMA}.t{number:03d} {columns} {layout}"


def populate(server: MariaDB, shape: Shape) -> None:
    """Create the shape's tables with a few rows each."""
    with contextlib.closing(server.connect()) as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        cursor.execute(f"USE {SCHEMA}")  # the sequence tables (seq_1_to_N) live in one
        for number in range(shape.tables):
            cursor.execute(table_sql(shape, number))
            cursor.execute(
                f"INSERT INTO {SCHEMA}.t{number:03d} SELECT seq, seq FROM seq_1_to_{shape.rows}"
            )


def start_mariadb() -> MariaDB:
    """A small private MariaDB (the helpers' defaults: a 64 MB buffer pool)."""
    return MariaDB(startup_timeout=120, shutdown_timeout=60).start()


class BlackHole:
    """A TCP listener on 127.0.0.1 that accepts every connection and never answers, as a
    server behind a network partition that still completes handshakes looks."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True, name=f"blackhole-{self.port}").start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            self.held.append(connection)
            # Forget the oldest: a poll gives up long before 64 newer ones arrive.
            while len(self.held) > 64:
                self.held.pop(0).close()

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


class Flapper:
    """Stops (SIGSTOP) and resumes (SIGCONT) a MariaDB every `period` seconds: polls of it
    alternately work and hang until their connect or read timeout."""

    def __init__(self, server: MariaDB, period: float) -> None:
        self.server = server
        self.period = period
        self.transitions: list[tuple[float, str]] = []  # (wall clock, "stopped"/"resumed")
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._flap, daemon=True, name="flapper")

    def start(self) -> "Flapper":
        self._thread.start()
        return self

    def _signal(self, number: int, state: str) -> None:
        with contextlib.suppress(ProcessLookupError, TypeError):
            os.kill(self.server.pid, number)
            self.transitions.append((time.time(), state))

    def _flap(self) -> None:
        while not self._done.wait(self.period):
            self._signal(signal.SIGSTOP, "stopped")
            if self._done.wait(self.period):
                break
            self._signal(signal.SIGCONT, "resumed")

    def stop(self) -> None:
        """Resume the server for good (a stopped server cannot shut down)."""
        self._done.set()
        self._thread.join(timeout=5)
        self._signal(signal.SIGCONT, "resumed")
