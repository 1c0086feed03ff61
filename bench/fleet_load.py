"""The fleet benchmark (issue #13, "Fleet load and scale-out"): partdash's real processes
polling a fleet of private servers on loopback, with readers on the API and pages.

Starts what `make up` runs (scripts/supervise.py): Redis, gunicorn (2 workers x 4
threads), Celery beat and a Celery worker with concurrency 4 (or two, `--workers 2`, named
w1@%h and w2@%h as on two hosts), on a metadata store of its own: SQLite, or a fresh
database on a PostgreSQL server (`--store postgres URL`). The fleet: `--servers` private
MariaDBs (`--big` of them with 2,000-4,000 HASH or RANGE partitions, the rest small), two
black holes (accept TCP, never answer) and one MariaDB stopped and resumed every
`--flap-seconds`; every server polled every `--interval` seconds for `--minutes`.

Measured:
- per server, the polls done and their lateness: poll k's start - (poll k-1's start +
  interval), a poll's start being when its worker child began the task (recorded by
  bench/poll_probe.py, which the worker loads; failed polls store no snapshot, so the
  snapshots could not give a failing server's history); the healthy servers' p95 against
  the target of 5 s;
- the worker's memory: RSS of each worker's main process and its children, every 10 s;
  first (after a warm-up of two intervals), max, last; flat when last <= 1.2 x first;
- polls per worker, polls of one server that overlapped (target 0), snapshots stored
  twice for one poll slot (target 0);
- `--clients` concurrent readers for `--reader-seconds` during polling, on the API (token)
  and pages (session): per endpoint p50/p95, errors and 5xx (target: no 5xx).

Prints a table and writes every figure to `--json` (var/bench/fleet-load.json).
Usage: fleet_load.py [--minutes 10] [--workers 1|2] [--store sqlite | --store postgres URL]
"""

import argparse
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH)]

from api_bench import issue_credentials, production_env, readers  # noqa: E402
from fleet_faults import BIG, SMALL, BlackHole, Flapper, populate, start_mariadb  # noqa: E402
from fleet_figures import memory_figures, percentile, polls_from, server_figures  # noqa: E402
from fleet_processes import MemorySampler, Processes  # noqa: E402
from fleet_report import LATENESS_TARGET, print_report  # noqa: E402

from tests.services import RedisServer, free_port, wait_for  # noqa: E402

SETUP_OPTIONS = ("interval", "minutes", "workers", "concurrency", "flap_seconds", "clients")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--servers", type=int, default=12, help="healthy MariaDBs")
    parser.add_argument("--big", type=int, default=3, help="of them with 2,000-4,000 partitions")
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1)
    parser.add_argument("--concurrency", type=int, default=4, help="per worker")
    parser.add_argument(
        "--store",
        nargs="+",
        default=["sqlite"],
        metavar="KIND [URL]",
        help="sqlite, or postgres URL",
    )
    parser.add_argument("--interval", type=int, default=30, help="poll interval, seconds")
    parser.add_argument("--flap-seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--reader-seconds", type=float, default=120.0)
    parser.add_argument("--json", type=Path, default=ROOT / "var" / "bench" / "fleet-load.json")
    options = parser.parse_args(argv)
    kind = options.store[0]
    if kind not in ("sqlite", "postgres") or (kind == "postgres") != (len(options.store) == 2):
        parser.error("--store is `sqlite` or `postgres URL`")
    return options


# --- the metadata store ------------------------------------------------------------------


@contextlib.contextmanager
def postgres_database(url: str, keep: bool = False):
    """A fresh database on the PostgreSQL server at `url`, dropped afterwards unless
    `keep` (to read the store the run left): yields its URL."""
    import psycopg

    name = f"partdash_fleet_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    database = urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    try:
        yield database
    finally:
        if keep:
            print(f"  the store is kept: DATABASE_URL={database}", flush=True)
        else:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def prepare_django(env: dict) -> None:
    """Set up Django in this process on the run's store: migrated, static files collected."""
    os.environ.update(env)
    if "DATABASE_URL" not in env:
        os.environ.pop("DATABASE_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    logging.getLogger("axes").setLevel(logging.WARNING)  # the readers' session log-in
    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)  # DEBUG=0 serves the manifest


