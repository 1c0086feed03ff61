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
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
BIN = Path(sys.executable).parent
sys.path[:0] = [str(ROOT), str(BENCH)]

import psutil  # noqa: E402
from api_bench import issue_credentials, production_env, readers  # noqa: E402
from fleet_faults import BIG, SMALL, BlackHole, Flapper, populate, start_mariadb  # noqa: E402
from fleet_figures import memory_figures, percentile, polls_from, server_figures  # noqa: E402

from tests.services import RedisServer, free_port, log_tail, spawn, wait_for  # noqa: E402

LATENESS_TARGET = 5.0  # seconds, healthy servers' p95
MEMORY_EVERY = 10.0  # seconds between worker RSS samples
STOP_GRACE = 15.0  # seconds a process may take to stop after its TERM


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
def postgres_database(url: str):
    """A fresh database on the PostgreSQL server at `url`, dropped afterwards: yields its URL."""
    import psycopg

    name = f"partdash_fleet_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
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


# --- partdash's processes ------------------------------------------------------------------


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
    }


# --- the report ----------------------------------------------------------------------------


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_report(result: dict) -> bool:
    setup, fleet, memory = result["setup"], result["fleet"], result["memory"]
    print(
        f"\nfleet load: {setup['servers']} servers polled every {setup['interval']} s for "
        f"{setup['minutes']:g} min; {setup['store']} store; {setup['workers']} worker(s) x "
        f"{setup['concurrency']}"
    )
    print(
        f"  {'server':<11} {'kind':<10} {'partitions':>10} {'polls':>5} {'failed':>6} "
        f"{'late p50':>8} {'p95':>7} {'max':>7} {'took max':>8}  by worker"
    )
    for name, figures in fleet["servers"].items():
        late = figures["lateness"]
        workers = ", ".join(
            f"{w.split('@')[0]} {n}" for w, n in sorted(figures["by_worker"].items())
        )
        print(
            f"  {name:<11} {figures['kind']:<10} {figures['partitions'] or '-':>10} "
            f"{figures['polls']:>5} {figures['failed']:>6} {seconds(late['p50']):>8} "
            f"{seconds(late['p95']):>7} {seconds(late['max']):>7} "
            f"{seconds(figures['duration']['max']):>8}  {workers}"
        )
    print(
        f"  healthy servers' lateness p95 ({fleet['healthy_lateness_samples']} polls): "
        f"{seconds(fleet['healthy_lateness_p95'])} s "
        f"[target < {LATENESS_TARGET:g} s: {verdict(fleet['healthy_pass'])}] (beat "
        f"dispatches due polls every {setup['dispatch_seconds']:g} s)"
    )
    print(
        f"  worker memory (RSS, main + children, every {MEMORY_EVERY:g} s): first after "
        f"{memory.get('warm_up_s', 0):g} s {memory.get('first_mb', 0):.0f} MB, max "
        f"{memory.get('max_mb', 0):.0f} MB, last {memory.get('last_mb', 0):.0f} MB "
        f"[flat, last <= 1.2 x first: {verdict(memory.get('flat', False))}]"
    )
    snapshots = result["snapshots"]
    duplicated = snapshots["closer_than_half_an_interval"] + snapshots["not_from_a_logged_poll"]
    shared = ", ".join(
        f"{worker} {count}" for worker, count in sorted(fleet["polls_by_worker"].items())
    )
    print(
        f"  polls per worker: {shared}; polls of one server overlapping: {fleet['overlaps']} "
        f"[target 0: {verdict(fleet['overlaps'] == 0)}]; snapshots {snapshots['stored']} for "
        f"{snapshots['successful_polls']} successful polls, duplicated {duplicated} "
        f"[target 0: {verdict(duplicated == 0)}]"
    )
    readers_ok = print_readers(result["readers"])
    return (
        fleet["healthy_pass"]
        and memory.get("flat", False)
        and fleet["overlaps"] == 0
        and duplicated == 0
        and readers_ok
    )


def print_readers(figures: dict) -> bool:
    if "error" in figures:
        print(f"  readers: not run: {figures['error']}")
        return False
    print(f"  readers: {figures['clients']} clients for {figures['seconds']:g} s during polling")
    print(
        f"    {'endpoint':<46} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6} {'5xx':>4}"
    )
    server_errors = 0
    for label, row in figures["endpoints"].items():
        server_errors += row["5xx"]
        print(
            f"    {label:<46} {row['requests']:>8} {row.get('median_ms', 0):>8.1f} "
            f"{row.get('p95_ms', 0):>8.1f} {row['errors']:>6} {row['5xx']:>4}"
        )
    print(f"    5xx in all: {server_errors} [target 0: {verdict(server_errors == 0)}]")
    return server_errors == 0


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


def run(options: argparse.Namespace, stack: contextlib.ExitStack) -> dict:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = options.json.parent / f"fleet-{stamp}"
    run_dir.mkdir(parents=True)
    print(f"fleet load: files in {run_dir}", flush=True)
    redis = RedisServer().start()
    stack.callback(redis.stop)
    env = production_env(run_dir) | {
        "CELERY_BROKER_URL": redis.url,
        "PARTDASH_REDIS_URL": redis.url,
        "PARTDASH_BENCH_POLL_LOG": str(run_dir / "polls.jsonl"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH)]),
    }
    env.pop("DATABASE_URL", None)
    store = "SQLite"
    if options.store[0] == "postgres":
        env["DATABASE_URL"] = stack.enter_context(postgres_database(options.store[1]))
        store = "PostgreSQL"
    print("  starting the fleet", flush=True)
    fleet = Fleet(stack, options).build()
    prepare_django(env)
    port = free_port()
    processes = Processes(run_dir, options, port)
    stack.callback(processes.stop)
    processes.start()
    processes.wait_until_ready()
    began = time.time()
    ids = {
        name: register(name, member["port"], options.interval)
        for name, member in fleet.members.items()
    }
    memory = MemorySampler(processes.workers(), began).start()
    stack.callback(memory.stop)
    fleet.start_flapping()
    deadline = time.monotonic() + options.minutes * 60
    print(
        f"  web, beat and {options.workers} worker(s) started; polling for {options.minutes:g} min",
        flush=True,
    )
    processes.sleep_until(time.monotonic() + min(options.minutes * 60 / 3, 60.0))
    reader_figures = run_readers(f"http://127.0.0.1:{port}", options, deadline)
    processes.sleep_until(deadline)
    memory.stop()
    processes.stop()
    polls = read_polls(run_dir / "polls.jsonl")
    from django.conf import settings

    return {
        "setup": {
            "servers": len(fleet.members),
            "interval": options.interval,
            "minutes": options.minutes,
            "store": store,
            "workers": options.workers,
            "concurrency": options.concurrency,
            "flap_seconds": options.flap_seconds,
            "run_dir": str(run_dir),
            "lateness": "poll start = task_prerun in the worker child (bench/poll_probe.py)",
            "dispatch_seconds": settings.PARTDASH_DISPATCH_SECONDS,
        },
        "fleet": fleet_figures(fleet, ids, polls, options),
        "memory": memory_figures(memory.samples, warm_up=2.0 * options.interval),
        "snapshots": snapshot_figures(ids, polls, options.interval),
        "readers": reader_figures,
        "flapper_transitions": fleet.flapper.transitions,
    }


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    interrupt_on_term()
    try:
        with contextlib.ExitStack() as stack:
            result = run(options, stack)
    except KeyboardInterrupt:
        print("fleet load: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
    ok = print_report(result)
    options.json.write_text(json.dumps(result, indent=1, default=str))
    print(f"  figures written to {options.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
