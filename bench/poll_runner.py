"""The polling side of `make bench`, in its own process so its peak memory is its own.

Measures, side by side: the floor (the cheap sources' queries alone, every row, through
PyMySQL) and full partdash polls (collect, store, analyse, evaluate alerts), with the
alert evaluation's own share; Opened_tables per steady-state poll; metadata-store growth
over polls with writes in between. Prints one JSON object. With `--quick` (issue 41's
comparison with the peers, `make bench ARGS=--peers-only`), only the first: the floor,
naive, steady-state and quiet polls.
"""

import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def setup_django(var_dir: Path) -> None:
    """Django as a worker runs it (`api_bench.production_env`: DEBUG off, keys of its
    own), on a migrated SQLite store under `var_dir`. Not DEBUG: Django then keeps the
    text of each of the last 9,000 queries, 16 MB after a few polls of 64,000
    partitions (measured), which no worker holds and this process's peak counted."""
    from api_bench import production_env

    os.environ.update(production_env(var_dir))
    os.environ.pop("DATABASE_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _django_only() -> None:
    import django

    django.setup()  # (the parent's environment: its settings and store, migrated)


def floor_process():
    """A process of its own that reads the floor (`floor_seconds`), so that this one's
    peak memory is partdash's: reading every row of the cheap sources leaves the reading
    process's allocator holding 14-17 MB more after each read on 64,000 partitions, with
    no Python object left (traced), which would count towards the polls' peak here."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    spawn = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=1, mp_context=spawn, initializer=_django_only)


def floor_seconds(target) -> float:
    """The cheap sources, every row, with the collector's own column lists."""
    from partdash.mysql.connection import open_session
    from partdash.mysql.dialects import dialect_for
    from partdash.mysql.sources import file_io, innodb_stats, tablespaces

    started = time.monotonic()
    with open_session(target) as session:
        dialect = dialect_for(session.flavor, session.version)
        for sql in (innodb_stats.SQL, tablespaces.sql(dialect), file_io.SQL):
            session.rows(sql)
    return time.monotonic() - started


def naive_in_subprocess(port: int) -> tuple[float, int]:
    """A naive poll, timed inside a child process so its 64,000-row result does not count
    towards this process's peak memory."""
    code = f"import json, run; print(json.dumps(run.naive_poll({port})))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT / "bench", capture_output=True, text=True, check=True
    )
    return tuple(json.loads(done.stdout))


def opened_tables(port: int) -> int:
    from fleet import connect

    conn = connect(port)
    with conn.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Opened_tables'")
        value = int(cursor.fetchone()[1])
    conn.close()
    return value


def store_bytes() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.execute("PRAGMA page_count")
        pages = cursor.fetchone()[0]
        cursor.execute("PRAGMA freelist_count")
        free = cursor.fetchone()[0]
        cursor.execute("PRAGMA page_size")
        return (pages - free) * cursor.fetchone()[0]


def timed_calls(owner, name: str) -> list[float]:
    """Replaces `owner.name` by itself timed: each call's seconds go to the list returned."""
    seconds: list[float] = []
    call = getattr(owner, name)

    def timed(*args, **kwargs):
        started = time.monotonic()
        try:
            return call(*args, **kwargs)
        finally:
            seconds.append(time.monotonic() - started)

    setattr(owner, name, timed)
    return seconds


def time_alert_evaluation() -> list[float]:
    """Times each poll's alert evaluation (the poll service's last stage)."""
    from partdash.polling import service

    return timed_calls(service, "evaluate_after_poll")


def time_drift_evaluation() -> list[float]:
    """Times each poll's server-group comparison (`partdash.metrics.drift.evaluate`,
    within the analysis)."""
    from partdash.metrics import analysis

    return timed_calls(analysis.drift, "evaluate")


