"""`make up` as a new user runs it: everything starts, the demo server is polled and shows
in the API, Ctrl-C stops every process it started, and a second run reuses what exists."""

import json
import os
import signal
import subprocess
import time
import urllib.request

import psutil
import pytest

from tests.conftest import ROOT, wait_until
from tests.services import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ADMIN_PASSWORD = "make-up-admin-pw"


def up_environment(var_dir, mariadb) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "DATABASE_URL", "PARTDASH_REDIS_URL")
    }
    return env | {
        "PARTDASH_VAR_DIR": str(var_dir),
        "PARTDASH_PORT": str(free_port()),
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",  # none answers: it starts one
        "PARTDASH_DEMO_DSN": mariadb.dsn,
        "PARTDASH_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "PARTDASH_DISPATCH_SECONDS": "1",
    }


class MakeUp:
    """`make up` in its own process group, as a terminal would run it."""

    def __init__(self, env: dict[str, str], log_path):
        self.env = env
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(
            ["make", "up"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def started(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"make up exited with {self.process.returncode}:\n{self.output()[-3000:]}")
        return "partdash is at" in self.output()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.env['PARTDASH_PORT']}{path}"

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def ctrl_c(self) -> int:
        os.killpg(self.process.pid, signal.SIGINT)  # what the terminal sends to the group
        return self.process.wait(timeout=60)


def api_servers(up: MakeUp, token: str) -> list[dict]:
    request = urllib.request.Request(
        up.url("/api/v1/servers/"), headers={"Authorization": f"Token {token}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def token_for_admin(env: dict[str, str]) -> str:
    result = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", "drf_create_token", "admin"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.split()[2]


def polled_demo(up: MakeUp, token: str):
    try:
        servers = api_servers(up, token)
    except OSError:
        return None
    demo = [s for s in servers if s["name"] == "demo" and s["status"] != "never"]
    return demo[0] if demo else None


def test_make_up_runs_everything_and_ctrl_c_stops_it(tmp_path, mariadb):
    env = up_environment(tmp_path / "var", mariadb)
    up = MakeUp(env, tmp_path / "up.log")
    try:
        wait_until(up.started, 300, "make up to start", up.output)
        assert "created admin account 'admin'" in up.output()
        token = token_for_admin(env)
        demo = wait_until(lambda: polled_demo(up, token), 60, "the demo server's poll", up.output)
        assert demo["status"] in ("ok", "degraded")
        assert demo["flavor"] == "mariadb"
        assert demo["partitions"] >= 24  # the demo schema's partitions
        assert demo["last_poll_at"]
        assert "password" not in demo
        with urllib.request.urlopen(up.url("/admin/login/"), timeout=5) as page:
            assert page.status == 200
        children = up.descendants()
        names = " ".join(" ".join(p.cmdline()) for p in children)
        assert "celery" in names and "beat" in names and "gunicorn" in names
        assert "redis-server" in names  # none answered at the broker URL
    finally:
        status = up.ctrl_c()
    time.sleep(1)
    assert [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert status in (0, 1, 2, -signal.SIGINT)  # make reports the interrupt its own way

    again = MakeUp(env, tmp_path / "up-again.log")
    try:
        wait_until(again.started, 300, "the second run", again.output)
        assert "exists (password unchanged)" in again.output()
        assert "partdash_demo exists" in again.output()
        assert "generating keys" not in again.output()
    finally:
        again.ctrl_c()
