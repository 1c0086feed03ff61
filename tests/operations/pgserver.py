"""PostgreSQL for the tests that need one of their own (to stop and restart it) or a
database of their own on the run's PostgreSQL (`PARTDASH_TEST_POSTGRES`)."""

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.pgstore import POSTGRES_URL
from tests.services import free_port


def postgres_bindir() -> Path:
    """Debian's newest PostgreSQL server binaries (`scripts/test.sh` installs them)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parent)
    if not found:
        raise RuntimeError("no PostgreSQL server binaries: apt-get install postgresql")
    return found[-1].parent


class PostgresServer:
    """A private PostgreSQL on 127.0.0.1 and a free port, trust authentication, its data
    in a temporary directory. `stop()` then `start()` keep both, as a restart does.
    initdb refuses root: as root, the server runs as the `postgres` user."""

    def __init__(self) -> None:
        self.bin = postgres_bindir()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="partdash-pg-"))
        self.owner = "postgres" if os.geteuid() == 0 else None
        if self.owner:
            shutil.chown(self.dir, self.owner)
        self._run("initdb", "-D", str(self.dir / "data"), "-U", "postgres", "-A", "trust")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.owner:
            command = ["runuser", "-u", self.owner, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> "PostgresServer":
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off"
        data, log = str(self.dir / "data"), str(self.dir / "log")
        self._run("pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "30", "start")
        return self

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def close(self) -> None:
        if (self.dir / "data" / "postmaster.pid").exists():
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def answers(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error:
        return False
    return True


@contextmanager
def dedicated_database() -> Iterator[str]:
    """The URL of a new, empty database on the run's PostgreSQL (a private one when none
    answers there), dropped afterwards."""
    server = None if answers(POSTGRES_URL) else PostgresServer().start()
    admin_url = server.url() if server else POSTGRES_URL
    name = f"partdash_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if server:
            server.close()
