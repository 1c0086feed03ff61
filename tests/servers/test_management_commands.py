"""The management commands as a user runs them: `python manage.py ...` in a subprocess against
its own migrated SQLite file (`cli`) for start-up, exit codes and what logging adds to stderr;
in this process (`here`: manage.py's own parsing and exit statuses, on the test database)
where the subject is what a command does and says, at a tenth of the CPU (a subprocess
starts Django again: 0.6 s). Each command keeps at least one subprocess test."""

import contextlib
import fcntl
import io
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from cryptography.fernet import Fernet
from django.core.management import ManagementUtility, call_command
from django.db import connections
from django.test import override_settings

from tests.servers.certificates import write_certificates
from tests.services import MariaDB, free_port

ROOT = Path(__file__).resolve().parents[2]
OUR_VARIABLES = ("DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL")
PASSWORD = "cli-Pw-5521-distinct"


def base_env(database: Path, broker: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in OUR_VARIABLES and not name.startswith(("PARTDASH_", "DJANGO_"))
    }
    return env | {
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "CELERY_BROKER_URL": broker,
        "PARTDASH_REDIS_URL": broker,
    }


@dataclass
class Cli:
    database: Path
    env: dict[str, str]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env | env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def start(self, *args: str) -> subprocess.Popen:
        """`manage.py ARGS` running, its stdout and stderr to read as it goes."""
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def server(self, name: str) -> dict | None:
        with sqlite3.connect(self.database) as conn:
            conn.row_factory = sqlite3.Row
            row = conn.execute("SELECT * FROM servers_server WHERE name = ?", (name,)).fetchone()
        return dict(row) if row else None

    def count_servers(self) -> int:
        with sqlite3.connect(self.database) as conn:
            return conn.execute("SELECT COUNT(*) FROM servers_server").fetchone()[0]


SETTINGS_FROM_ENV = {
    "PARTDASH_ENCRYPTION_KEYS": lambda keys: keys.split(","),
    "PARTDASH_REDIS_URL": str,
}
"""Variables settings.py reads once, at start-up: in this process, the settings they make."""


@dataclass
class InProcess:
    """`manage.py ARGS` run as manage.py runs it (ManagementUtility: a bad argument exits 2,
    a CommandError prints `CommandError: ...` and exits with its status), in this process
    on the test database, with the interface of `Cli`."""

    broker: str

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        settings = {"PARTDASH_REDIS_URL": self.broker} | {
            name: parse(env.pop(name)) for name, parse in SETTINGS_FROM_ENV.items() if name in env
        }
        stdout, stderr, status = io.StringIO(), io.StringIO(), 0
        with contextlib.ExitStack() as stack:
            stack.enter_context(override_settings(**settings))
            stack.enter_context(mock.patch.dict(os.environ, env))
            # manage.py closes the connections as it ends; here that would end the test's
            # transaction, which holds what the test reads afterwards.
            stack.enter_context(mock.patch.object(connections, "close_all"))
            stack.enter_context(contextlib.redirect_stdout(stdout))
            stack.enter_context(contextlib.redirect_stderr(stderr))
            try:
                ManagementUtility(["manage.py", *args]).execute()
            except SystemExit as exit:
                status = exit.code if isinstance(exit.code, int) else 1
        return subprocess.CompletedProcess(args, status, stdout.getvalue(), stderr.getvalue())

    def server(self, name: str) -> dict | None:
        from partdash.servers.models import Server

        return Server.objects.filter(name=name).values().first()

    def count_servers(self) -> int:
        from partdash.servers.models import Server

        return Server.objects.count()

    def stored_password(self, name: str, **env: str) -> str:
        from partdash.servers.models import Server

        settings = {n: parse(env[n]) for n, parse in SETTINGS_FROM_ENV.items() if n in env}
        with override_settings(**settings):
            return Server.objects.get(name=name).get_password()