def grouped_polls(monitored, port: int) -> dict:
    """(3g): the server grouped with a replica of itself (a second registration of the
    same MariaDB): the group's first comparison, then quiet polls and the share of each
    spent comparing."""
    from partdash.polling.service import poll_server
    from partdash.servers.models import Server, ServerGroup

    drift_seconds = time_drift_evaluation()
    replica = Server.objects.create(name="bench-replica", host="127.0.0.1", port=port, user="root")
    assert poll_server(replica).ok
    group = ServerGroup.objects.create(name="bench-group")
    group.servers.set([monitored, replica])
    assert poll_server(replica).ok  # (the replica's comparison: it, not the bench, first)
    del drift_seconds[:]
    started = time.monotonic()
    assert poll_server(monitored).ok
    first = (time.monotonic() - started, drift_seconds[-1])
    polls = []
    for _ in range(5):
        started = time.monotonic()
        report = poll_server(monitored)
        polls.append(time.monotonic() - started)
        assert report.ok, report.error
    quiet_drift = drift_seconds[-5:]
    drifting = monitored.snapshots.order_by("-taken_at").first().pressure.get("drift") or {}
    group.delete()
    monitored.refresh_from_db()
    assert poll_server(monitored).ok  # out of the group: its drift cleared, as before
    replica.delete()  # the API figures that follow are on the one server, as before (3g)
    return {
        "grouped_first_poll_seconds": first[0],
        "grouped_first_drift_seconds": first[1],
        "grouped_quiet_seconds": polls,
        "grouped_quiet_median": statistics.median(polls),
        "grouped_drift_seconds": quiet_drift,
        "grouped_drift_median": statistics.median(quiet_drift),
        "grouped_drifting_tables": len(drifting.get("tables") or []),
    }


def main() -> None:
    port, var_dir, tables, partitions = (
        int(sys.argv[1]),
        Path(sys.argv[2]),
        *map(int, sys.argv[3:5]),
    )
    quick = sys.argv[5:] == ["--quick"]
    from tests.services import RedisServer

    redis = RedisServer().start()  # the shared poll memory's (and nothing else here)
    os.environ["PARTDASH_REDIS_URL"] = redis.url
    try:
        run(port, var_dir, tables, partitions, quick)
    finally:
        redis.stop()


