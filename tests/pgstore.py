"""PostgreSQL as the metadata store in the tests.

`scripts/test.sh` runs the suite twice: on SQLite (every test), then with
`PARTDASH_TEST_STORE=postgres -p tests.pgstore` on PostgreSQL (the store-facing tests:
those that use the Django test database). `tests/settings.py` picks the store; this
module, loaded as a pytest plugin, keeps the second pass to the store-facing tests, and
gives the URL that worker processes spawned by a test use to reach the same database.

For tests that run partdash on a store of their own (tests/operations/test_store_faults.py,
tests/operations/test_scale_out.py): `store_env`, `manage` and `Fleet` (named workers and beat).
"""

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.services import celery_command, log_tail, stop_processes

STORE = os.environ.get("PARTDASH_TEST_STORE", "sqlite")
POSTGRES_URL = os.environ.get(
    "PARTDASH_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres"
)

DB_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "live_server"})
"""A test using one of these reads or writes the test database: it is store-facing."""

NOT_STORE_FACING = ("browser",)
"""Markers of tests that are about something else (Chromium) and run on SQLite only."""

SQLITE_ONLY = (
    "tests/polling/test_faults.py",  # monitored servers frozen and killed: minutes of waiting
    "tests/polling/test_backoff.py",  # black-hole servers and lateness: 85 s of scheduling
    "tests/polling/test_poll_limits.py",  # time limits and a killed worker child: Redis's lock
    "tests/polling/test_hostile_worker_memory.py",  # a worker child's memory, 40 s
    "tests/polling/test_simulated_fleet.py",  # the fake servers' answers, not the store
    "tests/operations/test_make_up.py",  # `make up` runs on SQLite, as a laptop does
    "tests/operations/test_supervise.py",
    # `make up`'s supervisor and its processes on SQLite, as `make up` runs: 60 s.
    "tests/operations/test_worker_liveness.py",
    # What MariaDB does with the statements partdash gives (fixes, grants) and what its
    # reads cost the monitored server: the polls between store what the ground-truth
    # tests (tests/collector/test_ground_truth.py, tests/api/test_health_ground_truth.py)
    # prove on PostgreSQL. 25 s of CPU on it.
    "tests/health/test_fixes_on_mariadb.py",
    "tests/health/test_skew_fixes_on_mariadb.py",
    "tests/health/test_runway_on_mariadb.py",
    "tests/health/test_fix_sql_on_mariadb.py",
    "tests/mysql/test_catalogue.py",
    "tests/mysql/test_tablestats_cost.py",
    # A channel's message across a worker killed at each step: the claim protocol the
    # email variant (test_a_worker_killed_at_each_step_loses_nothing) proves on
    # PostgreSQL, on other rows; 160 s of a PostgreSQL pass's worker time.
    "tests/alerts/test_delivery_worker.py::test_a_channel_message_survives_a_worker_killed",
    # The Prometheus rules and Grafana dashboard partdash ships, against a scrape of
    # /metrics: the exposition's rows are the same on either store (its own tests,
    # tests/prometheus/test_metrics_endpoint.py, run on PostgreSQL). 14 s of a worker.
    "tests/prometheus/test_a_real_prometheus.py",
    "tests/prometheus/test_rules_and_dashboard.py",
    # Permissions, 294 cases of Django's test client (25 s of CPU on PostgreSQL): the same
    # rows on either store. The migration that gives the roles their permissions stays.
    "tests/accounts/test_access_matrix.py::test_the_api_answers_each_role_as_its_permissions_say",
    "tests/accounts/test_access_matrix.py::test_pages_and_the_admin_answer_each_role_as_its_permissions_say",
    # Single sign-on: what a directory and an OpenID provider say, and the roles they give,
    # in the same few rows on either store (the audit trail's rows and queries are
    # tests/accounts/test_audit.py's, on both); a slapd and a provider fewer.
    "tests/accounts/test_directory_sign_on.py",
    "tests/accounts/test_oidc_sign_on.py",
    # What is read from MariaDB and kept in Redis between polls (the tablespace list and
    # file I/O read where they changed, the shared poll memory, TLS to the server): the
    # polls they feed store through the PollStore the ground-truth tests prove on
    # PostgreSQL. 120 s of a PostgreSQL pass's worker time, 22 s of CPU.
    "tests/mysql/test_incremental.py",
    "tests/polling/test_pollmemory.py",
    "tests/mysql/test_tls.py",
    # Deadlines and limits held by processes and Redis (a poll's deadline, Test
    # connection's and test alerts' slots, request bodies, response headers), and the
    # garbage a poll leaves: the same few rows on either store. 55 s of worker time.
    "tests/polling/test_poll_deadline.py",
    "tests/polling/test_poll_garbage.py",
    "tests/servers/test_test_connection_limits.py",
    "tests/alerts/test_test_alert_limits.py",
    "tests/accounts/test_request_limits.py",
    "tests/operations/test_headers.py",
    # A real worker and beat polling a server registered in the admin, on a real Redis:
    # the same processes on a PostgreSQL store are tests/operations/test_scale_out.py's
    # and test_store_faults.py's. A real Alertmanager and a real Prometheus read what the
    # API gives, the same on either store (as test_a_real_prometheus above).
    "tests/polling/test_celery_end_to_end.py",
    "tests/alerts/test_alertmanager.py",
    "tests/prometheus/test_scraped_by_prometheus.py",
    # The outbox's email through a real worker and SMTP server: one email per recipients,
    # a storm as one, an outage then delivery, beat's reminder digest. The claim protocol
    # under a worker killed at each step stays on PostgreSQL (test_a_worker_killed_at_
    # each_step_loses_nothing). 75 s of worker time, 14 s of CPU.
    "tests/alerts/test_delivery_worker.py::test_one_evaluation_is_one_email_per_set",
    "tests/alerts/test_delivery_worker.py::test_a_storm_of_500_tables",
    "tests/alerts/test_delivery_worker.py::test_an_smtp_outage_is_recorded",
    "tests/alerts/test_delivery_worker.py::test_beat_sends_one_reminder_digest",
)
"""Modules (or tests) whose subject is not the store, and whose run time would double on
it. tests/api/test_fuzz.py stays: PostgreSQL raises on an integer overflow SQLite stores."""


