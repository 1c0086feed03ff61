"""Shared fixtures: private MariaDB servers, a private Redis wired into Celery and the poll
lock, real Celery worker and beat processes, and registered servers."""

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from tests.pgstore import DB_FIXTURES, database_url
from tests.servers.certificates import CertificateFiles, write_certificates
from tests.services import (
    MariaDB,
    MariaDBFactory,
    RedisServer,
    celery_command,
    log_tail,
    stop_processes,
)
from tests.sql import new_schema_on

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def mariadb_factory() -> Iterator[MariaDBFactory]:
    """Private MariaDB servers, one per distinct option set, shared by the session."""
    with MariaDBFactory() as factory:
        yield factory


@pytest.fixture(scope="session")
def mariadb(mariadb_factory: MariaDBFactory) -> MariaDB:
    """A private MariaDB with default options (performance_schema OFF, as shipped)."""
    return mariadb_factory.get()


@pytest.fixture(scope="session")
def mariadb_ps(mariadb_factory: MariaDBFactory) -> MariaDB:
    """A private MariaDB with performance_schema and per-index compression stats on."""
    return mariadb_factory.get({"performance_schema": "ON", "innodb_cmp_per_index_enabled": "ON"})


# A private MariaDB with TLS, for the tests of TLS and of certificate approval.


@pytest.fixture(scope="session")
def certificates(tmp_path_factory) -> CertificateFiles:
    return write_certificates(tmp_path_factory.mktemp("tls"), "server")


@pytest.fixture(scope="session")
def mariadb_tls(mariadb_factory: MariaDBFactory, certificates: CertificateFiles) -> MariaDB:
    """A private MariaDB presenting a certificate of the test CA for 127.0.0.1."""
    return mariadb_factory.get(
        {
            "ssl_cert": str(certificates.cert),
            "ssl_key": str(certificates.key),
            "ssl_ca": str(certificates.ca),
        }
    )


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


NO_BROKER = "redis://127.0.0.1:1/0"
"""Where Celery and the poll lock point in a test that asked for no broker: nothing
answers there, so a test that needs Redis without saying so fails at once, alone or in
any order, rather than passing only after a test that started one."""

BROKER_FIXTURES = DB_FIXTURES | {"redis_server", "private_broker"}
"""A test using one of these gets the session's private Redis: the store-facing tests
(Django's test database), whose code queues Celery tasks and takes poll locks, and the
tests that name Redis. The rest (the health rules on plain values, fake servers, the
docs) start no Redis: `pytest tests/health` starts none."""


def point_at_broker(url: str) -> None:
    """Celery and the poll lock (PARTDASH_REDIS_URL) at `url`, in this test process."""
    from partdash.celery import app

    settings.CELERY_BROKER_URL = url
    settings.PARTDASH_REDIS_URL = url
    app.conf.broker_url = url


@pytest.fixture(scope="session")
def private_broker(redis_server: RedisServer) -> Iterator[str]:
    """Celery and the poll lock on the private Redis, from the first test that uses it."""
    point_at_broker(redis_server.url)
    yield redis_server.url


def uses_the_broker(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & BROKER_FIXTURES) or item.get_closest_marker("django_db") is not None


@pytest.fixture(autouse=True)
def broker_where_used(request: pytest.FixtureRequest) -> Iterator[None]:
    """The private Redis for the tests that use it (`uses_the_broker`), started by the
    first of them; no broker at all for the others."""
    if not uses_the_broker(request.node):
        point_at_broker(NO_BROKER)
        yield
        return
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    point_at_broker(request.getfixturevalue("private_broker"))
    yield
    broker_outlives_the_test(redis_server)


@pytest.fixture(autouse=True)
def no_digest_remembered_from_another_test() -> Iterator[None]:
    """`statements.READ_NOTHING` remembers digests by table id, for the process's life:
    a test database rolled back hands the same ids to the next test's tables, which would
    then find another test's digests already judged (seen in CI when a file's tests ran
    in another order)."""
    from partdash.metrics import statements

    statements.READ_NOTHING.clear()
    yield
    statements.READ_NOTHING.clear()


