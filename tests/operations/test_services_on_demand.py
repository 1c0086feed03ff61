"""Session services start only for the tests that use them (issue 39, point 6): a run of
the health rules starts no Redis and no MariaDB; the first test that uses Redis starts
the session's (as the first store-facing test does, tests/conftest.py `uses_the_broker`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RECORDER = """
import json, os
from tests import services

started = []
_start = services._ManagedServer.start


def start(self):
    started.append([type(self).__name__, os.environ.get("PYTEST_CURRENT_TEST", "")])
    return _start(self)


services._ManagedServer.start = start


def pytest_sessionfinish():
    with open(os.environ["STARTED_SERVERS"], "w") as out:
        json.dump(started, out)
"""

HEALTH = "tests/health/test_kinds.py"
USES_REDIS = "tests/polling/test_poll_limits.py::test_only_the_lost_polls_own_lock_is_released"


def test_health_tests_start_no_server_and_the_first_test_using_redis_starts_it(tmp_path):
    (tmp_path / "started_servers.py").write_text(RECORDER)
    record = tmp_path / "started.json"
    env = os.environ | {
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "STARTED_SERVERS": str(record),
    }
    env.pop("PARTDASH_TEST_TIMES", None)
    # In command-line order (no tests.timing): the health tests, then one using Redis.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "started_servers", "-n", "0", "-q", "-p",
         "no:cacheprovider", HEALTH, USES_REDIS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    started = json.loads(record.read_text())
    assert [kind for kind, _ in started] == ["RedisServer"], started
    assert started[0][1].startswith(USES_REDIS), started
