"""Alerts' fixtures: a real SMTP server, and a real Celery worker and beat that send to it
(with short leases and retries, so a test of a crash or an outage stays short)."""

import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from tests.alerts.mailbox import Mailbox
from tests.alerts.receiver import Receiver
from tests.conftest import CeleryProcesses, wait_until
from tests.services import log_tail

# The worker's delivery settings in these tests: a lease of a few seconds (a killed
# worker's email is sent again soon after), a sweep every second, quick retries.
DELIVERY_ENV = {
    "ALERT_EMAILS": "ops@example.com",
    "DEFAULT_FROM_EMAIL": "partdash@example.com",
    "PARTDASH_BASE_URL": "https://partdash.example.com",
    "EMAIL_TIMEOUT": "3",
    "PARTDASH_ALERT_CLAIM_LEASE_SECONDS": "4",
    "PARTDASH_ALERT_SWEEP_SECONDS": "1",
    "PARTDASH_ALERT_RETRY_SECONDS": "1",
    "PARTDASH_ALERT_REMINDER_EVERY_SECONDS": "1",
}


@pytest.fixture
def mailbox():
    """A real SMTP server on a free port, running."""
    box = Mailbox().start()
    yield box
    box.stop()


@pytest.fixture
def receiver(tmp_path, settings):
    """A local HTTP receiver for webhooks, running (tests.alerts.receiver), on loopback,
    which channels may reach only where PARTDASH_CHANNEL_ALLOW names it (issue 37)."""
    settings.PARTDASH_CHANNEL_ALLOW = ["loopback"]
    box = Receiver(tmp_path).start()
    yield box
    box.stop()


@pytest.fixture
def smtp_settings(settings, mailbox):
    """This process sends through the real SMTP server, as the worker would."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = mailbox.port
    settings.EMAIL_TIMEOUT = 3
    settings.ALERT_EMAILS = ["ops@example.com"]
    settings.DEFAULT_FROM_EMAIL = "partdash@example.com"
    settings.PARTDASH_BASE_URL = "https://partdash.example.com"
    return settings


class DeliveryProcesses(CeleryProcesses):
    """Worker and beat sending alert emails to the test's SMTP server; the worker can be
    killed outright (SIGKILL, with its pool) and started again."""

    def __init__(self, broker_url: str, database: str, log_dir: Path, smtp_port: int):
        super().__init__(broker_url, database, log_dir)
        self.env |= DELIVERY_ENV | {"EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": str(smtp_port)}
        self.workers = 0
        self.worker: subprocess.Popen | None = None

    def start(self, concurrency: int = 2, **worker_env: str) -> "DeliveryProcesses":
        self._spawn("beat", "beat", f"--schedule={self.log_dir / 'beat-schedule'}")
        return self.start_worker(concurrency, **worker_env)

    def start_worker(self, concurrency: int = 2, **worker_env: str) -> "DeliveryProcesses":
        """A worker of `concurrency` pool processes; one whose `worker_env` names steps of
        delivery to pause at imports `tests.alerts.crashing_worker`, which stops it there
        (a pool process per step, and one more for beat's sweeps)."""
        base = self.env
        self.env = {**base, **worker_env}
        pausing = "PARTDASH_TEST_DELIVERY_PAUSE_AT" in worker_env
        crashing = ["--include=tests.alerts.crashing_worker"] if pausing else []
        try:
            self.workers += 1
            self._spawn(
                f"worker{self.workers}",
                "worker",
                f"--concurrency={concurrency}",
                "--pool=prefork",
                "-n",
                f"test{self.workers}@%h",
                *crashing,
            )
        finally:
            self.env = base
        self.worker = self.processes[-1]
        return self

    def wait_ready(self) -> None:
        """Until the worker took its queue (its log says "ready")."""
        log = self.log_dir / f"worker{self.workers}.log"
        wait_until(
            lambda: log.exists() and " ready." in log.read_text(errors="replace"),
            timeout=60,
            what="the worker to be ready",
            logs=self.logs,
        )

    def kill_worker(self) -> None:
        """SIGKILL the worker and its pool processes at once, as a crash would."""
        main = psutil.Process(self.worker.pid)
        family = [main, *main.children(recursive=True)]
        for process in family:
            try:
                os.kill(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        psutil.wait_procs(family, timeout=10)
        self.worker.wait(timeout=10)

    def logs(self) -> str:
        names = ["beat", *(f"worker{n}" for n in range(1, self.workers + 1))]
        return "\n".join(log_tail(self.log_dir / f"{name}.log") for name in names)


@pytest.fixture
def delivery_processes(transactional_db, redis_server, tmp_path, mailbox):
    """`delivery_processes(**worker_env)` starts beat and a worker sending to `mailbox`;
    the test must use committed data."""
    started = []

    def start(concurrency: int = 2, **worker_env: str) -> DeliveryProcesses:
        database = settings.DATABASES["default"]["NAME"]
        processes = DeliveryProcesses(redis_server.url, database, tmp_path, mailbox.port)
        started.append(processes.start(concurrency, **worker_env))
        return processes

    yield start
    for processes in started:
        processes.stop()