def broker_outlives_the_test(redis_server: RedisServer) -> None:
    """The session's Redis still runs after each test: a test that lets it die (or a
    process that kills it) is named here, with Redis's own last words, instead of the
    tests after it failing one by one for a broker that is gone."""
    if not redis_server.is_running:
        code = redis_server._proc.returncode if redis_server._proc else None
        tail = log_tail(redis_server.log_file, redis_server.output_log)
        redis_server.restart()  # the tests after this one get a broker again
        pytest.fail(f"the session's Redis died during this test (exit status {code}):\n{tail}")


@pytest.fixture
def queue(redis_server):
    """The broker's `celery` list, emptied before and after (so no later worker runs these)."""
    client = redis_server.client()
    client.delete("celery")
    yield client
    client.delete("celery")


def reset_broker_pools(app) -> None:
    """Fresh broker connections for this test process: after the broker moved or restarted,
    kombu's pools (kept per broker URL, process-wide) hold dead or closed connections that
    a later test in the same pytest-xdist worker would be handed ("Acquire on closed
    pool")."""
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def new_schema():
    """`new_schema(instance)` creates a uniquely named schema, dropped after the test."""
    made = []

    def make(instance: MariaDB) -> str:
        name = new_schema_on(instance)
        made.append((instance, name))
        return name

    yield make
    for instance, name in made:
        if instance.is_running:
            instance.execute(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def make_server(db) -> Callable[..., "object"]:
    """Register a monitored server pointing at a private MariaDB."""
    from partdash.servers.models import Server

    def make(instance: MariaDB, name: str = "db1", password: str = "", **fields):
        server = Server(name=name, host=instance.host, port=instance.port, user="root", **fields)
        server.set_password(password)
        server.save()
        forget_poll_memory(server.pk)
        return server

    return make


def forget_poll_memory(server_pk: int) -> None:
    """No poll memory of an earlier test's server with the same id: a rolled-back test
    database hands out the same server and poll ids again, at the same MariaDB's address,
    so the shared memory in the worker's Redis would pass for this server's (a full run
    saw a grant hint missing after a poll that read another test's memory). partdash's
    stores never reuse ids."""
    import redis

    from partdash.polling import pollmemory, service

    service.MEMORIES.forget(server_pk)
    try:
        client = pollmemory._client()
        header = pollmemory.header_key(server_pk)
        keys = [header, *client.scan_iter(f"{header}:*")]
        client.delete(*keys)
    except redis.RedisError:  # no Redis answers in this test: nothing shared to forget
        pass


class CeleryProcesses:
    """A real Celery worker and beat, in their own processes, on the private Redis and the
    file-backed test database."""

    def __init__(self, broker_url: str, database: str, log_dir: Path):
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DEBUG": "1",
            "DATABASE_URL": database_url(database),  # SQLite or PostgreSQL (tests/pgstore.py)
            "CELERY_BROKER_URL": broker_url,
            "PARTDASH_REDIS_URL": broker_url,
            "PARTDASH_DISPATCH_SECONDS": "1",
            # Celery runs Django's system checks as each worker and beat starts: loading
            # every URL and view, 0.5 s of CPU a pair, about 60 pairs a run. The checks
            # have tests of their own (tests/operations/test_settings.py), and `make up`
            # (tests/operations/test_make_up.py) starts its processes as a user's do.
            "CELERY_SKIP_CHECKS": "1",
        }
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen] = []

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.log_dir / f"{name}.log", "wb")
        command = celery_command(*args)
        self.processes.append(
            subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        )

    def start(self) -> "CeleryProcesses":
        self._spawn("worker", "worker", "--concurrency=2", "--pool=prefork", "-n", "test@%h")
        self._spawn("beat", "beat", f"--schedule={self.log_dir / 'beat-schedule'}")
        return self

    def logs(self) -> str:
        return "\n".join(log_tail(self.log_dir / f"{n}.log") for n in ("worker", "beat"))

    def stop(self) -> None:
        """A cold shutdown (SIGQUIT): no test here is about a warm one, which waits for the
        tasks under way and took 2-4.7 s of each test (tests/operations/test_scale_out.py
        tests the warm shutdown)."""
        stop_processes(self.processes, signal.SIGQUIT)