@pytest.fixture(scope="module")
def broker(redis_server) -> str:
    """The private Redis, in a database no Celery worker reads: polls the commands queue
    are never picked up."""
    return f"redis://{redis_server.host}:{redis_server.port}/15"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory, broker) -> Path:
    """A migrated SQLite file, copied for each test: one for the run, made by the first
    pytest-xdist worker to need it (a subprocess's `migrate`, 5 s of CPU, had been run
    by each of the six workers that took a test of this module)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's, above each worker's own
    database = shared / "cli-template" / "template.sqlite3"
    database.parent.mkdir(exist_ok=True)
    with open(database.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (database.parent / "done").exists():
            result = Cli(database, base_env(database, broker)).run("migrate", "--no-input")
            assert result.returncode == 0, result.stderr
            (database.parent / "done").touch()
    return database


@pytest.fixture
def cli(migrated, tmp_path, broker) -> Cli:
    database = tmp_path / "partdash.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{migrated}{suffix}").exists():
            shutil.copy(f"{migrated}{suffix}", f"{database}{suffix}")
    return Cli(database, base_env(database, broker))


@pytest.fixture
def here(db, broker) -> InProcess:
    return InProcess(broker)


@pytest.fixture(scope="module")
def target() -> Iterator[MariaDB]:
    """A private MariaDB holding exactly one partitioned table (5 partitions)."""
    with MariaDB({"performance_schema": "ON"}) as instance:
        instance.execute("CREATE DATABASE cli")
        instance.execute(
            "CREATE TABLE cli.t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 5"
        )
        instance.execute("CREATE USER 'rot'@'%%' IDENTIFIED BY %s", (PASSWORD,))
        instance.execute("GRANT SELECT, PROCESS ON *.* TO 'rot'@'%'")
        yield instance


@pytest.fixture(scope="module")
def demo_target() -> Iterator[MariaDB]:
    with MariaDB() as instance:
        yield instance


def one_line(stream: str) -> str:
    lines = stream.splitlines()
    assert len(lines) == 1, stream
    return lines[0]


def register(cli: Cli | InProcess, name: str, instance: MariaDB, *args: str, **env: str) -> None:
    result = cli.run(
        "addserver", name, "--host", instance.host, "--port", str(instance.port), *args, **env
    )
    assert result.returncode == 0, result.stderr


# -- addserver ----------------------------------------------------------------------------------


def test_addserver_creates_then_updates_the_same_server(cli, tmp_path):
    ca = write_certificates(tmp_path).ca
    common = ["--host", "db.example", "--user", "mon", "--password-env", "PD_PW"]

    created = cli.run(
        "addserver", "web1", *common, "--interval", "30", "--ssl-ca", str(ca), PD_PW=PASSWORD
    )
    updated = cli.run("addserver", "web1", *common, "--port", "3307", PD_PW=PASSWORD)

    assert created.returncode == updated.returncode == 0, created.stderr + updated.stderr
    assert one_line(created.stdout) == one_line(updated.stdout)
    row = cli.server("web1")
    assert str(row["id"]) == created.stdout.strip()
    assert (row["host"], row["port"], row["user"]) == ("db.example", 3307, "mon")
    assert row["poll_interval"] == 30
    assert (row["tls_mode"], row["ssl_ca"]) == ("verify_ca", str(ca))
    assert cli.count_servers() == 1


@pytest.mark.parametrize("source", ["env", "file"])
def test_addserver_stores_the_password_encrypted(here, tmp_path, source):
    password_file = tmp_path / "pw"
    password_file.write_text(PASSWORD + "\n")
    args = ["--password-env", "PD_PW"] if source == "env" else ["--password-file", password_file]

    result = here.run(
        "addserver",
        "web1",
        "--host",
        "db.example",
        "--user",
        "mon",
        *map(str, args),
        PD_PW=PASSWORD,
    )

    assert result.returncode == 0, result.stderr
    token = here.server("web1")["password_token"]
    assert token and PASSWORD not in token
    assert here.stored_password("web1") == PASSWORD


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--port", "0"], "port 0 is out of range 1-65535"),
        (["--port", "70000"], "port 70000 is out of range 1-65535"),
        (["--port", "abc"], "port must be a number, got 'abc'"),
        (["--password-file", "/nonexistent/pw"], "cannot read file '/nonexistent/pw'"),
        (["--password-env", "PD_TEST_UNSET_VARIABLE"], "PD_TEST_UNSET_VARIABLE is not set"),
        (["--interval", "5"], "poll_interval: Ensure this value is greater than or equal to 10"),
    ],
    ids=[
        "unknown-flag",
        "port-0",
        "port-70000",
        "port-abc",
        "unreadable-file",
        "unset-env",
        "interval",
    ],
)
def test_addserver_rejects_bad_input_with_one_line_and_exit_2(here, args, reason):
    result = here.run("addserver", "web1", "--host", "db.example", "--user", "mon", *args)

    assert result.returncode == 2
    assert reason in one_line(result.stderr)
    assert here.count_servers() == 0


def test_addserver_prints_the_id_then_the_outcome_of_a_connection_check(cli, target):
    result = cli.run(
        "addserver", "pd1", "--host", target.host, "--port", str(target.port), "--user", "root"
    )

    assert result.returncode == 0, result.stderr
    assert one_line(result.stdout) == str(cli.server("pd1")["id"])
    assert one_line(result.stderr).startswith("check: reachable, mariadb ")


def test_addserver_registers_an_unreachable_server_and_says_why(here):
    port = free_port()

    result = here.run(
        "addserver", "down", "--host", "127.0.0.1", "--port", str(port), "--user", "u"
    )

    assert result.returncode == 0
    assert one_line(result.stdout) == str(here.server("down")["id"])
    assert one_line(result.stderr) == f"check: unreachable: connection refused by 127.0.0.1:{port}"


def test_addserver_no_check_skips_the_connection(here):
    result = here.run("addserver", "web1", "--host", "db.example", "--user", "mon", "--no-check")

    assert result.returncode == 0
    assert result.stderr == ""


def test_addserver_warns_about_a_second_server_at_the_same_address(here):
    common = ["--host", "db.example", "--port", "3307", "--user", "mon", "--no-check"]
    assert here.run("addserver", "first", *common).returncode == 0

    result = here.run("addserver", "second", *common)

    assert result.returncode == 0
    assert one_line(result.stderr) == (
        "warning: db.example:3307 is also registered as first: it will be polled twice"
    )
    assert here.count_servers() == 2


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (["--port", "3399"], "port: changing the port needs the password again"),
        (["--host", "elsewhere.example"], "host: changing the host needs the password again"),
        (["--user", "other"], "user: changing the user needs the password again"),
    ],
    ids=["port", "host", "user"],
)
def test_addserver_does_not_send_the_stored_password_to_a_new_place(here, change, reason):
    given = ["--password-env", "PD_PW"]
    first = ["--host", "db.example", "--user", "mon", "--no-check", *given]
    assert here.run("addserver", "web1", *first, PD_PW=PASSWORD).returncode == 0

    moved = {"--host": "db.example", "--user": "mon", "--port": "3306"} | dict([change])
    args = [item for pair in moved.items() for item in pair]
    result = here.run("addserver", "web1", *args, "--no-check")

    assert result.returncode == 2
    assert one_line(result.stderr).endswith(
        f"{reason} (give it with --password-env or --password-file)"
    )
    assert (here.server("web1")["host"], here.server("web1")["port"]) == ("db.example", 3306)

    again = here.run("addserver", "web1", *args, "--no-check", *given, PD_PW=PASSWORD)
    assert again.returncode == 0, again.stderr


def test_addserver_refuses_a_ca_file_without_certificates(cli):
    result = cli.run(
        "addserver", "web1", "--host", "db.example", "--user", "mon", "--ssl-ca", "/etc/passwd"
    )

    assert result.returncode == 2
    assert one_line(result.stderr).endswith(
        "ssl_ca: /etc/passwd is not a readable file of PEM certificates."
    )
    assert cli.count_servers() == 0


# -- poll ---------------------------------------------------------------------------------------


def test_poll_prints_a_one_line_summary_counting_the_partitions(here, target):
    register(here, "pd1", target, "--user", "root")

    result = here.run("poll", "pd1")

    assert result.returncode == 0, result.stderr
    summary = one_line(result.stdout)
    assert re.fullmatch(
        r"pd1: 5 partitions seen, \d+ changed \(figures or rates differ from the last poll\), "
        r"\d+ stored \(history points written\) in \d+\.\d\ds, 0 warnings",
        summary,
    ), summary
    row = here.server("pd1")
    assert (row["status"], row["partitions"], row["partitioned_tables"]) == ("ok", 5, 1)


def test_poll_all_polls_every_enabled_server(here, target):
    register(here, "pd1", target, "--user", "root")
    register(here, "pd2", target, "--user", "root")
    off = ["--host", "127.0.0.1", "--port", str(free_port()), "--user", "root", "--disabled"]
    assert here.run("addserver", "off", *off).returncode == 0

    result = here.run("poll", "--all")

    assert result.returncode == 0, result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["pd1", "pd2"]
    assert here.server("off")["status"] == "never"


def test_poll_waits_for_a_running_poll_of_the_server_then_polls(cli, target, broker):
    """A worker's poll holds the server's poll lock: `manage.py poll` says it waits, and
    polls once that poll ended (never both at once)."""
    import threading

    import redis

    register(cli, "pd1", target, "--user", "root")
    key = f"partdash:poll:{cli.server('pd1')['id']}"
    held = redis.Redis.from_url(broker)
    assert held.set(key, "a-worker-poll", ex=60)
    seen, done = set(), threading.Event()

    def watch():  # who holds the lock while the command runs
        while not done.is_set():
            seen.add(held.get(key))
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()
    command = cli.start("poll", "pd1")
    said = []
    for line in command.stderr:  # the worker's poll ends once the command says it waits
        said.append(line)
        if "waiting for it to end" in line:
            held.delete(key)
    stdout = command.stdout.read()
    command.wait(timeout=120)
    done.set()

    stderr = "".join(said)
    assert command.returncode == 0, stderr
    assert any(value and value.startswith(b"manage.py-") for value in seen), seen
    assert "pd1: another poll is running; waiting for it to end (at most " in stderr
    assert one_line(stdout).startswith("pd1: 5 partitions seen")
    assert held.get(key) is None  # released after the poll


def test_poll_without_redis_polls_without_the_lock_and_says_so(here, target):
    register(here, "pd1", target, "--user", "root")
    nowhere = f"redis://127.0.0.1:{free_port()}/0"

    result = here.run("poll", "pd1", PARTDASH_REDIS_URL=nowhere)

    assert result.returncode == 0, result.stderr
    assert "pd1: polling without the poll lock, which Redis did not give (ConnectionError" in (
        result.stderr
    )
    assert here.server("pd1")["status"] == "ok"


@pytest.mark.parametrize("where", ["refused", "dns"])
def test_poll_of_an_unreachable_server_exits_1_with_the_reason(cli, where):
    port = free_port()
    host, reason = {
        "refused": ("127.0.0.1", f"connection refused by 127.0.0.1:{port}"),
        "dns": ("nosuch.invalid", "cannot resolve host 'nosuch.invalid'"),
    }[where]
    added = cli.run("addserver", "gone", "--host", host, "--port", str(port), "--user", "root")
    assert added.returncode == 0, added.stderr

    result = cli.run("poll", "gone")

    assert result.returncode == 1
    assert f"gone: not polled: {reason}" in result.stderr
    assert result.stderr.count(reason) == 1, result.stderr  # said once, not logged again
    assert "could not be polled" not in result.stderr  # one server: its line is the whole
    assert "Traceback" not in result.stderr
    row = cli.server("gone")
    assert row["status"] == "unreachable"
    assert reason in row["last_error"]


def test_poll_all_says_each_failure_once_then_how_many_failed(cli, target):
    register(cli, "pd1", target, "--user", "root")
    ports = [free_port(), free_port()]
    for name, port in zip(("gone1", "gone2"), ports, strict=True):
        added = cli.run(
            "addserver", name, "--host", "127.0.0.1", "--port", str(port), "--user", "u"
        )
        assert added.returncode == 0, added.stderr

    result = cli.run("poll", "--all")

    assert result.returncode == 1
    for name, port in zip(("gone1", "gone2"), ports, strict=True):
        reason = f"connection refused by 127.0.0.1:{port}"
        assert result.stderr.count(reason) == 1, result.stderr
        assert f"{name}: not polled: {reason}" in result.stderr
    assert result.stderr.rstrip().endswith("2 of 3 servers could not be polled")
    assert result.stdout.startswith("pd1: 5 partitions seen")


def test_poll_help_says_what_changed_and_stored_mean(here):
    said = " ".join(here.run("poll", "--help").stdout.split())
    assert "a partition 'changed' when its figures or rates differ from the last poll" in said
    assert "'stored' when its rows or sizes moved, so a point of its history was written" in said


def test_poll_without_a_name_or_all_exits_2(here):
    result = here.run("poll")

    assert result.returncode == 2
    assert "give a server NAME or --all" in one_line(result.stderr)


def test_poll_of_an_unknown_server_exits_2(here):
    result = here.run("poll", "nope")

    assert result.returncode == 2
    assert "no server named 'nope'" in one_line(result.stderr)


# -- demo ---------------------------------------------------------------------------------------


def partitions_by_table(instance: MariaDB) -> dict[str, tuple[str, int]]:
    rows = instance.execute(
        "SELECT TABLE_NAME, PARTITION_METHOD, COUNT(*) FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = 'partdash_demo' GROUP BY TABLE_NAME, PARTITION_METHOD"
    )
    return {table: (method, count) for table, method, count in rows}


def test_demo_creates_the_partitioned_tables_and_registers_the_server(here, demo_target):
    result = here.run("demo", "--dsn", demo_target.dsn, "--register", "demo")

    assert result.returncode == 0, result.stderr
    tables = partitions_by_table(demo_target)
    assert tables["orders"][0] == "RANGE"
    assert tables["sessions"] == ("HASH", 8)
    assert tables["events"] == ("KEY", 4)
    assert tables["regions"] == ("LIST", 3)
    last = demo_target.execute(
        "SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = 'partdash_demo' AND TABLE_NAME = 'orders' "
        "ORDER BY PARTITION_ORDINAL_POSITION DESC LIMIT 1"
    )
    assert last == (("pmax", "MAXVALUE"),)
    row = here.server("demo")
    assert (row["host"], row["port"], row["user"]) == (demo_target.host, demo_target.port, "root")


def test_demo_if_missing_keeps_an_existing_schema(db, demo_target):
    call_command("demo", "--dsn", demo_target.dsn, stdout=io.StringIO())
    demo_target.execute("INSERT INTO partdash_demo.regions VALUES (424242, 1)")
    marker = "SELECT COUNT(*) FROM partdash_demo.regions WHERE id = 424242"

    kept = io.StringIO()
    call_command("demo", "--dsn", demo_target.dsn, "--if-missing", stdout=kept)
    assert "kept" in kept.getvalue()
    assert demo_target.execute(marker) == ((1,),)

    call_command("demo", "--dsn", demo_target.dsn, stdout=io.StringIO())
    assert demo_target.execute(marker) == ((0,),)


def test_demo_with_a_non_mysql_dsn_exits_1_with_one_line(cli):
    result = cli.run("demo", "--dsn", "http://x")

    assert result.returncode == 1
    assert "not a mysql:// DSN: 'http'" in one_line(result.stderr)


def test_demo_with_an_unreachable_dsn_exits_1_with_one_line(here):
    port = free_port()

    result = here.run("demo", "--dsn", f"mysql://root@127.0.0.1:{port}/")

    assert result.returncode == 1
    assert f"connection refused by 127.0.0.1:{port}" in one_line(result.stderr)


# -- ensureadmin --------------------------------------------------------------------------------


def test_ensureadmin_creates_admin_once_and_prints_its_password_once(db, monkeypatch):
    from django.contrib.auth import authenticate

    monkeypatch.delenv("PARTDASH_ADMIN_USER", raising=False)
    monkeypatch.delenv("PARTDASH_ADMIN_PASSWORD", raising=False)
    first, second = io.StringIO(), io.StringIO()

    call_command("ensureadmin", stdout=first)
    call_command("ensureadmin", stdout=second)

    password = re.search(r"with password: (\S+)", first.getvalue())[1]
    user = authenticate(username="admin", password=password)
    assert user is not None and user.is_superuser
    assert password not in second.getvalue()
    assert "exists" in second.getvalue()


def test_ensureadmin_honours_the_admin_user_and_password_variables(db, monkeypatch):
    from django.contrib.auth import authenticate

    monkeypatch.setenv("PARTDASH_ADMIN_USER", "ops")
    monkeypatch.setenv("PARTDASH_ADMIN_PASSWORD", "chosen-Passw0rd-81")
    out = io.StringIO()

    call_command("ensureadmin", stdout=out)

    assert authenticate(username="ops", password="chosen-Passw0rd-81") is not None
    assert "chosen-Passw0rd-81" not in out.getvalue()


# -- rotate_keys --------------------------------------------------------------------------------


@pytest.fixture
def old_and_new() -> tuple[str, str]:
    return Fernet.generate_key().decode(), Fernet.generate_key().decode()


def register_under(cli: Cli | InProcess, target: MariaDB, key: str) -> None:
    register(
        cli,
        "rot",
        target,
        "--user",
        "rot",
        "--password-env",
        "PD_PW",
        PD_PW=PASSWORD,
        PARTDASH_ENCRYPTION_KEYS=key,
    )


def test_rotate_keys_re_encrypts_passwords_under_the_new_key(here, target, old_and_new):
    old, new = old_and_new
    register_under(here, target, old)

    rotated = here.run("rotate_keys", PARTDASH_ENCRYPTION_KEYS=f"{new},{old}")

    assert rotated.returncode == 0, rotated.stderr
    assert one_line(rotated.stdout) == "re-encrypted 1 password(s) with the primary key"
    token = here.server("rot")["password_token"].encode()
    assert Fernet(new.encode()).decrypt(token).decode() == PASSWORD
    assert here.stored_password("rot", PARTDASH_ENCRYPTION_KEYS=new) == PASSWORD
    polled = here.run("poll", "rot", PARTDASH_ENCRYPTION_KEYS=new)
    assert polled.returncode == 0, polled.stderr


def test_a_password_under_a_dropped_key_fails_the_poll_with_a_clear_reason(
    cli, target, old_and_new
):
    old, new = old_and_new
    register_under(cli, target, old)

    result = cli.run("poll", "rot", PARTDASH_ENCRYPTION_KEYS=new)

    assert result.returncode == 1
    assert "cannot be decrypted with PARTDASH_ENCRYPTION_KEYS" in result.stderr
    assert "Traceback" not in result.stderr


def test_rotate_keys_without_the_old_key_changes_nothing(cli, target, old_and_new):
    old, new = old_and_new
    register_under(cli, target, old)
    before = cli.server("rot")["password_token"]

    result = cli.run("rotate_keys", PARTDASH_ENCRYPTION_KEYS=new)

    assert result.returncode == 1
    assert "rot: " in one_line(result.stderr)
    assert cli.server("rot")["password_token"] == before


def test_servergroup_makes_changes_lists_and_deletes_a_group_and_refuses_bad_input(here):
    from partdash.servers.models import Server, ServerGroup

    for name in ("db1", "db2", "db3"):
        Server.objects.create(name=name, host="127.0.0.1", port=9, user="u")
    assert here.run("servergroup").stdout == (
        "no server groups (create one: servergroup NAME --servers a,b)\n"
    )
    made = here.run("servergroup", "orders", "--servers", "db1,db2", "--reference", "db1")
    assert made.returncode == 0, made.stderr
    assert made.stdout == "created server group orders (replicas): db1, db2, reference db1\n"
    changed = here.run("servergroup", "orders", "--add", "db3", "--kind", "shards")
    assert changed.stdout == "updated server group orders (shards): db1, db2, db3, reference db1\n"
    for args, error in [
        (("--add", "nope"), "unknown server(s): nope"),
        (("--remove", "db1"), "the reference db1 is not a member of the group"),
        (("--kind", "mirrors"), "argument --kind: invalid choice: 'mirrors'"),
        (("--exclude-schemas", "sys,a\x07b"), "excluded_schemas: the schema pattern 'a\\x07b'"),
    ]:
        refused = here.run("servergroup", "orders", *args)
        assert refused.returncode == 2 and error in refused.stderr, refused.stderr
        assert refused.stderr.count("\n") == 1
    group = ServerGroup.objects.get(name="orders")
    assert sorted(group.servers.values_list("name", flat=True)) == ["db1", "db2", "db3"]
    here.run("servergroup", "orders", "--reference", "", "--remove", "db1")
    assert here.run("servergroup").stdout == "orders (shards): db2, db3\n"
    left_out = here.run("servergroup", "orders", "--exclude-schemas", " sys, scratch_* ,")
    assert left_out.stdout.endswith("; leaves out schemas sys, scratch_*\n"), left_out.stderr
    assert ServerGroup.objects.get().excluded_schema_patterns == ["sys", "scratch_*"]
    everything = here.run("servergroup", "orders", "--exclude-schemas", "")
    assert everything.stdout.endswith("; every schema\n")
    assert here.run("servergroup", "orders", "--delete").stdout == "deleted server group orders\n"
    assert here.run("servergroup", "orders", "--delete").returncode == 2
    assert not ServerGroup.objects.exists()