def register(name: str, port: int, interval: int) -> int:
    """One monitored server as `manage.py addserver` saves it (root, no password)."""
    from partdash.servers.models import Server

    server = Server(name=name, host="127.0.0.1", port=port, user="root", poll_interval=interval)
    server.set_password("")
    server.save()
    return server.pk


# --- the fleet ---------------------------------------------------------------------------


class Fleet:
    """The monitored servers, by name: (kind, port, planned partitions)."""

    def __init__(self, stack: contextlib.ExitStack, options: argparse.Namespace) -> None:
        self.stack = stack
        self.options = options
        self.members: dict[str, dict] = {}
        self.flapper: Flapper | None = None

    def build(self) -> "Fleet":
        shapes = [BIG[n % len(BIG)] for n in range(self.options.big)]
        shapes += [SMALL[n % len(SMALL)] for n in range(self.options.servers - self.options.big)]
        started = [(f"db{n + 1:02d}", shape, self._mariadb()) for n, shape in enumerate(shapes)]
        flapping = self._mariadb()
        started.append(("flapping", SMALL[0], flapping))
        print(f"  {len(started)} MariaDBs up; creating their partitioned tables", flush=True)
        began = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda made: populate(made[2], made[1]), started))
        print(f"  tables created in {time.monotonic() - began:.0f} s", flush=True)
        for name, shape, server in started:
            kind = "flapping" if server is flapping else "big" if shape in BIG else "small"
            self.members[name] = {"kind": kind, "port": server.port, "planned": shape.total}
        for number in (1, 2):
            hole = BlackHole()
            self.stack.callback(hole.close)
            self.members[f"blackhole{number}"] = {"kind": "black hole", "port": hole.port}
        self.flapper = Flapper(flapping, self.options.flap_seconds)
        return self

    def _mariadb(self):
        server = start_mariadb()
        self.stack.callback(server.stop)
        return server

    def start_flapping(self) -> None:
        self.stack.callback(self.flapper.stop)  # before the servers stop (LIFO)
        self.flapper.start()


# --- readers -------------------------------------------------------------------------------


def reader_endpoints(token: str, session: str) -> dict:
    """The API (token) and pages (session) a reader asks for, on the server with the most
    partitions stored so far and its first table."""
    from partdash.metrics.models import PartitionedTable
    from partdash.servers.models import Server

    server = Server.objects.exclude(partitions=None).order_by("-partitions").first()
    table = PartitionedTable.objects.filter(server=server, dropped_at=None).order_by("name").first()
    api = {"Authorization": f"Token {token}"}
    page = {"Cookie": f"sessionid={session}"}
    return {
        "GET /api/v1/servers/": ("/api/v1/servers/", api),
        "GET /api/v1/servers/{id}/tables/": (f"/api/v1/servers/{server.pk}/tables/", api),
        "GET /api/v1/tables/{id}/partitions/": (f"/api/v1/tables/{table.pk}/partitions/", api),
        "GET /api/v1/tables/{id}/history/?metric=rows": (
            f"/api/v1/tables/{table.pk}/history/?metric=rows",
            api,
        ),
        "GET /api/v1/alerts/": ("/api/v1/alerts/", api),
        "GET /metrics": ("/metrics", api),
        "page: GET / (fleet)": ("/", page),
        "page: GET /servers/{id}/": (f"/servers/{server.pk}/", page),
        "page: GET /tables/{id}/": (f"/tables/{table.pk}/", page),
    }


def wait_for_tables(timeout: float) -> bool:
    """Until a poll has stored some partitioned table (the readers need one to ask for)."""
    from partdash.metrics.models import PartitionedTable

    return wait_for(lambda: PartitionedTable.objects.exists(), timeout=timeout, interval=1)


