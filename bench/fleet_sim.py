"""`make bench ARGS=--simulated-fleet` (issue 41): a thousand simulated servers polled by
partdash's real processes.

The fleet is bench/fake_fleet.py: wire-level fake MariaDB servers in one process of
their own, serving generated catalogues of 10 to 20,000 partitions each (about
2,630,000 at 1,000 servers), a share of them written every minute, a few slow, a few
down and one restarting. partdash runs as `make up` runs it, on two hosts' worth of
processes: Celery beat, two workers named w1@%h and w2@%h (concurrency 4 each), gunicorn,
Redis, and a fresh database on PostgreSQL as the store; every server polled at the
production interval (PARTDASH_DEFAULT_POLL_INTERVAL, 60 s) for `--minutes`.

Two cores cannot poll 2,600,000 partitions a minute beside the fake fleet, so
`--scale F` runs F x 1,000 servers (sizes spread the same way, 10 to 20,000
partitions), or `--interval S` polls every server (and writes its share) every S
seconds rather than 60: every server and partition, the work per minute scaled by
60 / S; the output and the JSON say the scale, the interval and the minutes.

Writes var/bench/fleet-sim.json and prints each figure with its target:
- poll lateness p95 per server (poll k's start - the time it was due, as poll k-1's
  claim set it, bench/poll_probe.py's record; and poll k's start - poll k-1's start -
  interval, which counts a move to the server's offset too): the median and the worst
  of the healthy servers' p95, over the run and after the first round (the target's);
- worker CPU seconds per million partition-polls (both workers' process trees, from
  the first poll to the end, and from the first round's end; a partition-poll is one
  partition of one successful poll);
- store bytes per day per million partitions (PostgreSQL's database size, its growth
  from the end of the first round to the end, per day, over the partitions polled);
- the poll memory's total in Redis (MEMORY USAGE of every partdash:memory key);
- p95 of the fleet page, the server list, /api/v1/findings/ and /metrics, 8 clients;
- /metrics series at its defaults beside mysqld_exporter's per-file collector's for the
  same fleet (4 series a partition);
- the largest worker child's peak memory.

Usage: fleet_sim.py [--minutes 30] [--scale 1.0] [--interval 60] [--postgres URL]
                    [--keep-store]
"""

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH)]

from api_bench import issue_credentials, timed_get  # noqa: E402
from fleet_figures import percentile, server_figures  # noqa: E402
from fleet_load import read_polls, run_and_report, start_partdash, store_env  # noqa: E402
from fleet_pages_bench import FLEET_PAGE_READS, fleet_page, p95_of  # noqa: E402

from tests.services import RedisServer, wait_for  # noqa: E402

FULL_FLEET = 1000
PRODUCTION = 60  # PARTDASH_DEFAULT_POLL_INTERVAL's default, seconds
TARGETS = {
    "lateness_p95_worst_s": 5.0,
    "page_p95_ms": 1000.0,
    "metrics_p95_ms": 500.0,
    "worker_child_peak_mb": 300.0,
}
READS = 24  # requests per page figure, 8 at a time


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--scale", type=float, default=1.0, help="share of the 1,000 servers")
    parser.add_argument(
        "--interval", type=int, default=PRODUCTION, help="seconds between a server's polls"
    )
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--changing", type=float, default=0.02, help="share written a minute")
    parser.add_argument(
        "--keep-store", action="store_true", help="leave the store's database for reading after"
    )
    parser.add_argument("--json", type=Path, default=ROOT / "var" / "bench" / "fleet-sim.json")
    options = parser.parse_args(argv)
    options.servers = max(3, round(FULL_FLEET * options.scale))
    # What fleet_load's helpers read.
    options.store, options.workers, options.concurrency = ["postgres", options.postgres], 2, 4
    return options


# --- processes -------------------------------------------------------------------------