def run(port: int, var_dir: Path, tables: int, partitions: int, quick: bool = False) -> None:
    setup_django(var_dir)
    from fleet import write_to_some_partitions

    from partdash.mysql.connection import target_for
    from partdash.polling import service
    from partdash.polling.service import poll_server
    from partdash.servers.models import Server

    monitored = Server.objects.create(name="bench", host="127.0.0.1", port=port, user="root")
    target = target_for(monitored)
    evaluations = time_alert_evaluation()

    first_started = time.monotonic()
    first = poll_server(monitored)
    first_seconds = time.monotonic() - first_started
    assert first.ok, first.error
    rss_after_first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    poll_server(monitored)  # the second poll turns unknown rates into 0 once

    floors, polls, opened, naive, evaluated = [], [], [], [], []
    floor_reader = floor_process()
    floor_reader.submit(floor_seconds, target).result()  # (its first read: imports, warm-up)
    for iteration in range(5):
        floors.append(floor_reader.submit(floor_seconds, target).result())
        if iteration < 3:  # the naive poll, in the same loop so load hits all three alike
            naive.append(naive_in_subprocess(port))
        before = opened_tables(port)
        started = time.monotonic()
        report = poll_server(monitored)
        polls.append(time.monotonic() - started)
        evaluated.append(evaluations[-1])
        opened.append(opened_tables(port) - before)
        assert report.ok, report.error

    peaks = {"first polls": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    # Quiet polls: nothing written, and only the floor's reads between them (the naive
    # poll above opened every table, which moves read counters: one poll absorbs that).
    assert poll_server(monitored).ok
    quiet, quiet_floors, quiet_opened, quiet_fetched = [], [], [], []
    memory = service.MEMORIES.held(monitored.pk).sources
    for _ in range(5):
        quiet_floors.append(floor_reader.submit(floor_seconds, target).result())
        before = opened_tables(port)
        started = time.monotonic()
        assert poll_server(monitored).ok
        quiet.append(time.monotonic() - started)
        quiet_opened.append(opened_tables(port) - before)
        quiet_fetched.append(sum(memory.fetched.values()) if memory else None)

    floor_reader.shutdown()
    side_by_side = {
        "first_poll_seconds": first_seconds,
        "first_poll_definitions": first.definitions_read,
        "partitions_seen": first.partitions_seen,
        "floor_seconds": floors,
        "poll_seconds": polls,
        "floor_median": statistics.median(floors),
        "poll_median": statistics.median(polls),
        "opened_tables_per_poll": opened,
        "naive": naive,
        "quiet_seconds": quiet,
        "quiet_median": statistics.median(quiet),
        "quiet_floor_median": statistics.median(quiet_floors),
        "quiet_opened_tables": quiet_opened,
        "quiet_rows_fetched": quiet_fetched,
    }
    if quick:
        print(json.dumps(side_by_side))
        return

    peaks["steady and quiet polls"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # A quiet poll on a process that did not poll the server last (as when a worker
    # child other than the last one takes it): what this process remembers is dropped.

    from django.conf import settings

    from partdash.polling.memory import PollMemories

    cold, cold_fetched = [], []
    memory = None  # (a cold process holds no memory of the server)
    settings.PARTDASH_SHARE_POLL_MEMORY = False  # nothing shared either: as before issue 25
    for _ in range(3):
        service.MEMORIES = PollMemories()  # (a child new to the server)
        gc.collect()  # what a poll leaves to the cyclic collector, as between a child's tasks
        started = time.monotonic()
        assert poll_server(monitored).ok
        cold.append(time.monotonic() - started)
        cold_fetched.append(sum(service.MEMORIES.held(monitored.pk).sources.fetched.values()))
        assert poll_server(monitored).ok  # warm again for the next
    settings.PARTDASH_SHARE_POLL_MEMORY = True
    assert poll_server(monitored).ok  # (shared again)
    peaks["polls by a new process, nothing shared"] = (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    # A quiet poll on a new worker child, which holds nothing of the server: it reads the
    # shared poll memory from Redis (`partdash.polling.pollmemory`).
    shared, shared_fetched = [], []
    for _ in range(3):
        service.MEMORIES = PollMemories()
        gc.collect()
        started = time.monotonic()
        assert poll_server(monitored).ok
        shared.append(time.monotonic() - started)
        shared_fetched.append(sum(service.MEMORIES.held(monitored.pk).sources.fetched.values()))
        assert poll_server(monitored).ok
    memory = service.MEMORIES.held(monitored.pk).sources

    peaks["polls by a new process, shared memory"] = (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    growth_polls = 20
    size_before = store_bytes()
    written, changed, written_polls, written_evaluated, written_fetched = 0, [], [], [], []
    for round_number in range(growth_polls):
        written += write_to_some_partitions(port, tables, partitions, 0.01, round_number)
        started = time.monotonic()
        changed.append(poll_server(monitored).changed)
        written_polls.append(time.monotonic() - started)
        written_evaluated.append(evaluations[-1])
        written_fetched.append(sum(memory.fetched.values()) if memory else None)
    size_after = store_bytes()
    peaks["polls after 1% written"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    grouped = grouped_polls(monitored, port)  # last: its replica's first poll adds memory

    print(
        json.dumps(
            {
                **side_by_side,
                "evaluate_seconds": evaluated,
                "evaluate_median": statistics.median(evaluated),
                "written_evaluate_median": statistics.median(written_evaluated),
                "growth_polls": growth_polls,
                "rows_written": written,
                "growth_changed": changed,
                "written_poll_median": statistics.median(written_polls),
                "written_rows_fetched": written_fetched,
                "cold_seconds": cold,
                "cold_median": statistics.median(cold),
                "cold_rows_fetched": cold_fetched,
                "shared_seconds": shared,
                "shared_median": statistics.median(shared),
                "shared_rows_fetched": shared_fetched,
                "rss_after_first_mb": rss_after_first,
                "peak_rss_by_phase_mb": peaks,
                "store_growth_bytes": size_after - size_before,
                "bytes_per_partition_per_poll": (size_after - size_before)
                / (first.partitions_seen * growth_polls),
                "peak_rss_mb": peak_rss,
                **grouped,
            }
        )
    )


if __name__ == "__main__":
    main()