@pytest.fixture
def celery_processes(transactional_db, redis_server: RedisServer, tmp_path: Path):
    """Worker and beat against the test database; the test must use committed data."""
    database = settings.DATABASES["default"]["NAME"]
    processes = CeleryProcesses(redis_server.url, database, tmp_path).start()
    yield processes
    processes.stop()


@pytest.fixture(scope="module")
def module_celery_processes(django_db_setup, redis_server: RedisServer, tmp_path_factory):
    """Worker and beat shared by a module's tests, for a module whose tests need no
    worker of their own (no options, no kill, no reading the whole log): a module opts
    in by naming this its `celery_processes` (`shared_celery_processes`). Starting a
    pair took 1.8 s of CPU and about 7 s to be ready on a loaded machine. Each test's
    rows are flushed after it (transactional_db) and ids are never reused, so what a
    test left queued finds no server and does nothing."""
    database = settings.DATABASES["default"]["NAME"]
    processes = CeleryProcesses(redis_server.url, database, tmp_path_factory.mktemp("celery"))
    yield processes.start()
    processes.stop()


@pytest.fixture
def shared_celery_processes(transactional_db, module_celery_processes):
    """The module's worker and beat (`module_celery_processes`) for a test that must use
    committed data."""
    yield module_celery_processes
    yield_the_store_to_the_flush()


def yield_the_store_to_the_flush() -> None:
    """Before transactional_db's flush, while a worker shared by the module's tests may
    still run a task of the test that ended: on PostgreSQL, end the other sessions on the
    test database and let this session's TRUNCATE outwait any deadlock, so PostgreSQL
    ends the worker's transaction, never the flush (a flush ended by a deadlock was seen,
    a test erring at teardown). Nothing to do on SQLite, which locks the whole file."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        cursor.execute("SET deadlock_timeout = '30s'")  # the worker's (1 s) detects first


def wait_until(predicate: Callable[[], object], timeout: float, what: str, logs=None):
    """Poll `predicate` until it is truthy; fail with `what` (and logs) on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    detail = f"\n{logs()}" if logs else ""
    pytest.fail(f"timed out after {timeout}s waiting for {what}{detail}")


# --- the browser (Debian's Chromium through Playwright), one per session ----------------

CHROMIUM = "/usr/bin/chromium"
PAGE_READY_MS = 60_000
"""How long a page may take to fetch its figures and draw: a wait for a condition, so a
generous bound costs a passing test nothing; on a machine running both passes of
`make test` at once, 15 s was seen to run out."""
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser():
    """One Chromium for the session: Playwright's sync API allows one instance per thread."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's ORM calls are
    # still plain synchronous code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


FRONTEND = ROOT / "frontend"


def frontend_is_stale() -> bool:
    """Is a bundle in frontend/dist/ missing, or older than a source it is built from?"""
    bundles = list((FRONTEND / "dist").rglob("*.js"))
    sources = [*(FRONTEND / "src").rglob("*"), FRONTEND / "build.mjs"]
    if not bundles:
        return True
    return max(p.stat().st_mtime for p in sources) > min(p.stat().st_mtime for p in bundles)


@pytest.fixture(scope="session")
def built_frontend() -> None:
    """The pages load their bundles from frontend/dist/, which `make test` builds before
    any test starts. pytest run alone builds them here when a source is newer: once, under
    a lock, since pytest-xdist's workers would otherwise rewrite the bundles while another
    worker's browser loads them."""
    lock_path = ROOT / "var" / "frontend-build.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if frontend_is_stale():
            subprocess.run(["node", "build.mjs"], cwd=FRONTEND, check=True, capture_output=True)
            for bundle in (FRONTEND / "dist").rglob("*.js"):
                bundle.touch()  # esbuild leaves an unchanged bundle's file as it was