# --- figures -------------------------------------------------------------------------------


def read_polls(path: Path) -> list:
    if not path.exists():
        return []
    return polls_from(json.loads(line) for line in path.read_text().splitlines() if line)


def snapshot_figures(ids: dict[str, int], polls: list, interval: int) -> dict:
    """Snapshots per server, and two kinds of duplicate: snapshots of one server closer
    than half an interval apart, and snapshots no successful logged poll accounts for."""
    from partdash.metrics.models import ServerSnapshot

    succeeded = {poll.task_id for poll in polls if poll.succeeded}
    rows = ServerSnapshot.objects.filter(server_id__in=ids.values()).order_by("taken_at")
    by_server: dict[int, list] = {}
    unaccounted = 0
    for server_id, taken_at, poll_id in rows.values_list("server_id", "taken_at", "poll_id"):
        by_server.setdefault(server_id, []).append(taken_at.timestamp())
        unaccounted += poll_id not in succeeded
    close = sum(
        1
        for times in by_server.values()
        for earlier, later in itertools.pairwise(times)
        if later - earlier < interval / 2
    )
    return {
        "stored": sum(len(times) for times in by_server.values()),
        "successful_polls": len(succeeded),
        "closer_than_half_an_interval": close,
        "not_from_a_logged_poll": unaccounted,
        "per_server": {name: len(by_server.get(pk, [])) for name, pk in ids.items()},
    }


def fleet_figures(fleet: Fleet, ids: dict[str, int], polls: list, options) -> dict:
    from partdash.servers.models import Server

    partitions = dict(Server.objects.values_list("name", "partitions"))
    servers = {}
    for name, member in fleet.members.items():
        mine = [poll for poll in polls if poll.server_id == ids[name]]
        figures = server_figures(mine, options.interval)
        servers[name] = {**member, "partitions": partitions.get(name), **figures}
    healthy = [
        sample
        for figures in servers.values()
        if figures["kind"] in ("big", "small")
        for sample in figures["lateness_samples"]
    ]
    p95 = percentile(healthy, 0.95)
    by_worker: dict[str, int] = {}
    for figures in servers.values():
        for worker, count in figures["by_worker"].items():
            by_worker[worker] = by_worker.get(worker, 0) + count
    return {
        "servers": servers,
        "healthy_lateness_p95": None if p95 is None else round(p95, 3),
        "healthy_lateness_samples": len(healthy),
        "healthy_pass": p95 is not None and p95 < LATENESS_TARGET,
        "polls_by_worker": by_worker,
        "overlaps": sum(figures["overlaps"] for figures in servers.values()),
        "skipped_lock_held": sum(figures["skipped_lock_held"] for figures in servers.values()),
    }


# --- the run -------------------------------------------------------------------------------


def run_readers(base: str, options, deadline: float) -> dict:
    """The load generator, once a table is stored, for --reader-seconds (within the run)."""
    if not wait_for_tables(timeout=max(1.0, deadline - time.monotonic() - 10)):
        return {"error": "no table was stored in time"}
    token, session = issue_credentials()
    duration = min(options.reader_seconds, max(5.0, deadline - time.monotonic() - 5))
    endpoints = reader_endpoints(token, session)
    return {
        "clients": options.clients,
        "seconds": round(duration),
        "endpoints": readers(base, endpoints, options.clients, duration),
    }


def interrupt_on_term() -> None:
    """A TERM (make, a CI timeout) unwinds like Ctrl-C, so every process is stopped."""

    def interrupt(number, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def store_env(options, stack: contextlib.ExitStack, run_dir: Path, broker: str) -> tuple:
    """The environment every process of the run shares, and the store's name."""
    env = production_env(run_dir) | {
        "CELERY_BROKER_URL": broker,
        "PARTDASH_REDIS_URL": broker,
        "PARTDASH_BENCH_POLL_LOG": str(run_dir / "polls.jsonl"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH)]),
    }
    env.pop("DATABASE_URL", None)  # SQLite in the run directory
    if options.store[0] == "sqlite":
        return env, "SQLite"
    keep = getattr(options, "keep_store", False)
    env["DATABASE_URL"] = stack.enter_context(postgres_database(options.store[1], keep))
    return env, "PostgreSQL"


