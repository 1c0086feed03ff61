"""scripts/supervise.py's restart logic on tiny commands, without the whole `make up`."""

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.operations.test_make_up import as_a_service_manager

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def supervise(monkeypatch):
    spec = importlib.util.spec_from_file_location("supervise", ROOT / "scripts" / "supervise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "BACKOFF_FIRST", 0.2)
    monkeypatch.setattr(module, "BACKOFF_CAP", 0.4)
    monkeypatch.setattr(module, "STABLE", 3.0)
    return module


def make_up(supervise, tmp_path, **processes):
    (tmp_path / "log").mkdir()
    options = argparse.Namespace(var=str(tmp_path))
    up = supervise.MakeUp(options, supervise.Supervisor(handle_signals=False))
    up.services = [
        up.process(name, [sys.executable, "-c", code], 1.0, restart=restart)
        for name, (code, restart) in processes.items()
    ]
    for process in up.services:
        process.start()
    return up


def watch_for(up, seconds):
    """Watch like `make up` does for a while; the exception that ended it, if any."""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            up.check_alive()
            up.supervisor.sleep(0.05)
    except Exception as ended:
        return ended
    return None


SLEEPS = "import time; time.sleep(60)"
FAILS = "import packaging_missing_here"


def test_a_killed_worker_is_restarted_with_the_reason_and_the_web_server_kept(
    supervise, tmp_path, capsys
):
    up = make_up(supervise, tmp_path, worker=(SLEEPS, True), web=(SLEEPS, False))
    worker, web = up.services
    try:
        first = worker.pid
        os.kill(first, signal.SIGKILL)
        assert watch_for(up, 1.5) is None
        assert worker.status() is None and worker.pid != first
        assert web.status() is None
        out = capsys.readouterr().out
        assert "worker exited (status -9: killed); restarting in 0.2 s; see " in out
        # A second death soon after: twice the wait.
        os.kill(worker.pid, signal.SIGKILL)
        assert watch_for(up, 1.5) is None
        assert "restarting in 0.4 s" in capsys.readouterr().out
        # Up for STABLE seconds: the next death waits the first delay again.
        assert watch_for(up, 3.2) is None
        os.kill(worker.pid, signal.SIGKILL)
        assert watch_for(up, 1.0) is None
        assert "restarting in 0.2 s" in capsys.readouterr().out
        assert worker.status() is None
    finally:
        up.stop()
    assert worker.status() is not None and web.status() is not None


def test_the_web_server_dying_stops_everything_as_before(supervise, tmp_path):
    up = make_up(supervise, tmp_path, worker=(SLEEPS, True), web=(SLEEPS, False))
    try:
        os.kill(up.services[1].pid, signal.SIGKILL)
        died = watch_for(up, 2)
    finally:
        up.stop()
    assert isinstance(died, supervise.Died)
    assert str(died).startswith("web exited (status -9: killed): ")


def test_a_worker_that_keeps_dying_at_start_up_is_reported_and_given_up(
    supervise, tmp_path, capsys
):
    up = make_up(supervise, tmp_path, worker=(FAILS, True), web=(SLEEPS, False))
    try:
        died = watch_for(up, 20)
    finally:
        up.stop()
    out = capsys.readouterr().out
    reason = "ModuleNotFoundError: No module named 'packaging_missing_here'"
    # Each death says why, then the last stops everything with the message of old.
    assert out.count(f"worker exited (status 1): {reason}; restarting in ") == (
        supervise.GIVE_UP - 1
    )
    assert isinstance(died, supervise.Died)
    log = tmp_path / "log" / "worker.log"
    assert str(died) == f"worker exited (status 1): {reason}; see {log}"
    assert up.services[1].status() is not None


def test_the_demo_step_gets_its_dsn_by_the_environment_never_its_arguments(
    supervise, tmp_path, monkeypatch, capsys
):
    dsn = "mysql://root:Demo-pw-7731@127.0.0.1:1/"
    monkeypatch.setenv("PARTDASH_DEMO_DSN", dsn)
    started = []
    real_popen = supervise.subprocess.Popen

    def recording_popen(argv, **options):
        started.append(argv)
        # In place of manage.py: succeed when the DSN arrived by the environment.
        check = "import os, sys; sys.exit(os.environ.get('PARTDASH_DEMO_DSN') != sys.argv[1])"
        return real_popen([sys.executable, "-c", check, dsn], **options)

    monkeypatch.setattr(supervise.subprocess, "Popen", recording_popen)
    up = supervise.MakeUp(argparse.Namespace(var=str(tmp_path)), supervise.Supervisor(False))
    up.register_demo()

    (argv,) = started
    assert argv[1:3] == ["manage.py", "demo"]
    assert not any("Demo-pw" in part or "mysql://" in part for part in argv)
    assert "no demo server" not in capsys.readouterr().out  # the child saw the DSN


def test_urls_are_shown_without_their_password(supervise):
    shown = supervise.without_password("redis://:Broker-pw@10.0.0.5:6380/0")
    assert shown == "redis://:***@10.0.0.5:6380/0"
    assert supervise.without_password("mysql://root:pw@db:3306/") == "mysql://root:***@db:3306/"
    assert supervise.without_password("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


# What `make up` runs, cut down: the supervisor watching one service, under a real make.
UNDER_MAKE = """
import argparse, sys
sys.path.insert(0, sys.argv[1])
import supervise
up = supervise.MakeUp(argparse.Namespace(var=sys.argv[2]), supervise.Supervisor())
up.services = [up.process("worker", [sys.executable, "-c", sys.argv[3]], 1.0, restart=True)]
up.services[0].start()
print(up.services[0].pid, flush=True)
try:
    up.watch()
except supervise.Stop:
    up.stop()
    print("stopped", flush=True)
"""


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_makes_pid_alone_stops_what_make_up_started(tmp_path, number):
    """A service manager signals the PID it started, make's: make forwards no SIGINT to
    its child and waits for it, so before, the SIGINT stopped nothing."""
    (tmp_path / "log").mkdir()
    script = tmp_path / "under_make.py"
    script.write_text(UNDER_MAKE)
    recipe = f"{sys.executable} {script} {ROOT / 'scripts'} {tmp_path} '{SLEEPS}'"
    (tmp_path / "Makefile").write_text(f"up:\n\t@{recipe}\n")
    make = subprocess.Popen(
        ["make", "-s", "-C", str(tmp_path), "up"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_a_service_manager,
    )
    try:
        worker = psutil.Process(int(make.stdout.readline()))
        time.sleep(0.3)  # make is waiting on its child
        os.kill(make.pid, number)
        status = make.wait(timeout=10)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
    assert status == -number  # make dies of the signal, once its child has stopped
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    said = make.stdout.read()
    assert said.endswith("stopped\n"), said
    if number == signal.SIGINT:
        assert "make was asked to stop" in said
