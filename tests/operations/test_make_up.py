"""`make up` as a new user meets it: in a fresh clone, with a virtualenv built from
requirements.txt alone, everything starts and stays up, the Celery worker polls the demo
server, a killed worker is started again and polls, a Ctrl-C at the terminal stops every
process within 10 s with status 0, a second run reuses what exists, a process that keeps
dying is named with its reason, and var/ is private.

The clone is of HEAD: commit before running these tests, uncommitted changes are not in it.
"""

import fcntl
import importlib.util
import json
import os
import pty
import re
import signal
import stat
import subprocess
import termios
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, wait_until
from tests.services import free_port

# One xdist group: the tests share one clone and its virtualenv (the module's `clone`),
# which a worker of their own each would build again (about 100 s of pip and npm).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600), pytest.mark.xdist_group("make_up")]

ADMIN_PASSWORD = "make-up-admin-pw"
ALARMS = ("SIGKILL", "Error", "Traceback")
WORKER_POLLED_DEMO = re.compile(r"tasks\.poll_server\[[\w-]+\] succeeded in [\d.]+s: .demo: ")


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of the repository's HEAD, as a new user gets it."""
    path = tmp_path_factory.mktemp("make-up") / "partdash"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(path)], check=True)
    return path


def up_environment(var_dir: Path, demo_dsn: str) -> dict[str, str]:
    """The user's environment: nothing of the test run's settings or virtualenv."""
    dev_bin = str(ROOT / ".venv" / "bin")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PARTDASH_", "DJANGO_", "CELERY_"))
        and key not in ("DEBUG", "DATABASE_URL", "VIRTUAL_ENV", "SECRET_KEY")
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != dev_bin)
    return env | {
        "PARTDASH_VAR_DIR": str(var_dir),
        "PARTDASH_PORT": str(free_port()),
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",  # none answers: it starts one
        "PARTDASH_DEMO_DSN": demo_dsn,
        "PARTDASH_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "PARTDASH_DISPATCH_SECONDS": "1",
        # Where `make up` keeps the encryption key (outside var/): the test's, not the user's.
        "XDG_CONFIG_HOME": str(var_dir.parent / "config"),
    }


class MakeUp:
    """`make up` in its own session; with `terminal`, a pseudo-terminal is its controlling
    terminal, so a Ctrl-C is what a terminal sends: SIGINT to its foreground group."""

    def __init__(self, clone: Path, env: dict[str, str], terminal: bool):
        self.clone = clone
        self.env = env
        self.buffer = bytearray()
        if terminal:
            self.tty, follower = pty.openpty()
            streams = {"stdin": follower, "stdout": follower, "stderr": follower}
        else:
            self.tty, follower = None, None
            streams = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE}
            streams["stderr"] = subprocess.STDOUT
        self.process = subprocess.Popen(
            ["make", "up"],
            cwd=clone,
            env=env,
            start_new_session=True,
            preexec_fn=take_as_controlling_terminal if terminal else as_a_service_manager,
            **streams,
        )
        if follower is not None:
            os.close(follower)
        source = self.tty if terminal else self.process.stdout.fileno()
        threading.Thread(target=self._read, args=(source,), daemon=True).start()

    def _read(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closes with its last process
                return
            if not chunk:
                return
            self.buffer.extend(chunk)

    def output(self) -> str:
        return self.buffer.decode(errors="replace").replace("\r\n", "\n")

    def started(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"make up exited with {self.process.returncode}:\n{self.output()[-3000:]}")
        return "partdash is at" in self.output()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.env['PARTDASH_PORT']}{path}"

    def log(self, name: str) -> str:
        return (Path(self.env["PARTDASH_VAR_DIR"]) / "log" / f"{name}.log").read_text()

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def ctrl_c(self) -> tuple[int, float]:
        """Ctrl-C as a user presses it; the exit status and the seconds it took to stop."""
        started = time.monotonic()
        if self.tty is not None:
            os.write(self.tty, b"\x03")
        else:
            os.killpg(self.process.pid, signal.SIGINT)  # no terminal: the whole group
        status = self.process.wait(timeout=60)
        return status, time.monotonic() - started

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.tty is not None:
            os.close(self.tty)