def uses_store(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(name) for name in NOT_STORE_FACING):
        return False
    if item.nodeid.startswith(SQLITE_ONLY):
        return False
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & DB_FIXTURES) or item.get_closest_marker("django_db") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On PostgreSQL, run the store-facing tests only; the rest ran in the SQLite pass."""
    if STORE != "postgres":
        return
    kept, deselected = [], []
    for item in items:
        (kept if uses_store(item) else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str:
    return f"metadata store: {STORE}" + (f" ({POSTGRES_URL})" if STORE == "postgres" else "")


def database_url(name: str) -> str:
    """DATABASE_URL for another process to reach the test database `name` (its NAME in
    settings once pytest-django has created it), on whichever store this run uses."""
    from django.conf import settings

    store = settings.DATABASES["default"]
    if store["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{name}"
    user = quote(store.get("USER") or "", safe="")
    password = quote(store.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else f"{user}@" if user else ""
    host, port = store.get("HOST") or "127.0.0.1", store.get("PORT") or 5432
    return f"postgres://{credentials}{host}:{port}/{quote(name, safe='')}"


ROOT = Path(__file__).resolve().parent.parent


def store_env(database_url: str, var_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of partdash processes (manage.py, Celery) on a store of a test's
    own, with partdash's own settings, not the test settings."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return env | {
        "DEBUG": "1",
        "PARTDASH_VAR_DIR": str(var_dir),
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # no broker unless given
        **settings,
    }


def manage(env: dict[str, str], *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    """`manage.py ARGS` in a process of its own."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Fleet:
    """Beat and named Celery workers (concurrency 2 each, as on hosts of their own), each
    in its own process with its own log, on the store and broker `env` names."""

    def __init__(self, env: dict[str, str], log_dir: Path, workers: tuple[str, ...] = ("w1",)):
        self.env, self.log_dir, self.workers = env, log_dir, workers
        self.processes: dict[str, subprocess.Popen] = {}

    def spawn(self, name: str, *args: str) -> None:
        log = open(self.log_dir / f"{name}.log", "wb")
        command = celery_command(*args)
        self.processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )

    def start(self) -> "Fleet":
        for name in self.workers:
            self.spawn(name, "worker", "--concurrency=2", "--pool=prefork", "-n", f"{name}@%h")
        self.spawn("beat", "beat", f"--schedule={self.log_dir / 'beat-schedule'}")
        return self

    def stop(self, *names: str, cold: bool = False) -> None:
        """SIGTERM: a worker's warm shutdown lets the polls it runs finish; `cold` (SIGQUIT)
        stops at once, for a test whose subject is not the shutdown."""
        how = signal.SIGQUIT if cold else signal.SIGTERM
        chosen = [self.processes[name] for name in names or list(self.processes)]
        stop_processes(chosen, how, grace=30)  # a warm shutdown waits for the polls under way

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def tails(self) -> str:
        return log_tail(*(self.log_dir / f"{name}.log" for name in self.processes))
