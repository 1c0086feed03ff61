"""`manage.py checkworker` (Docker's healthcheck, systemd's timer): runs in a row judge a
worker that answers no ping, and once it is stalled its process is stopped, killed if a
TERM does not end it (a stopped process), for its service manager to start it again."""

import json
import re
import signal
import time

import pytest
from django.core.management import CommandError, call_command

from tests.lib.test_liveness import stopped_process_ignoring_term

NODE = "absent@nowhere"  # no worker of that name answers


@pytest.fixture
def check(settings, tmp_path, redis_server, capsys):
    settings.VAR_DIR = tmp_path
    settings.PARTDASH_WORKER_STALL_SECONDS = 5

    def run(*args: str) -> str:
        call_command("checkworker", "--node", NODE, *args)
        return capsys.readouterr().out

    return run


@pytest.fixture
def stopped_worker():
    """A process that ignores TERM, stopped (SIGSTOP), as a hung worker's main process."""
    process = stopped_process_ignoring_term()
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def test_a_silent_worker_is_stalled_after_the_stall_limit_and_stopped_hard(
    check, tmp_path, stopped_worker
):
    first = time.monotonic()
    assert check().startswith(f"{NODE}: no answer to a ping for 0 s (stalled at 5 s)")
    state = tmp_path / f"checkworker-{NODE}.json"
    kept = json.loads(state.read_text())
    assert kept["silent_since"] is not None
    # Runs later (as Docker's interval makes them): silent since the first.
    state.write_text(json.dumps(kept | {"silent_since": kept["silent_since"] - 6}))
    pidfile = tmp_path / "worker.pid"
    pidfile.write_text(f"{stopped_worker.pid}\n")
    started = time.monotonic()
    with pytest.raises(CommandError) as stalled:
        check("--pidfile", str(pidfile), "--grace", "0.5")
    assert stalled.value.returncode == 1
    # 6 s, and the time the two checks took (a ping waits a second; more on a busy machine)
    silent = re.match(
        rf"{NODE} stalled: it has not answered a ping for (\d+) s; ", str(stalled.value)
    )
    assert silent and 6 <= int(silent[1]) <= 6 + round(time.monotonic() - first), stalled.value
    assert str(stalled.value).endswith(
        f"process {stopped_worker.pid} killed (not ended 0.5 s after its TERM)"
    )
    assert stopped_worker.wait(timeout=5) == -signal.SIGKILL
    assert time.monotonic() - started < 5
    assert not state.exists()  # its restart starts a new watch