def up_process(up: MakeUp) -> psutil.Process:
    return psutil.Process(up.process.pid)


def take_as_controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def as_a_service_manager() -> None:
    """SIGINT handled by default, as a service manager starts a command (a background
    job of a shell would have it ignored, and make would keep ignoring it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def api_servers(up: MakeUp, token: str) -> list[dict]:
    request = urllib.request.Request(
        up.url("/api/v1/servers/"), headers={"Authorization": f"Token {token}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def token_for_admin(clone: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        [str(clone / ".venv/bin/python"), "manage.py", "drf_create_token", "admin"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.split()[2]


def polled_demo(up: MakeUp, token: str) -> dict | None:
    try:
        servers = api_servers(up, token)
    except OSError:
        return None
    demo = [s for s in servers if s["name"] == "demo" and s["last_poll_at"]]
    return demo[0] if demo else None


def running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [process for process in processes if running(process)]


def started_for(var_dir: Path) -> list[str]:
    """Every running process a `make up` with this var/ started, orphans included."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("PARTDASH_VAR_DIR") == str(var_dir) and running(process):
                found.append(" ".join(process.cmdline()))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def is_worker_main(process: psutil.Process) -> bool:
    """The Celery worker's main process, not one of its pool's children."""
    try:
        command = " ".join(process.cmdline())
        parent = process.parent()
        return (
            "celery" in command
            and " worker " in f"{command} "
            and parent is not None
            and ("supervise.py" in " ".join(parent.cmdline()))
        )
    except psutil.NoSuchProcess:
        return False


def open_to_others(var_dir: Path) -> list[str]:
    """Everything under var_dir (itself included) that group or others may access, but for
    the static files: public, served to anyone (Django's storage makes them 0644)."""
    found = []
    for path in [var_dir, *(p for p in var_dir.rglob("*") if "static" not in p.parts)]:
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:  # a file of the running processes, gone meanwhile
            continue
        if mode & 0o077:
            found.append(f"{path} {mode:04o}")
    return found


