"""`make bench`: the collector's cost on a 64,000-partition MariaDB, measured side by side.

Prints the figures of issue #3's targets: the floor (cheap sources alone), a naive
information_schema.PARTITIONS poll, partdash's steady-state poll, Opened_tables per poll,
metadata-store growth and the polling process's peak memory; issue #10's: the alert
evaluation's share of a steady-state poll; issue #14's (7w): the same figures with each
poll queued through the API's "poll now" and run by a real Celery worker (concurrency 4,
Redis broker; bench/worker_bench.py, --worker-polls); then issue #13's: a fleet of
servers polled by partdash's real processes for --fleet-minutes, with readers on the API
and pages (bench/fleet_load.py; figures in var/bench/fleet-load-*.json); last issue
#24's: a table's history over 1 hour to 7 days (bench/history_bench.py, --history-only);
then issue #37's: 8,192 partitions' history before and bounded per answer
(bench/wide_history_bench.py, --wide-history-only); issue #40's: what reading 10,000
statement digests costs a poll of the large server (bench/statements_bench.py,
--statements-only); last issue #41's: the fleet page, the server and findings lists and
/metrics at 1,000 servers (bench/fleet_pages_bench.py, --fleet-pages-only); and, on the
large server after partdash's polls, mysqld_exporter's table and file collectors
(bench/peers_bench.py, --peers-only with the large server's first loops). Apart,
not in a plain `make bench`: `--simulated-fleet`, issue #41's 1,000 simulated servers
polled by partdash's real processes (bench/fleet_sim.py, figures in
var/bench/fleet-sim.json): `--sim-minutes` (30) and `--sim-scale` (1.0, the share of
the 1,000 servers; two cores want about 0.05 for a few minutes).

A quick run: `make bench ARGS="--fleet-only --fleet-minutes 2 --fleet-servers 4 --fleet-big 1"`.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLEET_FIGURES = HERE.parent / "var" / "bench"
sys.path.insert(0, str(HERE))

from fleet import connect, create_tables, settle, start_server  # noqa: E402

from tests.services import MariaDB  # noqa: E402


def naive_poll(port: int) -> tuple[float, int]:
    """Every row of information_schema.PARTITIONS: (seconds, Opened_tables added)."""
    conn = connect(port)
    with conn.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Opened_tables'")
        before = int(cursor.fetchone()[1])
        started = time.monotonic()
        cursor.execute("SELECT * FROM information_schema.PARTITIONS")
        cursor.fetchall()
        seconds = time.monotonic() - started
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Opened_tables'")
        added = int(cursor.fetchone()[1]) - before
    conn.close()
    return seconds, added


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(figures: dict, naive: list[tuple[float, int]]) -> bool:
    floor, poll = figures["floor_median"], figures["poll_median"]
    naive_median = statistics.median(seconds for seconds, _ in naive)
    # A poll right after a naive one reopens partdash's own few source tables, which the
    # naive poll evicted from the table cache; steady state is a poll after a poll.
    opened = max(figures["opened_tables_per_poll"][3:])
    growth = figures["bytes_per_partition_per_poll"]
    rss = figures["peak_rss_mb"]
    checks = [
        ("(1) floor: cheap sources, every row, PyMySQL (median of 5)", f"{floor:.2f} s", ""),
        (
            "(2) naive SELECT of information_schema.PARTITIONS (median of 3)",
            f"{naive_median:.2f} s",
            f"+{statistics.median(a for _, a in naive):.0f} Opened_tables per poll",
        ),
        (
            "(3) partdash steady-state poll (median of 5)",
            f"{poll:.2f} s",
            f"{poll / floor:.2f}x floor [target <= 2x: {verdict(poll <= 2 * floor)}], "
            f"{naive_median / poll:.1f}x faster than naive "
            f"[target >= 4x: {verdict(naive_median >= 4 * poll)}]",
        ),
        (
            "(3q) a quiet poll: nothing written since the last (median of 5)",
            f"{figures['quiet_median']:.2f} s",
            f"{figures['quiet_median'] / floor:.2f}x floor "
            f"[target <= 0.5x: {verdict(figures['quiet_median'] <= 0.5 * floor)}], "
            f"{max(figures['quiet_opened_tables'])} Opened_tables, rows read by the wide "
            f"sources {figures['quiet_rows_fetched']} (floor of the same loop "
            f"{figures['quiet_floor_median']:.2f} s)",
        ),
        (
            "(3k) a quiet poll by a new process, nothing shared (median of 3)",
            f"{figures['cold_median']:.2f} s",
            f"{figures['cold_median'] / floor:.2f}x floor (no target: as before the shared "
            f"poll memory, or after Redis lost it), rows read by the wide sources "
            f"{figures['cold_rows_fetched']}",
        ),
        (
            "(3s) a quiet poll by a new process, shared poll memory (median of 3)",
            f"{figures['shared_median']:.2f} s",
            f"{figures['shared_median'] / floor:.2f}x floor [target <= 1.5x: "
            f"{verdict(figures['shared_median'] <= 1.5 * floor)}], rows read by the wide "
            f"sources {figures['shared_rows_fetched']}",
        ),
        (
            "(3b) a poll after 1% of partitions were written (median of 20)",
            f"{figures['written_poll_median']:.2f} s",
            f"{figures['written_poll_median'] / floor:.2f}x floor "
            f"[target <= 0.8x: {verdict(figures['written_poll_median'] <= 0.8 * floor)}], "
            f"rows read by the wide sources: median "
            f"{statistics.median(n or 0 for n in figures['written_rows_fetched']):.0f}",
        ),
        (
            "(3c) alert evaluation within a steady-state poll (median of 5)",
            f"{figures['evaluate_median'] * 1000:.0f} ms",
            f"{figures['evaluate_median'] / poll:.1%} of the poll "
            f"[target < 10%: {verdict(figures['evaluate_median'] < 0.1 * poll)}]",
        ),
        (
            "(3d) alert evaluation within a poll after 1% were written (median)",
            f"{figures['written_evaluate_median'] * 1000:.0f} ms",
            f"{figures['written_evaluate_median'] / figures['written_poll_median']:.1%} "
            "of that poll (no target)",
        ),
        (
            "(3g) a quiet poll of a server in a group (a replica of itself; median of 5)",
            f"{figures['grouped_quiet_median']:.2f} s",
            f"{figures['grouped_quiet_median'] / floor:.2f}x floor; comparing the group: "
            f"{figures['grouped_drift_median'] * 1000:.1f} ms, "
            f"{figures['grouped_drift_median'] / figures['grouped_quiet_median']:.1%} of the "
            f"poll [target < 5%: "
            f"{verdict(figures['grouped_drift_median'] < 0.05 * figures['grouped_quiet_median'])}]"
            f"; the group's first comparison {figures['grouped_first_drift_seconds'] * 1000:.0f}"
            f" ms of a {figures['grouped_first_poll_seconds']:.2f} s poll; "
            f"{figures['grouped_drifting_tables']} tables drifting (0 expected)",
        ),
        (
            "(4) Opened_tables added by one steady-state poll (polls 4-5)",
            str(opened),
            f"[target 0: {verdict(opened == 0)}]",
        ),
        (
            f"(5) store growth, {figures['growth_polls']} polls, 1% of partitions written",
            f"{growth:.3f} B/partition/poll",
            f"{figures['store_growth_bytes']} bytes in all [target <= 1: {verdict(growth <= 1)}]",
        ),
        (
            "(6) peak memory of the polling process",
            f"{rss:.0f} MB",
            f"[target < 300 MB: {verdict(rss < 300)}]; by the end of: "
            + ", ".join(
                f"{phase} {mb:.0f}" for phase, mb in figures.get("peak_rss_by_phase_mb", {}).items()
            ),
        ),
    ]
    print()
    print(
        f"partitions: {figures['partitions_seen']}; first poll (reads every definition): "
        f"{figures['first_poll_seconds']:.1f} s for {figures['first_poll_definitions']} tables"
    )
    for label, value, note in checks:
        print(f"{label:<66} {value:>22}  {note}")
    print(
        f"raw: floor {[round(s, 2) for s in figures['floor_seconds']]}, "
        f"poll {[round(s, 2) for s in figures['poll_seconds']]}, "
        f"naive {[round(s, 2) for s, _ in naive]}"
    )
    return all("FAIL" not in note for _, _, note in checks)


WEB_TARGETS_MS = {"list": 150, "history": 300, "page": 150, "metrics": 500}


def report_web(results: dict) -> bool:
    """Median and p95 per endpoint; list endpoints and pages p95 < 150 ms, a table's
    history p95 < 300 ms."""
    ok = True
    for label, figures in results.items():
        if "error" in figures:
            print(f"{label:<66} FAIL: {figures['error']}")
            ok = False
            continue
        target = WEB_TARGETS_MS[label.split(":")[0].split(" ")[0]]
        passed = figures["p95_ms"] < target
        ok = ok and passed
        print(
            f"{label:<66} median {figures['median_ms']:6.1f} ms, p95 {figures['p95_ms']:6.1f} ms"
            f"  [target p95 < {target} ms: {verdict(passed)}]"
        )
    return ok


def report_exposition(figures: dict) -> None:
    """/metrics on the benchmark store: one series per table per figure, whatever the
    partitions (none is opted in to per-partition series)."""
    print(
        f"{'/metrics: size, series, queries (render in process, median/p95)':<66} "
        f"{figures['bytes']:>10,} bytes, {figures['series']:,} series in "
        f"{figures['families']} families, {figures['queries']} queries; "
        f"{figures['median_ms']:.1f} / {figures['p95_ms']:.1f} ms"
    )


def collector_cost(options: argparse.Namespace) -> int:
    """Issue #3's and #10's figures on the 64,000-partition server; the exit status."""
    with large_server(options) as server:
        print("floor, naive and partdash polls side by side (partdash in its own process)")
        with tempfile.TemporaryDirectory(prefix="partdash-bench-") as var_dir:
            result = subprocess.run(
                [
                    sys.executable,
                    str(HERE / "poll_runner.py"),
                    str(server.port),
                    var_dir,
                    str(options.tables),
                    str(options.partitions),
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                print(result.stdout, result.stderr, sep="\n")
                return 1
            figures = json.loads(result.stdout.strip().splitlines()[-1])
            polls_ok = report(figures, [tuple(n) for n in figures["naive"]])
            peers_ok = beside_the_peers(server.port, figures, var_dir, options.peer_scrapes) == 0
            print("\nAPI and pages on that store: gunicorn (2 workers x 4 threads), 8 clients")
            web = subprocess.run(
                [sys.executable, str(HERE / "api_bench.py"), var_dir],
                capture_output=True,
                text=True,
            )
        if web.returncode != 0:
            print(web.stdout, web.stderr, sep="\n")
            return 1
        web_figures = json.loads(web.stdout.strip().splitlines()[-1])
        report_exposition(web_figures.pop("exposition"))
        web_ok = report_web(web_figures)
        worker_ok = through_the_worker(options, server.port)
        return 0 if polls_ok and peers_ok and web_ok and worker_ok else 1


def large_server(options: argparse.Namespace) -> MariaDB:
    """The 64,000-partition server, built and settled: a started MariaDB to enter."""
    print("starting a private MariaDB (table_open_cache=400, performance_schema=ON)")
    server = start_server()
    print(f"creating {options.tables} tables x {options.partitions} HASH partitions")
    seconds = create_tables(server.port, options.tables, options.partitions, options.rows)
    print(f"  done in {seconds:.0f} s; flushing dirty pages so the tables are quiet")
    print(f"  settled in {settle(server.port):.0f} s")
    return server


def beside_the_peers(port: int, figures: dict, var_dir: str, scrapes: int) -> int:
    """Issue 41 (4): mysqld_exporter's table and file collectors on the same server,
    printed beside partdash's `figures` of this run (bench/peers_bench.py)."""
    if scrapes <= 0:
        return 0
    print("\nmysqld_exporter on the same server: its table collectors, then its file collector")
    ours = Path(var_dir) / "partdash-figures.json"
    ours.write_text(json.dumps(figures))
    argv = [sys.executable, str(HERE / "peers_bench.py"), "--port", str(port)]
    argv += ["--partdash", str(ours), "--scrapes", str(scrapes)]
    return run_to_end([*argv, "--json", str(FLEET_FIGURES / "peers.json")])


def peers_only(options: argparse.Namespace) -> int:
    """`--peers-only`: the large server, the floor, naive, steady and quiet polls side by
    side (poll_runner's first loops), then the peers on the same server."""
    with large_server(options) as server:
        print("floor, naive and partdash polls side by side (partdash in its own process)")
        with tempfile.TemporaryDirectory(prefix="partdash-bench-") as var_dir:
            argv = [sys.executable, str(HERE / "poll_runner.py"), str(server.port), var_dir]
            argv += [str(options.tables), str(options.partitions), "--quick"]
            result = subprocess.run(argv, capture_output=True, text=True)
            if result.returncode != 0:
                print(result.stdout, result.stderr, sep="\n")
                return 1
            figures = json.loads(result.stdout.strip().splitlines()[-1])
            return beside_the_peers(server.port, figures, var_dir, options.peer_scrapes)


def through_the_worker(options: argparse.Namespace, port: int) -> bool:
    """Issue #14's figures (7w): the polls queued through the API and run by a real
    Celery worker (bench/worker_bench.py, which prints them); True when all passed."""
    if options.worker_polls <= 0:
        return True
    print(
        "\nthrough the worker: poll now via the API, a Celery worker (concurrency 4), Redis",
        flush=True,
    )
    argv = [sys.executable, str(HERE / "worker_bench.py"), "--port", str(port)]
    argv += ["--tables", str(options.tables), "--partitions", str(options.partitions)]
    argv += ["--written-polls", str(options.worker_polls)]
    argv += ["--beat"] if options.worker_beat else []
    return run_to_end(argv) == 0


LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"


def postgres_for_fleet(option: str) -> str | None:
    """--fleet-postgres: a URL, `none`, or `auto` (the default): the PostgreSQL at
    127.0.0.1:5432 if one answers there (`make test` starts its own otherwise)."""
    if option == "none":
        return None
    if option != "auto":
        return option
    if shutil.which("pg_isready") is None:
        print("no PostgreSQL client here: the two-worker fleet run is skipped")
        return None
    answers = subprocess.run(
        ["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"], capture_output=True, check=False
    )
    if answers.returncode != 0:
        print("no PostgreSQL answers at 127.0.0.1:5432: the two-worker fleet run is skipped")
        return None
    return LOCAL_POSTGRES


def fleet_load(options: argparse.Namespace) -> int:
    """Issue #13's figures: bench/fleet_load.py on SQLite with one worker, then on
    PostgreSQL with two named workers (see `postgres_for_fleet`); the exit status."""
    runs = [(["--store", "sqlite"], "fleet-load-sqlite.json")]
    if postgres := postgres_for_fleet(options.fleet_postgres):
        scale_out = ["--store", "postgres", postgres, "--workers", "2"]
        runs.append((scale_out, "fleet-load-postgres-2-workers.json"))
    status = 0
    for store, name in runs:
        argv = [sys.executable, str(HERE / "fleet_load.py"), *store]
        argv += ["--minutes", str(options.fleet_minutes), "--servers", str(options.fleet_servers)]
        argv += ["--big", str(options.fleet_big), "--json", str(FLEET_FIGURES / name)]
        status = run_to_end(argv) or status
    return status


def statement_figures() -> int:
    """Issue #40's figures: what reading the statement digests costs a poll of the large
    server holding 10,000 digests (bench/statements_bench.py, which prints them)."""
    argv = [sys.executable, str(HERE / "statements_bench.py")]
    return run_to_end(argv + ["--json", str(FLEET_FIGURES / "statements.json")])


def run_to_end(argv: list[str]) -> int:
    """Run a child that stops what it started on Ctrl-C (which reaches it too): wait for
    it to finish that, rather than kill it as subprocess.run would; then stop here too."""
    child = subprocess.Popen(argv)
    interrupted = False
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
    if interrupted:
        raise KeyboardInterrupt
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=128)
    parser.add_argument("--rows", type=int, default=256, help="rows per table")
    parser.add_argument("--fleet-only", action="store_true", help="skip the 64,000 partitions")
    parser.add_argument(
        "--worker-polls",
        type=int,
        default=10,
        metavar="N",
        help="polls after 1%% were written, through the worker (7w); 0 skips the (7w) figures",
    )
    parser.add_argument(
        "--worker-beat", action="store_true", help="run beat beside the (7w) worker too"
    )
    parser.add_argument(
        "--fleet-minutes", type=float, default=10.0, help="fleet load run length; 0 skips it"
    )
    parser.add_argument("--fleet-servers", type=int, default=12, help="healthy MariaDBs")
    parser.add_argument("--fleet-big", type=int, default=3, help="of them with thousands")
    parser.add_argument(
        "--fleet-postgres",
        metavar="URL",
        default="auto",
        help="also run the fleet on a fresh database there, with two workers; `auto` "
        "(default): the PostgreSQL at 127.0.0.1:5432 if one answers; `none`: skip it",
    )
    parser.add_argument(
        "--history-only",
        action="store_true",
        help="only the history figures (bench/history_bench.py), about 3 minutes",
    )
    parser.add_argument(
        "--wide-history-only",
        action="store_true",
        help="only the history of 8,192 partitions, before and bounded "
        "(bench/wide_history_bench.py), about 6 minutes",
    )
    parser.add_argument(
        "--shared-servers",
        type=int,
        default=3,
        metavar="N",
        help="servers of 32,000 partitions polled through two workers (7f, issue 25); 0 skips them",
    )
    parser.add_argument(
        "--statements-only",
        action="store_true",
        help="only the statement digests' cost (bench/statements_bench.py), about 4 minutes",
    )
    parser.add_argument(
        "--fleet-pages-only",
        action="store_true",
        help="only the fleet page and lists at 1,000 servers (bench/fleet_pages_bench.py), "
        "about a minute",
    )
    parser.add_argument(
        "--peers-only",
        action="store_true",
        help="only the large server's floor, naive and partdash polls beside mysqld_exporter's "
        "table and file collectors on it (bench/peers_bench.py)",
    )
    parser.add_argument(
        "--peer-scrapes", type=int, default=5, help="scrapes of each exporter; 0 skips them"
    )
    parser.add_argument(
        "--single-only",
        action="store_true",
        help="only the 64,000-partition server: in process, then through the worker (7w)",
    )
    parser.add_argument(
        "--shared-only",
        action="store_true",
        help="only the fleet through two workers (7f): bench/shared_memory_bench.py",
    )
    parser.add_argument(
        "--simulated-fleet",
        action="store_true",
        help="only the simulated fleet of 1,000 servers (bench/fleet_sim.py)",
    )
    parser.add_argument("--sim-minutes", type=float, default=30.0, help="its run length")
    parser.add_argument(
        "--sim-scale", type=float, default=1.0, help="its share of the 1,000 servers"
    )
    parser.add_argument(
        "--sim-interval", type=int, default=60, help="its seconds between a server's polls"
    )
    options = parser.parse_args()
    if options.simulated_fleet:
        return simulated_fleet(options)
    if options.history_only:
        return history_figures()
    if options.wide_history_only:
        return wide_history_figures()
    if options.single_only:
        return collector_cost(options)
    if options.shared_only:
        return shared_memory_figures(options)
    if options.statements_only:
        return statement_figures()
    if options.fleet_pages_only:
        return fleet_pages_figures()
    if options.peers_only:
        return peers_only(options)
    status = 0 if options.fleet_only else collector_cost(options)
    if not options.fleet_only:
        print(flush=True)
        status = statement_figures() or status
    if not options.fleet_only:
        status = shared_memory_figures(options) or status
    if options.fleet_minutes > 0:
        print(flush=True)
        status = fleet_load(options) or status
    print(flush=True)
    status = history_figures() or status
    print(flush=True)
    status = wide_history_figures() or status
    print(flush=True)
    return fleet_pages_figures() or status


def simulated_fleet(options: argparse.Namespace) -> int:
    """Issue 41's simulated fleet (bench/fleet_sim.py), on the PostgreSQL --fleet-postgres
    names (its store must be PostgreSQL)."""
    postgres = postgres_for_fleet(options.fleet_postgres)
    if postgres is None:
        print("the simulated fleet needs a PostgreSQL for its store: skipped")
        return 1
    argv = [sys.executable, str(HERE / "fleet_sim.py"), "--minutes", str(options.sim_minutes)]
    argv += ["--scale", str(options.sim_scale), "--interval", str(options.sim_interval)]
    return run_to_end([*argv, "--postgres", postgres])


def shared_memory_figures(options: argparse.Namespace) -> int:
    """Issue 25's fleet figure (7f): servers of 32,000 partitions polled round robin
    through two workers, as two worker hosts run them (bench/shared_memory_bench.py)."""
    if options.shared_servers <= 0:
        return 0
    print(
        f"\na fleet through two workers: {options.shared_servers} servers of 32,000 "
        "partitions, poll now via the API, two Celery workers (concurrency 4 each)",
        flush=True,
    )
    argv = [sys.executable, str(HERE / "shared_memory_bench.py")]
    argv += ["--servers", str(options.shared_servers)]
    return run_to_end(argv)


def history_figures() -> int:
    """A table's history over 1 hour, 24 hours and 7 days (issue 24): its own store."""
    with tempfile.TemporaryDirectory(prefix="partdash-history-") as var_dir:
        return subprocess.run([sys.executable, str(HERE / "history_bench.py"), var_dir]).returncode


def fleet_pages_figures() -> int:
    """The fleet page, the server and findings lists and /metrics at 1,000 servers
    (issue 41, point 2): its own store, built in bulk."""
    with tempfile.TemporaryDirectory(prefix="partdash-fleet-pages-") as var_dir:
        argv = [sys.executable, str(HERE / "fleet_pages_bench.py"), var_dir]
        return subprocess.run(argv).returncode


def wide_history_figures() -> int:
    """A table of 8,192 partitions' history, partition by partition and bounded per
    answer, side by side (issue 37, finding 6): its own store."""
    with tempfile.TemporaryDirectory(prefix="partdash-wide-history-") as var_dir:
        argv = [sys.executable, str(HERE / "wide_history_bench.py"), var_dir]
        return subprocess.run(argv).returncode


if __name__ == "__main__":
    sys.exit(main())