def start_fake_fleet(options, run_dir: Path, stack: contextlib.ExitStack) -> list[dict]:
    listing = run_dir / "fake-fleet.json"
    argv = [sys.executable, str(BENCH / "fake_fleet.py"), "--servers", str(options.servers)]
    argv += ["--json", str(listing), "--changing", str(options.changing)]
    argv += ["--interval", str(options.interval)]
    log = open(run_dir / "fake-fleet.log", "w")  # noqa: SIM115 (closed by the stack)
    stack.callback(log.close)
    fake = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop() -> None:
        fake.send_signal(signal.SIGTERM)
        try:
            fake.wait(timeout=15)
        except subprocess.TimeoutExpired:
            fake.kill()
            fake.wait()

    stack.callback(stop)
    if not wait_for(listing.exists, timeout=300, interval=0.5):
        raise RuntimeError(
            f"the fake fleet did not start: {(run_dir / 'fake-fleet.log').read_text()}"
        )
    time.sleep(0.5)  # the file is written whole before anything else, but not atomically
    return json.loads(listing.read_text())


def register(fleet: list[dict], interval: int) -> dict[str, int]:
    """The servers, as `addserver` saves them (a monitoring account, no password)."""
    from partdash.servers.models import Server

    ids = {}
    for member in fleet:
        server = Server(
            name=member["name"], host="127.0.0.1", port=member["port"], poll_interval=interval
        )
        server.user = "monitor"
        server.set_password("")
        server.save()
        ids[member["name"]] = server.pk
    return ids


def cpu_seconds(workers: list[subprocess.Popen]) -> float:
    """CPU of the workers' process trees: each main process, its live children and the
    children it has reaped."""
    total = 0.0
    for worker in workers:
        with contextlib.suppress(psutil.Error):
            main = psutil.Process(worker.pid)
            times = main.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
            for child in main.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    times = child.cpu_times()
                    total += times.user + times.system
    return total


def child_peak_mb(workers: list[subprocess.Popen]) -> float:
    """The largest peak resident memory (VmHWM) of the workers' live children."""
    peak = 0.0
    for worker in workers:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(worker.pid).children(recursive=True):
                with contextlib.suppress(OSError, psutil.Error):
                    status = Path(f"/proc/{child.pid}/status").read_text()
                    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
                    peak = max(peak, int(line.split()[1]) / 1024)
    return peak


def first_round_over(fleet: list[dict], processes, deadline: float, interval: int) -> bool:
    """Until every reachable server has been polled once and an interval has passed
    since (its first polls store every partition, which the store's growth per day
    must not count), or `deadline` (monotonic): whether the round ended first."""
    from partdash.servers.models import Server

    reachable = sum(member["kind"] != "down" for member in fleet)
    while time.monotonic() < deadline:
        if Server.objects.exclude(last_success_at=None).count() >= reachable:
            processes.sleep_until(min(deadline, time.monotonic() + interval))
            return True
        processes.sleep_until(min(deadline, time.monotonic() + 5))
    return False


def store_bytes() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return cursor.fetchone()[0]


STORE_TABLES_SQL = """
SELECT c.relname, pg_total_relation_size(c.oid), s.n_live_tup, s.n_dead_tup
FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'p')
"""