def test_make_up_from_a_fresh_clone_runs_polls_and_stops_on_ctrl_c(clone, tmp_path, mariadb):
    var = tmp_path / "var"
    env = up_environment(var, mariadb.dsn)
    up = MakeUp(clone, env, terminal=True)
    try:
        wait_until(up.started, 300, "make up to start", up.output)
        up_since = time.monotonic()
        assert "created admin account 'admin'" in up.output()
        assert "installing requirements.txt" in up.output()
        # Its own virtualenv, from requirements.txt alone: the test tools are not in it.
        python = str(clone / ".venv/bin/python")
        no_pytest = subprocess.run([python, "-c", "import pytest"], capture_output=True)
        assert no_pytest.returncode != 0

        token = token_for_admin(clone, env)
        demo = wait_until(lambda: polled_demo(up, token), 60, "the demo server's poll", up.output)
        assert demo["status"] in ("ok", "degraded"), demo
        assert demo["flavor"] == "mariadb"
        assert demo["partitions"] >= 24  # the demo schema's partitions
        assert "password" not in demo
        wait_until(lambda: WORKER_POLLED_DEMO.search(up.log("worker")), 30, "the worker's poll")
        with urllib.request.urlopen(up.url("/admin/login/"), timeout=5) as page:
            assert page.status == 200

        # A minute up: nothing dies after the web server answers (worker and beat once did).
        children = up.descendants()
        names = " ".join(" ".join(p.cmdline()) for p in children)
        assert "worker" in names and "beat" in names and "gunicorn" in names
        assert "redis-server" in names  # none answered at the broker URL
        # Credentials go by the environment: `ps -ef` shows no DSN and no broker URL.
        for secret in (env["PARTDASH_DEMO_DSN"], env["CELERY_BROKER_URL"]):
            assert secret not in " ".join(
                " ".join(p.cmdline()) for p in [up_process(up), *children]
            )
        # The encryption key is in a private file outside var/, named in the output.
        key_file = tmp_path / "config" / "partdash"
        assert f"the encryption key in {key_file}" in up.output()
        assert "PARTDASH_ENCRYPTION_KEYS=" not in (var / "partdash.env").read_text()
        while time.monotonic() - up_since < 60:
            assert up.process.poll() is None, up.output()[-3000:]
            time.sleep(1)
        assert alive(children) == children, up.output()[-3000:]
        assert polled_demo(up, token)["status"] in ("ok", "degraded")
        assert open_to_others(var) == []  # with the database's -wal and -shm open

        # The worker's main process killed: make up starts it again, the web stays up,
        # and the new worker polls.
        worker = [p for p in up.descendants() if is_worker_main(p)]
        assert len(worker) == 1, [p.cmdline() for p in up.descendants()]
        web = [p for p in children if "gunicorn" in " ".join(p.cmdline())]
        polls = len(WORKER_POLLED_DEMO.findall(up.log("worker")))
        worker[0].send_signal(signal.SIGKILL)
        restarting = "worker exited (status -9: killed); restarting in 1 s; see "
        wait_until(lambda: restarting in up.output(), 10, "the restart message", up.output)
        wait_until(
            lambda: len(WORKER_POLLED_DEMO.findall(up.log("worker"))) > polls,
            120,
            "the restarted worker's poll",
            up.output,
        )
        assert up.process.poll() is None and alive(web) == web, up.output()[-3000:]
        children = up.descendants()

        status, seconds = up.ctrl_c()
    finally:
        up.close()

    assert status == 0, up.output()[-3000:]
    assert seconds < 10
    for alarm in ALARMS:
        assert alarm not in up.output(), up.output()[-3000:]
    assert "Warm shutdown" in up.log("worker")
    assert "SIGKILL" not in up.log("worker")
    time.sleep(0.5)
    assert alive(children) == []
    assert started_for(var) == []


def test_make_up_again_reuses_everything_and_tightens_an_old_var(clone, tmp_path, mariadb):
    var = tmp_path / "var"
    keys = tmp_path / "etc" / "partdash" / "keys"  # kept apart from var/ and its backups
    env = up_environment(var, mariadb.dsn) | {"PARTDASH_ENCRYPTION_KEYS_FILE": str(keys)}
    first = MakeUp(clone, env, terminal=False)
    try:
        wait_until(first.started, 300, "make up to start", first.output)
        children = first.descendants()
        # A service manager signals the PID it started, make's, alone.
        os.kill(first.process.pid, signal.SIGINT)
        assert first.wait(10) == -signal.SIGINT, first.output()[-3000:]
    finally:
        first.close()
    assert "make was asked to stop" in first.output()
    time.sleep(0.5)
    assert alive(children) == [] and started_for(var) == []
    assert f"the encryption key in {keys}" in first.output()
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    # One key, under a comment saying what the file is (scripts/keys.py).
    lines = [line for line in keys.read_text().splitlines() if not line.startswith("#")]
    assert len(lines) == 1 and len(lines[0].split()) == 1, keys.read_text()
    settings_file = (var / "partdash.env").read_text()
    assert f"PARTDASH_ENCRYPTION_KEYS_FILE={keys}\n" in settings_file
    assert "PARTDASH_ENCRYPTION_KEYS=" not in settings_file
    # An install from before var/ was private.
    var.chmod(0o755)
    (var / "partdash.sqlite3").chmod(0o644)
    (var / "partdash.env").chmod(0o644)

    again = MakeUp(clone, env, terminal=False)
    try:
        wait_until(again.started, 120, "the second run", again.output)
        output = again.output()
        assert "exists (password unchanged)" in output
        assert "partdash_demo exists" in output
        assert "server demo (id 1) is registered already: kept" in output
        assert "registered as server" not in output  # it registered nothing
        assert "generating keys" not in output
        assert "creating virtualenv" not in output and "installing requirements" not in output
        assert "npm ci" not in output
        assert open_to_others(var) == []
        # Without a terminal the SIGINT reaches make too, which then dies of it, quietly.
        status, seconds = again.ctrl_c()
    finally:
        again.close()
    assert status in (0, -signal.SIGINT)
    assert seconds < 10
    for alarm in ALARMS:
        assert alarm not in again.output(), again.output()[-3000:]
    time.sleep(0.5)
    assert started_for(var) == []