def poll_with_readers(options, processes: Processes, port: int) -> dict:
    """Let the fleet be polled for --minutes, the readers joining after a first round."""
    deadline = time.monotonic() + options.minutes * 60
    processes.sleep_until(time.monotonic() + min(options.minutes * 60 / 3, 60.0))
    figures = run_readers(f"http://127.0.0.1:{port}", options, deadline)
    processes.sleep_until(deadline)
    return figures


def start_partdash(
    options, stack: contextlib.ExitStack, run_dir: Path, env: dict
) -> tuple[Processes, int]:
    """Django in this process on the run's store; web, beat and the workers started
    (stopped with `stack`), the workers ready: the processes and the web's port."""
    prepare_django(env)
    port = free_port()
    processes = Processes(run_dir, options, port)
    stack.callback(processes.stop)
    processes.start()
    processes.wait_until_ready()
    return processes, port


def run(options: argparse.Namespace, stack: contextlib.ExitStack) -> dict:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = options.json.parent / f"fleet-{stamp}"
    run_dir.mkdir(parents=True)
    # collectstatic's copy is the only bulky file; the store and the logs are kept.
    stack.callback(shutil.rmtree, run_dir / "static", ignore_errors=True)
    print(f"fleet load: files in {run_dir}", flush=True)
    redis = RedisServer().start()
    stack.callback(redis.stop)
    env, store = store_env(options, stack, run_dir, redis.url)
    print("  starting the fleet", flush=True)
    fleet = Fleet(stack, options).build()
    processes, port = start_partdash(options, stack, run_dir, env)
    memory = MemorySampler(processes.workers(), time.time())
    ids = {
        name: register(name, member["port"], options.interval)
        for name, member in fleet.members.items()
    }
    stack.callback(memory.start().stop)
    fleet.start_flapping()
    workers = f"{options.workers} worker(s)"
    print(f"  web, beat and {workers} started; polling for {options.minutes:g} min", flush=True)
    reader_figures = poll_with_readers(options, processes, port)
    memory.stop()
    processes.stop()
    polls = read_polls(run_dir / "polls.jsonl")
    from django.conf import settings

    setup = {"servers": len(fleet.members), "store": store, "run_dir": str(run_dir)}
    setup |= {name: getattr(options, name) for name in SETUP_OPTIONS}
    setup |= {
        "lateness": "poll start = task_prerun in the worker child (bench/poll_probe.py)",
        "dispatch_seconds": settings.PARTDASH_DISPATCH_SECONDS,
    }
    return {
        "setup": setup,
        "fleet": fleet_figures(fleet, ids, polls, options),
        "memory": memory_figures(memory.samples, warm_up=2.0 * options.interval),
        "snapshots": snapshot_figures(ids, polls, options.interval),
        "readers": reader_figures,
        "flapper_transitions": fleet.flapper.transitions,
    }


def run_and_report(name: str, options, run, print_report) -> int:
    """`run(options, stack)` with every process it starts stopped, however it ends; its
    figures printed (`print_report` says whether the targets were met) and written to
    `options.json`: the exit status."""
    interrupt_on_term()
    try:
        with contextlib.ExitStack() as stack:
            result = run(options, stack)
    except KeyboardInterrupt:
        print(f"{name}: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
    ok = print_report(result)
    options.json.write_text(json.dumps(result, indent=1, default=str))
    print(f"  figures written to {options.json}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    return run_and_report("fleet load", parse_args(argv), run, print_report)


if __name__ == "__main__":
    sys.exit(main())