@pytest.fixture
def page(browser, built_frontend):
    context = browser.new_context()
    context.set_default_timeout(PAGE_READY_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.console_errors = errors
    yield page
    context.close()


def log_in(page, live_server, username="admin", password="password"):
    """Logged in as `username` with `password`: Django's test client logs in (the same
    authentication backends and session store as the login page) and the browser takes its
    session cookie. Going through the login page and the fleet page it leads to cost each
    browser test a second of CPU; `log_in_through_the_page` does, where that is the way."""
    from django.test import Client

    client = Client()
    assert client.login(username=username, password=password), f"{username} cannot log in"
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live_server.url}])


def log_in_through_the_page(page, live_server, username="admin", password="password"):
    """Log in through partdash's own login page; lands on the fleet page."""
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("#login-submit")
    page.wait_for_url(f"{live_server.url}/")


# --- users of each role (README, "Access") and API clients for them -------------------


def user_in(django_user_model, username: str, role: str | None, **fields):
    """A user with password USERNAME-pw, in the group `role` (a migration made them)."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username, password=f"{username}-pw", **fields)
    if role:
        if not Group.objects.filter(name=role).exists():
            recreate_roles()  # a transactional test before this one flushed them
        user.groups.add(Group.objects.get(name=role))
    return user


def recreate_roles() -> None:
    """The roles' groups and permissions, as the migrations make them, after a
    transactional test flushed them. The first time in a process the migrations' own
    functions run; after that, what they made is restored from `ROLES` in a query and two
    statements a group. Every test that needs a role after a flush in its worker runs
    this in its own rolled-back transaction: the migrations' functions took 0.08 s
    (SQLite) and 0.12 s (PostgreSQL) a time, the restore 0.006-0.008 s, and py-spy on a
    whole run found them the costliest code under the access matrix's 405 tests."""
    from django.contrib.auth.models import Group, Permission

    from partdash.accounts import sign_on

    if not ROLES:
        from_the_migrations()
        made = Group.objects.filter(name__in=sign_on.ROLES)
        for group in made.prefetch_related("permissions__content_type"):
            ROLES[group.name] = [
                (p.content_type.app_label, p.codename) for p in group.permissions.all()
            ]
        return
    permissions = {
        (app_label, codename): pk
        for pk, app_label, codename in Permission.objects.values_list(
            "pk", "content_type__app_label", "codename"
        )
    }
    for name, keys in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set([permissions[key] for key in keys])


ROLES: dict[str, list[tuple[str, str]]] = {}
"""Each role's permissions (app label, codename), as the migrations made them."""


def from_the_migrations() -> None:
    import importlib

    from django.apps import apps

    # Every migration that grants a role its permissions, in order.
    importlib.import_module("partdash.accounts.migrations.0002_roles").create_roles(apps, None)
    importlib.import_module("partdash.accounts.migrations.0005_channel_roles").grant(apps, None)
    importlib.import_module("partdash.accounts.migrations.0006_group_and_retention_roles").grant(
        apps, None
    )
    importlib.import_module("partdash.accounts.migrations.0007_audit_entry").grant(apps, None)


def migrate_to_latest() -> None:
    """After a test that migrated an app back: every migration applied again, so the
    tables a later migration makes (the audit trail's) are there for the next test."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def token_client(user) -> APIClient:
    """An API client sending a new token of `user` (`Authorization: Token KEY`)."""
    from partdash.accounts.models import ApiToken

    _, key = ApiToken.issue(user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def staff(django_user_model):
    """An administrator: staff, in the `admins` group."""
    return user_in(django_user_model, "staff", "admins", is_staff=True)


@pytest.fixture
def operator(django_user_model):
    return user_in(django_user_model, "operator", "operators")


@pytest.fixture
def viewer(django_user_model):
    """A logged-in user in no group: reads, as the `viewers` group does."""
    return user_in(django_user_model, "viewer", None)


@pytest.fixture
def staff_api(staff) -> APIClient:
    return token_client(staff)


@pytest.fixture
def viewer_api(viewer) -> APIClient:
    return token_client(viewer)