def test_make_up_names_the_process_that_died_and_why(clone, tmp_path):
    """The failure of issue 9: kombu's Redis transport without `packaging`."""
    var = tmp_path / "var"
    env = up_environment(var, "mysql://root@127.0.0.1:1/")  # no demo
    setup = "source scripts/lib.sh && ensure_venv requirements.txt"
    subprocess.run(["bash", "-c", setup], cwd=clone, env=env, check=True, capture_output=True)
    python = str(clone / ".venv/bin/python")
    pip = [python, "-m", "pip", "-q"]
    version = "import importlib.metadata as m; print(m.version('packaging'))"
    packaging = subprocess.run([python, "-c", version], capture_output=True, text=True, check=True)
    subprocess.run([*pip, "uninstall", "-y", "packaging"], check=True, capture_output=True)
    up = MakeUp(clone, env, terminal=False)
    try:
        status = up.wait(timeout=180)
        time.sleep(0.5)
        left = started_for(var)
    finally:
        up.close()
        # The same version back, from pip's cache (a whole `-r requirements.txt` is 5 s of CPU).
        reinstall = f"packaging=={packaging.stdout.strip()}"
        subprocess.run([*pip, "install", "--no-deps", reinstall], check=True)

    died = re.search(
        r"^error: (worker|beat) exited \(status 1\): "
        r"ModuleNotFoundError: No module named 'packaging'; see (\S+)$",
        up.output(),
        re.MULTILINE,
    )
    assert died, up.output()[-3000:]
    name, log = died.groups()
    assert log == str(var / "log" / f"{name}.log")
    assert "ModuleNotFoundError: No module named 'packaging'" in Path(log).read_text()
    assert status != 0
    assert left == []


def supervise_module():
    spec = importlib.util.spec_from_file_location("supervise", ROOT / "scripts" / "supervise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GUNICORN_BOOT_FAILURE = """\
[2026-01-05 10:00:00 +0000] [7] [ERROR] Exception in worker process
Traceback (most recent call last):
  File "/srv/partdash/.venv/lib/python3.11/site-packages/gunicorn/arbiter.py", line 608
    worker.init_process()
    ^^^^^^^^^^^^^^^^^^^^^
django.core.exceptions.ImproperlyConfigured: PARTDASH_ENCRYPTION_KEYS_FILE: cannot read /k
[2026-01-05 10:00:00 +0000] [7] [INFO] Worker exiting (pid: 7)
[2026-01-05 10:00:01 +0000] [6] [ERROR] Reason: Worker failed to boot.
"""


def test_the_reason_given_for_a_death_is_the_exception_of_the_last_traceback():
    reason = supervise_module().reason

    assert reason(GUNICORN_BOOT_FAILURE) == (
        "django.core.exceptions.ImproperlyConfigured: PARTDASH_ENCRYPTION_KEYS_FILE: cannot read /k"
    )
    assert reason("Error: Invalid value for '-c'\n\n") == "Error: Invalid value for '-c'"
    assert reason("") == "it wrote nothing"
