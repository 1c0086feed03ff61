"""The fleet benchmark's partdash processes, as `make up` runs them (scripts/supervise.py):
web, beat and worker(s), each in a session of its own; and the workers' memory over time."""

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.services import log_tail, spawn, wait_for  # noqa: E402

BIN = Path(sys.executable).parent  # the virtualenv's
MEMORY_EVERY = 10.0  # seconds between worker RSS samples
STOP_GRACE = 15.0  # seconds a process may take to stop after its TERM


class Processes:
    """Web, beat and worker(s), each in a session of its own, logs in the run directory."""

    def __init__(self, run_dir: Path, options: argparse.Namespace, port: int) -> None:
        self.run_dir = run_dir
        self.options = options
        self.port = port
        self.running: dict[str, subprocess.Popen] = {}

    def start(self) -> "Processes":
        celery = [str(BIN / "celery")]
        for number in range(1, self.options.workers + 1):
            worker = ["-A", "poll_probe", "worker", "--loglevel=INFO"]
            worker += [f"--concurrency={self.options.concurrency}", "-n", f"w{number}@%h"]
            self._spawn(f"worker{number}", [*celery, *worker])
        schedule = f"--schedule={self.run_dir / 'celerybeat-schedule'}"
        self._spawn("beat", [*celery, "-A", "partdash", "beat", "--loglevel=INFO", schedule])
        web = [str(BIN / "gunicorn"), "partdash.wsgi", "--bind", f"127.0.0.1:{self.port}"]
        web += ["--workers", "2", "--threads", "4", "--graceful-timeout", "3"]
        self._spawn("web", [*web, "--error-logfile", "-", "--no-control-socket"])
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        self.running[name] = spawn(argv, self.run_dir / f"{name}.log")

    def check(self) -> None:
        """Fail the run when a process has exited (say why: the tail of its log)."""
        for name, proc in self.running.items():
            if proc.poll() is not None:
                tail = log_tail(self.run_dir / f"{name}.log", lines=15)
                raise RuntimeError(f"{name} exited (status {proc.returncode}):\n{tail}")

    def sleep_until(self, deadline: float) -> None:
        """Wait until `deadline` (monotonic), checking every few seconds that all run."""
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 2.0))
            self.check()

    def wait_until_ready(self, timeout: float = 90) -> None:
        """Until every worker says it is ready (so the first polls are not queued early)."""
        for name in (name for name in self.running if name.startswith("worker")):
            log = self.run_dir / f"{name}.log"
            if not wait_for(lambda log=log: " ready." in log.read_text(), timeout=timeout):
                raise RuntimeError(f"{name} not ready in {timeout:g} s:\n{log_tail(log)}")
            self.check()

    def workers(self) -> list[subprocess.Popen]:
        return [proc for name, proc in self.running.items() if name.startswith("worker")]

    def stop(self) -> None:
        """TERM each (a worker's warm shutdown finishes its polls), then kill what is left
        of its process group (a worker's pool, gunicorn's workers)."""
        for proc in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        deadline = time.monotonic() + STOP_GRACE
        for proc in self.running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class MemorySampler:
    """RSS of the worker main processes and all their children, every MEMORY_EVERY s."""

    def __init__(self, workers: list[subprocess.Popen], began: float) -> None:
        self.workers = workers
        self.began = began
        self.samples: list[tuple[float, float]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="memory")

    def start(self) -> "MemorySampler":
        self._thread.start()
        return self

    def rss_mb(self) -> float:
        total = 0
        for worker in self.workers:
            with contextlib.suppress(psutil.Error):
                main = psutil.Process(worker.pid)
                for proc in [main, *main.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += proc.memory_info().rss
        return total / 2**20

    def _sample(self) -> None:
        while not self._done.wait(MEMORY_EVERY):
            self.samples.append((time.time() - self.began, self.rss_mb()))

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=5)