def store_tables() -> dict[str, dict]:
    """Per table of the store: its bytes (heap, indexes, TOAST) and its live and dead row
    versions (PostgreSQL's statistics, which autovacuum and ANALYZE keep roughly current):
    which table grows, and whether it grows by rows kept or by dead versions of rows
    updated, which autovacuum makes reusable and so do not grow the store for ever."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(STORE_TABLES_SQL)
        return {
            name: {"bytes": size, "live": live, "dead": dead}
            for name, size, live, dead in cursor.fetchall()
        }


TIMELINE_TABLES = 4  # the store tables that grew most, followed interval by interval


def watch_the_store(processes, deadline: float, since: float, interval: int) -> list[dict]:
    """Until `deadline`, each store table's bytes and dead row versions every interval:
    whether a table that grows keeps growing (rows kept) or levels off once autovacuum
    reuses the room of its dead row versions (rows updated every poll)."""
    timeline = []
    while time.monotonic() < deadline:
        processes.sleep_until(min(deadline, time.monotonic() + interval))
        tables = store_tables()
        timeline.append(
            {
                "seconds": round(time.monotonic() - since),
                "tables": {name: [t["bytes"], t["dead"]] for name, t in tables.items()},
            }
        )
    if timeline:  # keep the tables that grew most
        first, last = timeline[0]["tables"], timeline[-1]["tables"]
        grew = sorted(last, key=lambda name: first.get(name, [0])[0] - last[name][0])
        kept = set(grew[:TIMELINE_TABLES])
        for point in timeline:
            point["tables"] = {n: v for n, v in point["tables"].items() if n in kept}
    return timeline


def autovacuum_off() -> str:
    """Where autovacuum does not run on the store (partdash.W002's judgement, "" if it
    runs everywhere): off, the dead row versions of rows updated every poll are never
    reclaimed and count as growth."""
    from django.db import connection

    from partdash.metrics.checks import autovacuum_off as off_in

    return off_in(connection)


def table_growth(before: dict[str, dict], after: dict[str, dict], seconds: float) -> dict:
    """Per table, its growth over the measured span and per day (the largest first)."""
    growth = {}
    for name, end in after.items():
        start = before.get(name, {"bytes": 0, "live": 0, "dead": 0})
        grew = end["bytes"] - start["bytes"]
        growth[name] = {
            "bytes_grown": grew,
            "bytes_per_day": round(grew / max(seconds, 1) * 86400),
            "live_rows_added": end["live"] - start["live"],
            "dead_rows_end": end["dead"],
            "bytes_end": end["bytes"],
        }
    return dict(sorted(growth.items(), key=lambda item: -item[1]["bytes_grown"]))


def poll_memory_bytes(redis_url: str) -> tuple[int, int]:
    """MEMORY USAGE summed over every poll-memory key, and how many keys."""
    import redis

    client = redis.Redis.from_url(redis_url)
    total = keys = 0
    for key in client.scan_iter(match="partdash:memory:*", count=1000):
        total += client.memory_usage(key) or 0
        keys += 1
    return total, keys


# --- figures ---------------------------------------------------------------------------


def lateness_figures(
    fleet: list[dict], ids: dict[str, int], polls: list, interval: int, steady_from: float
) -> dict:
    """Per server, its polls' lateness against the time each was due (the headline),
    and against the poll before plus the interval (which also counts the scheduler's
    moves of a server to its offset): the healthy servers' p95s, median and worst. And
    the same from `steady_from` (wall-clock seconds: the first round's end) on: the
    first round is late by design (every server registered at once is polled at once),
    what follows is the scheduler's steady state."""
    per_server = {}
    for member in fleet:
        mine = [poll for poll in polls if poll.server_id == ids[member["name"]]]
        figures = server_figures(mine, interval)
        steady = server_figures([poll for poll in mine if poll.started >= steady_from], interval)
        per_server[member["name"]] = {
            "kind": member["kind"],
            "partitions": member["partitions"],
            "polls": figures["polls"],
            "failed": figures["failed"],
            "lateness": figures["due_lateness"],
            "lateness_from_the_poll_before": figures["lateness"],
            "lateness_after_first_round": steady["due_lateness"],
            "by_worker": figures["by_worker"],
            "overlaps": figures["overlaps"],
        }
    figures = {}
    for name, key in (
        ("", "lateness"),
        ("from_the_poll_before_", "lateness_from_the_poll_before"),
        ("after_first_round_", "lateness_after_first_round"),
    ):
        healthy = [
            f[key]["p95"]
            for f in per_server.values()
            if f["kind"] == "healthy" and f[key]["p95"] is not None
        ]
        figures[f"{name}healthy_servers_with_lateness"] = len(healthy)
        figures[f"lateness_p95_{name}median_s"] = percentile(healthy, 0.5)
        figures[f"lateness_p95_{name}worst_s"] = max(healthy) if healthy else None
    return {"per_server": per_server, **figures}


def partition_polls(fleet: list[dict], ids: dict[str, int], polls: list) -> int:
    partitions = {ids[member["name"]]: member["partitions"] for member in fleet}
    return sum(partitions[poll.server_id] for poll in polls if poll.succeeded)


def page_figures(base: str) -> dict:
    token, session = issue_credentials()
    api = {"Authorization": f"Token {token}"}
    page = {"Cookie": f"sessionid={session}"}
    figures = {"fleet page and its three reads": p95_of(lambda: fleet_page(base, page), READS)}
    for label, path in {
        "server list (a page of 50, worst first)": FLEET_PAGE_READS[0],
        "/api/v1/findings/": "/api/v1/findings/",
        "/metrics": "/metrics",
    }.items():
        headers = api if not path == "/" else page
        figures[label] = p95_of(lambda path=path, h=headers: timed_get(base + path, h), READS)
    with urllib.request.urlopen(urllib.request.Request(f"{base}/metrics", headers=api)) as r:
        body = r.read().decode()
    series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
    return {"reads": figures, "metrics_series": series, "metrics_bytes": len(body)}


# --- the run ---------------------------------------------------------------------------


def run(options: argparse.Namespace, stack: contextlib.ExitStack) -> dict:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = options.json.parent / f"fleet-sim-{stamp}"
    run_dir.mkdir(parents=True)
    print(f"simulated fleet: files in {run_dir}", flush=True)
    fleet = start_fake_fleet(options, run_dir, stack)
    total = sum(member["partitions"] for member in fleet)
    print(f"  {len(fleet):,} fake servers, {total:,} partitions", flush=True)
    redis = RedisServer().start()
    stack.callback(redis.stop)
    env, _ = store_env(options, stack, run_dir, redis.url)
    processes, port = start_partdash(options, stack, run_dir, env)
    ids = register(fleet, options.interval)
    workers = processes.workers()
    cpu_before, began = cpu_seconds(workers), time.monotonic()
    interval = options.interval
    print(f"  beat, web and 2 workers polling every {interval} s for {options.minutes:g} min")
    first_round = first_round_over(fleet, processes, began + options.minutes * 30, interval)
    bytes_after_first_round, first_round_at = store_bytes(), time.monotonic()
    steady_from, cpu_at_first_round = time.time(), cpu_seconds(workers)
    tables_after_first_round = store_tables()
    print(
        f"  first round {'over' if first_round else 'NOT over (half the run passed)'}"
        f" at {first_round_at - began:.0f} s",
        flush=True,
    )
    store_timeline = watch_the_store(
        processes, began + options.minutes * 60, first_round_at, interval
    )
    cpu_at_end = cpu_seconds(workers)
    cpu, steady_cpu = cpu_at_end - cpu_before, cpu_at_end - cpu_at_first_round
    peak = child_peak_mb(workers)
    stored, tables_at_end, off = store_bytes(), store_tables(), autovacuum_off()
    seconds_after = time.monotonic() - first_round_at
    memory, keys = poll_memory_bytes(redis.url)
    pages = page_figures(f"http://127.0.0.1:{port}")
    processes.stop()
    polls = read_polls(run_dir / "polls.jsonl")
    polled = partition_polls(fleet, ids, polls)
    steady_polled = partition_polls(fleet, ids, [p for p in polls if p.started >= steady_from])
    growth = (stored - bytes_after_first_round) / max(seconds_after, 1) * 86400
    return {
        "setup": {
            "servers": len(fleet),
            "scale": options.scale,
            "minutes": options.minutes,
            "partitions": total,
            "interval_s": interval,
            "changing_per_interval": options.changing,
            "kinds": {kind: sum(m["kind"] == kind for m in fleet) for kind in KINDS},
            "run_dir": str(run_dir),
        },
        "lateness": lateness_figures(fleet, ids, polls, interval, steady_from),
        "polls": {
            "succeeded": sum(poll.succeeded for poll in polls),
            "failed": sum(poll.failed for poll in polls),
            "partition_polls": polled,
            "partition_polls_after_first_round": steady_polled,
        },
        "worker_cpu_s": round(cpu, 1),
        "worker_cpu_s_per_million_partition_polls": round(cpu / max(polled, 1) * 1e6, 2),
        "worker_cpu_s_per_million_partition_polls_after_first_round": round(
            steady_cpu / max(steady_polled, 1) * 1e6, 2
        ),
        "worker_child_peak_mb": round(peak, 1),
        "store_bytes": {
            "after_first_round": bytes_after_first_round,
            "end": stored,
            "first_round_over": first_round,
            "autovacuum": not off,
            "autovacuum_off": off,
            "seconds_measured": round(seconds_after),
            "tables": table_growth(tables_after_first_round, tables_at_end, seconds_after),
            "timeline": store_timeline,
        },
        "store_bytes_per_day_per_million_partitions": round(growth / (total / 1e6)),
        "poll_memory_redis_bytes": memory,
        "poll_memory_redis_keys": keys,
        **pages,
        "mysqld_exporter_per_file_series": 4 * total,
    }


KINDS = ("healthy", "slow", "down", "resetting")


def report(result: dict) -> bool:
    setup = result["setup"]
    scaled = setup["scale"] != 1 or setup["minutes"] < 30 or setup["interval_s"] != PRODUCTION
    print(
        f"simulated fleet: {setup['servers']:,} servers, {setup['partitions']:,} partitions, "
        f"polled every {setup['interval_s']} s for {setup['minutes']:g} min"
        + (
            f" [SCALED: {setup['scale']:g} x 1,000 servers, {setup['minutes']:g} of 30 min,"
            f" every {setup['interval_s']} of {PRODUCTION} s]"
            if scaled
            else ""
        )
    )
    met = []

    def line(label: str, value, unit: str = "", target: str | None = None) -> None:
        if isinstance(value, float):
            value = f"{value:,.1f}"
        elif isinstance(value, int):
            value = f"{value:,}"
        print(
            f"  {label}: {'n/a' if value is None else value}{unit}"
            + (f" [{target}]" if target else "")
        )

    def checked(label: str, value, key: str, unit: str) -> None:
        limit = TARGETS[key]
        ok = value is not None and value <= limit
        met.append(ok)
        line(label, value, unit, f"target <= {limit:g}{unit}: {'met' if ok else 'MISSED'}")

    late = result["lateness"]
    line(
        "poll lateness p95 from the poll before + interval, median / worst healthy",
        f"{late['lateness_p95_from_the_poll_before_median_s']} / "
        f"{late['lateness_p95_from_the_poll_before_worst_s']}",
        " s",
    )
    line(
        "poll lateness p95 from its due time, median / worst healthy (first round included)",
        f"{late['lateness_p95_median_s']} / {late['lateness_p95_worst_s']}",
        " s",
    )
    line(
        "poll lateness p95 from its due time after the first round, median healthy",
        late["lateness_p95_after_first_round_median_s"],
        " s",
    )
    checked(
        "poll lateness p95 from its due time after the first round, worst healthy server",
        late["lateness_p95_after_first_round_worst_s"],
        "lateness_p95_worst_s",
        " s",
    )
    line(
        "polls succeeded / failed", f"{result['polls']['succeeded']} / {result['polls']['failed']}"
    )
    line(
        "worker CPU seconds per million partition-polls",
        result["worker_cpu_s_per_million_partition_polls"],
        " s (first round included)",
    )
    line(
        "worker CPU seconds per million partition-polls after the first round",
        result["worker_cpu_s_per_million_partition_polls_after_first_round"],
        " s",
    )
    measured = result["store_bytes"]
    line(
        "store bytes per day per million partitions",
        result["store_bytes_per_day_per_million_partitions"],
        f" (over the {measured['seconds_measured']} s after the first round"
        + ("" if measured["first_round_over"] else ", which had not ended")
        + ")",
    )
    if measured.get("autovacuum_off"):
        print(
            f"  WARNING: autovacuum does not run on the store ({measured['autovacuum_off']}):"
            " the dead row versions of the rows updated every poll are never reclaimed, and"
            " count as growth below"
        )
    for name, table in list(measured["tables"].items())[:TIMELINE_TABLES]:
        line(
            f"  of which {name}",
            table["bytes_per_day"],
            f" bytes a day ({table['live_rows_added']:,} rows added,"
            f" {table['dead_rows_end']:,} dead row versions at the end)",
        )
    for point in measured["timeline"][:: max(1, len(measured["timeline"]) // 6)]:
        sizes = ", ".join(
            f"{name.split('_', 1)[-1]} {size / 1e6:,.1f} MB ({dead:,} dead)"
            for name, (size, dead) in point["tables"].items()
        )
        line(f"  at {point['seconds']} s", sizes)
    line("poll memory in Redis", result["poll_memory_redis_bytes"], " bytes")
    checked(
        "largest worker child peak", result["worker_child_peak_mb"], "worker_child_peak_mb", " MB"
    )
    for label, figure in result["reads"].items():
        key = "metrics_p95_ms" if label == "/metrics" else "page_p95_ms"
        checked(f"{label} p95", round(figure["p95_ms"], 1), key, " ms")
    line("/metrics series at its defaults", result["metrics_series"])
    line(
        "mysqld_exporter per-file collector, same fleet (4 a partition)",
        result["mysqld_exporter_per_file_series"],
    )
    return all(met)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    options.json.parent.mkdir(parents=True, exist_ok=True)
    return run_and_report("simulated fleet", options, run, report)


if __name__ == "__main__":
    sys.exit(main())
