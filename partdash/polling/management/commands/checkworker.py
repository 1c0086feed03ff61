"""`manage.py checkworker [--node NODE] [--pidfile FILE]`: is this host's Celery worker
alive (it answers a ping, and consumes while tasks wait; `partdash.lib.liveness`)? For
the watchers of a production layout: Docker's healthcheck and systemd's timer
(docs/production.md, "What watches what"); `make up`'s supervisor does the same itself.

Each run is one check; what the runs saw in a row (since when the worker has been
silent, when it last consumed) is kept in a small file per node under
PARTDASH_VAR_DIR, so a worker is judged stalled only after
PARTDASH_WORKER_STALL_SECONDS of failures, however often the check runs. Exit 0 while it
is alive (or the broker itself does not answer: the broker's own check tells that),
1 with the reason once it is stalled; with `--pidfile`, the worker is then stopped, hard
if it must (TERM and CONT, then KILL), for its service manager to start it again.
"""

import json
import os
import socket
import time
from pathlib import Path

import redis
from django.conf import settings

from partdash.lib import liveness
from partdash.lib.commands import PartdashCommand


class Command(PartdashCommand):
    help = "Check that a Celery worker answers and consumes; stop it (--pidfile) if stalled."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--node",
            default=f"worker@{socket.gethostname()}",
            help="the worker's name (-n), default worker@HOSTNAME",
        )
        parser.add_argument(
            "--pidfile", help="the worker's --pidfile: stop that process once it is stalled"
        )
        parser.add_argument(
            "--grace", type=float, default=10.0, help="seconds between TERM and KILL"
        )

    def handle(self, *args, node: str, pidfile: str | None, grace: float, **options) -> None:
        state = state_file(node)
        now = time.time()
        watch = load(state, now)
        probe = liveness.BrokerProbe(
            settings.CELERY_BROKER_URL, liveness.longest_task(settings.PARTDASH_POLL_TIME_LIMIT)
        )
        try:
            seen = probe.observe(node, watch, now)
        except redis.exceptions.RedisError as exc:
            watch.broker_down(now)
            save(state, watch)
            self.stdout.write(f"{node}: not judged, the broker does not answer ({exc})")
            return
        finally:
            probe.close()
        why = watch.verdict(seen, now)
        if why is None:
            save(state, watch)
            self.stdout.write(f"{node}: {still_alive(seen, watch, now)}")
            return
        state.unlink(missing_ok=True)  # a restarted worker starts a new watch
        if pidfile:
            stopped = stop(Path(pidfile), grace)
            why = f"{why}; {stopped}"
        self.fail(f"{node} stalled: {why}", code=1)


def still_alive(seen: liveness.Observation, watch: liveness.WorkerWatch, now: float) -> str:
    if watch.silent_since is not None:
        silent = now - watch.silent_since
        return f"no answer to a ping for {silent:.0f} s (stalled at {watch.stall:g} s)"
    return f"alive ({seen.waiting} waiting)"


def state_file(node: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "@.-_" else "_" for c in node)
    return Path(settings.VAR_DIR) / f"checkworker-{safe}.json"


def load(path: Path, now: float) -> liveness.WorkerWatch:
    """The watch the previous runs kept; a new one (the worker given the stall limit from
    now) when there is none."""
    watch = liveness.WorkerWatch(settings.PARTDASH_WORKER_STALL_SECONDS, since=now)
    try:
        kept = json.loads(path.read_text())
        watch.progress = float(kept["progress"])
        watch.silent_since = kept["silent_since"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return watch


def save(path: Path, watch: liveness.WorkerWatch) -> None:
    kept = {"progress": watch.progress, "silent_since": watch.silent_since}
    path.write_text(json.dumps(kept))


def stop(pidfile: Path, grace: float) -> str:
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError) as exc:
        return f"not stopped: cannot read {pidfile} ({exc})"

    def exited() -> bool:
        try:
            return os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:  # not this process's child: is it still there?
            return not Path(f"/proc/{pid}").exists() or _zombie(pid)

    if liveness.stop_hard(pid, grace, exited):
        return f"process {pid} killed (not ended {grace:g} s after its TERM)"
    return f"process {pid} stopped"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
