"""`make test` reruns a failed test once (pytest-rerunfailures); `tests/timing.py` keeps
why the first attempt failed, which the run's summary lists as RERUN only."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLAKY = """
from pathlib import Path


def test_fails_once():
    flag = Path(__file__).with_name("failed-once")
    if not flag.exists():
        flag.write_text("")
        print("what the first attempt printed")
        assert 1 == 2, "the first attempt's own message"


def test_passes():
    pass
"""


def test_a_rerun_keeps_why_its_first_attempt_failed(tmp_path):
    (tmp_path / "test_flaky.py").write_text(FLAKY)
    times = tmp_path / "artifacts" / "times-sqlite.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST_"))}
    env |= {"PYTHONPATH": str(ROOT), "PARTDASH_TEST_TIMES": str(times)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(tmp_path)]
        + ["-p", "tests.timing", "-p", "no:cacheprovider", "-p", "no:django"]
        + ["-n", "2", "--dist", "loadgroup", "--reruns", "1", "-rR", "-q", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RERUN" in run.stdout and "2 passed, 1 rerun" in run.stdout
    lines = times.with_name("reruns-sqlite.json").read_text().splitlines()
    assert len(lines) == 1  # the test that passed first time is not there
    rerun = json.loads(lines[0])
    assert rerun["test"].endswith("test_flaky.py::test_fails_once")
    assert rerun["when"] == "call"
    assert "the first attempt's own message" in rerun["failure"]
    assert "assert 1 == 2" in rerun["failure"]
    assert rerun["captured"]["Captured stdout call"] == "what the first attempt printed\n"
    assert json.loads(times.read_text())  # the times are written as before
