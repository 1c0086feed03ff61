"""Issue 37 (finding 6): the history of a table of 8,192 partitions (MariaDB's maximum),
answered partition by partition (before) and bounded per answer (after, what the API
serves: the 24 busiest and `other`), side by side in one run on one store. HOURS of
polls 60 s apart (bulk SQL); each poll changes a rotating sixteenth of the partitions
(512), so every partition changes at least every 16 minutes; rolled up as the worker
would. A viewer asks for the last 24 hours of `rows` and of `write_bytes_per_s`.

Each mode runs in child processes of its own, so a peak RSS (getrusage's ru_maxrss) is
that mode's alone: one viewer's requests one after another (p50/p95, and the peak of one
request at a time), then 8 viewers at once (threads of one process, as a gunicorn
worker's). An answer is rendered to JSON by DRF's renderer, as the view sends it.
Prints one JSON object and a line per figure.

Usage: wide_history_bench.py [VAR_DIR] [--hours H] [--before-requests N]
"""

import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from api_bench import production_env  # noqa: E402
from history_bench import insert_polls  # noqa: E402

PARTITIONS = 8192
HOURS = 2  # of polls: their roll-up took 233 s here (one lookup per partition and chunk)
POLL_SECONDS = 60
ROTATION = 16  # a poll changes every 16th partition, in turn
REQUESTS = {"before": 3, "after": 20}  # one viewer's, per metric (before: seconds each)
CLIENTS = 8
METRICS = ("rows", "write_bytes_per_s")


def fill(db_path: Path, hours: int) -> int:
    """The server, its table, its partitions and 24 hours of polls, in bulk SQL."""
    from partdash.metrics.models import Partition, PartitionedTable
    from partdash.servers.models import Server

    server = Server(name="wide", host="127.0.0.1", port=1, user="monitor")
    server.set_password("")
    server.save()
    now = datetime.now(UTC)
    table = PartitionedTable.objects.create(
        server=server,
        schema="shop",
        name="wide",
        method="HASH",
        partition_count=PARTITIONS,
        first_seen_at=now - timedelta(hours=hours),
    )
    Partition.objects.bulk_create(
        (
            Partition(table=table, key=f"p{i}", name=f"p{i}", ordinal=i, rows=0)
            for i in range(PARTITIONS)
        ),
        batch_size=2000,
    )
    ids = list(table.partitions.order_by("ordinal").values_list("pk", flat=True))
    polls = hours * 3600 // POLL_SECONDS
    start = now - timedelta(seconds=POLL_SECONDS * polls)
    connection = sqlite3.connect(db_path)
    snapshots = insert_polls(connection, server.pk, start, polls)

    def samples():
        for k, snapshot_id in enumerate(snapshots):
            for n, partition_id in enumerate(ids):
                if k and n % ROTATION != k % ROTATION:
                    continue
                weight = 1 + (n * 7919) % 1000  # a spread of busy and quiet partitions
                yield (
                    partition_id,
                    snapshot_id,
                    1000 + k * weight,
                    (1000 + k * weight) * 100,
                    k * weight,
                    k * weight * 16384,
                )

    connection.executemany(
        "INSERT INTO metrics_partitionsample (partition_id, snapshot_id, rows, data_bytes,"
        " modified_counter, write_bytes) VALUES (?, ?, ?, ?, ?, ?)",
        samples(),
    )
    connection.execute(
        "UPDATE metrics_partition SET rows = (SELECT s.rows FROM metrics_partitionsample s"
        " WHERE s.partition_id = metrics_partition.id ORDER BY s.snapshot_id DESC LIMIT 1),"
        " write_bytes = (SELECT s.write_bytes FROM metrics_partitionsample s"
        " WHERE s.partition_id = metrics_partition.id ORDER BY s.snapshot_id DESC LIMIT 1)"
        " WHERE table_id = ?",
        (table.pk,),
    )
    connection.commit()
    connection.close()
    return table.pk


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- a child: one mode's requests, its own peak RSS -----------------------------------------


def answer_for(mode: str):
    """The history as the mode serves it: every partition (before) or bounded (after)."""
    from partdash.metrics.folded_history import folded_history
    from partdash.metrics.history import table_history

    return table_history if mode == "before" else folded_history


def request(mode: str, table_id: int, metric: str, since: datetime) -> tuple[float, dict]:
    """One request's work as the view does it: the table, the answer, its JSON; ms."""
    from django.db import connection
    from rest_framework.renderers import JSONRenderer

    from partdash.metrics.models import PartitionedTable

    started = time.monotonic()
    table = PartitionedTable.objects.get(pk=table_id)
    answer = answer_for(mode)(table, metric, since)
    body = JSONRenderer().render(answer)
    ms = (time.monotonic() - started) * 1000
    figures = {
        "cells": len(answer["points"]) * len(answer["partitions"]),
        "bytes": len(body),
        "resolution": answer["resolution"],
    }
    connection.close()
    return ms, figures


def child(mode: str, clients: int, requests: int, table_id: int, since: datetime) -> dict:
    import django

    django.setup()
    from partdash.metrics.models import PartitionedTable

    PartitionedTable.objects.get(pk=table_id)  # the ORM and the code loaded: the baseline
    baseline = peak_rss_mb()
    times: dict[str, list[float]] = {metric: [] for metric in METRICS}
    shapes: dict[str, dict] = {}

    def viewer(rounds: int) -> None:
        for _ in range(rounds):
            for metric in METRICS:
                ms, shapes[metric] = request(mode, table_id, metric, since)
                times[metric].append(ms)

    threads = [threading.Thread(target=viewer, args=(requests,)) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "baseline_rss_mb": round(baseline),
        "peak_rss_mb": round(peak_rss_mb()),
        "metrics": {
            metric: {
                "requests": len(times[metric]),
                "p50_ms": round(statistics.median(times[metric])),
                "p95_ms": round(p95(times[metric])),
                **shapes[metric],
            }
            for metric in METRICS
        },
    }


def run_child(env: dict, mode: str, clients: int, requests: int, table_id: int, since) -> dict:
    """`child` in a new process; its one JSON line."""
    command = [
        sys.executable,
        __file__,
        "--child",
        mode,
        str(clients),
        str(requests),
        str(table_id),
        since.isoformat(),
    ]
    done = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


# -- the parent: the store, then each mode's children, side by side -----------------------


def option(name: str, default: int) -> int:
    if name in sys.argv:
        return int(sys.argv[sys.argv.index(name) + 1])
    return default


def build_store(env: dict, hours: int) -> tuple[int, dict]:
    """The store filled and rolled up; the table's id and what that took."""
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT)
    os.environ.update(env)
    import django

    django.setup()
    from django.conf import settings

    from partdash.metrics.models import PartitionSample
    from partdash.metrics.rollups import roll_up_all

    started = time.monotonic()
    table_id = fill(Path(settings.DATABASES["default"]["NAME"]), hours)
    filled = time.monotonic() - started
    log(f"filled in {filled:.0f} s; rolling up")
    started = time.monotonic()
    roll_up_all(seconds=3600)
    rolled = time.monotonic() - started
    log(f"rolled up in {rolled:.0f} s")
    store = {
        "samples": PartitionSample.objects.count(),
        "fill_s": round(filled, 1),
        "rollup_s": round(rolled, 1),
    }
    return table_id, store


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        mode, clients, requests, table_id, since = sys.argv[2:7]
        answer = child(
            mode, int(clients), int(requests), int(table_id), datetime.fromisoformat(since)
        )
        print(json.dumps(answer))
        return 0
    hours = option("--hours", HOURS)
    before_requests = option("--before-requests", REQUESTS["before"])
    args = [a for a in sys.argv[1:] if not a.startswith("--") and not a.isdigit()]
    var_dir = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="wide-history-"))
    env = production_env(var_dir)
    table_id, store = build_store(env, hours)
    since = datetime.now(UTC) - timedelta(hours=24)
    figures: dict = {"partitions": PARTITIONS, "hours": hours, **store}
    for mode, requests in (("before", before_requests), ("after", REQUESTS["after"])):
        log(f"{mode}: one viewer, {requests} requests per metric")
        one = run_child(env, mode, 1, requests, table_id, since)
        log(f"{mode}: {CLIENTS} viewers at once")
        eight = run_child(env, mode, CLIENTS, 1, table_id, since)
        figures[mode] = {"one_viewer": one, "eight_at_once": eight}
    print(json.dumps(figures))
    return report(figures)


def report(figures: dict) -> int:
    """A line per metric and mode, side by side; 0 when the bounded answer meets its
    targets (one viewer's p95 under 1 s; 8 at once within 1.5x one request's peak RSS
    and under half the old one's)."""
    print(
        f"wide history: {PARTITIONS:,} partitions, {figures['samples']:,} samples over "
        f"{figures['hours']} h of polls, a 24 h window (fill {figures['fill_s']:.0f} s, "
        f"roll-up {figures['rollup_s']:.0f} s)"
    )
    for metric in METRICS:
        cells = []
        for mode in ("before", "after"):
            one = figures[mode]["one_viewer"]["metrics"][metric]
            cells.append(
                f"{mode} p50 {one['p50_ms']:>6,} ms p95 {one['p95_ms']:>6,} ms "
                f"{one['cells']:>9,} cells {one['bytes'] / 2**20:6.2f} MB ({one['resolution']})"
            )
        print(f"  {metric:18} " + "  |  ".join(cells))
    rss = {}
    for mode in ("before", "after"):
        one, eight = figures[mode]["one_viewer"], figures[mode]["eight_at_once"]
        rss[mode] = (one["peak_rss_mb"], eight["peak_rss_mb"], eight["baseline_rss_mb"])
        p95_eight = max(m["p95_ms"] for m in eight["metrics"].values())
        print(
            f"  {mode:6} peak RSS: one viewer {one['peak_rss_mb']:,} MB, {CLIENTS} at once "
            f"{eight['peak_rss_mb']:,} MB (process at rest {eight['baseline_rss_mb']} MB; "
            f"p95 of the {CLIENTS} {p95_eight:,} ms)"
        )
    after_p95 = max(m["p95_ms"] for m in figures["after"]["one_viewer"]["metrics"].values())
    flat = rss["after"][1] <= 1.5 * rss["after"][0] and rss["after"][1] < rss["before"][1] / 2
    ok = after_p95 < 1000 and flat
    print(
        f"  [one viewer p95 < 1 s: {'PASS' if after_p95 < 1000 else 'FAIL'}] "
        f"[{CLIENTS} at once flat (<= 1.5x one) and under half the old: "
        f"{'PASS' if flat else 'FAIL'}]"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
