"""Issue 37 (finding 6): the history of a table of 8,192 partitions (MariaDB's maximum),
answered partition by partition (before) and bounded per answer (after, what the API
serves: the 24 busiest and `other`), side by side in one process on one store. 24 hours
of polls 60 s apart; each poll changes a rotating sixteenth of the partitions (512), so
every partition changes at least every 16 minutes (every 5-minute rollup bucket holds
about 1,500 of them); rolled up as the worker would. Prints one JSON object and a line
per figure.

Usage: wide_history_bench.py [VAR_DIR] [--requests N]
"""

import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from api_bench import production_env  # noqa: E402

PARTITIONS = 8192
HOURS = 24
POLL_SECONDS = 60
ROTATION = 16  # a poll changes every 16th partition, in turn
REQUESTS = 20
CLIENTS = 8
METRICS = ("rows", "write_bytes_per_s")


def fill(db_path: Path) -> int:
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
        first_seen_at=now - timedelta(hours=HOURS),
    )
    Partition.objects.bulk_create(
        (
            Partition(table=table, key=f"p{i}", name=f"p{i}", ordinal=i, rows=0)
            for i in range(PARTITIONS)
        ),
        batch_size=2000,
    )
    ids = list(table.partitions.order_by("ordinal").values_list("pk", flat=True))
    polls = HOURS * 3600 // POLL_SECONDS
    start = now - timedelta(seconds=POLL_SECONDS * polls)
    connection = sqlite3.connect(db_path)
    connection.executemany(
        "INSERT INTO metrics_serversnapshot (server_id, taken_at, poll_id, resolution, flavor,"
        " version, variables, status_counters, innodb_cmp, sources, changed,"
        " definitions_read, files_cover_partitions, warnings, seconds, pressure)"
        " VALUES (?, ?, ?, 'raw', 'mariadb', '10.11', '{}', '{}', '[]', '{}', 0, 0, 1, '[]',"
        " 0.1, '{}')",
        (
            (
                server.pk,
                (start + timedelta(seconds=POLL_SECONDS * k)).isoformat(" "),
                uuid.uuid4().hex,
            )
            for k in range(polls)
        ),
    )
    snapshots = [
        row[0]
        for row in connection.execute(
            "SELECT id FROM metrics_serversnapshot WHERE server_id = ? ORDER BY taken_at",
            (server.pk,),
        )
    ]

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


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(row for row in status if row.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def timed(call) -> tuple[float, dict]:
    started = time.monotonic()
    answer = call()
    return (time.monotonic() - started) * 1000, answer


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    var_dir = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="wide-history-"))
    env = production_env(var_dir)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT)
    import os

    os.environ.update(env)
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from partdash.metrics.folded_history import folded_history
    from partdash.metrics.history import table_history
    from partdash.metrics.models import PartitionedTable, PartitionSample
    from partdash.metrics.rollups import roll_up_all

    started = time.monotonic()
    table_id = fill(Path(settings.DATABASES["default"]["NAME"]))
    filled = time.monotonic() - started
    started = time.monotonic()
    roll_up_all(seconds=3600)
    rolled = time.monotonic() - started
    table = PartitionedTable.objects.get(pk=table_id)
    since = datetime.now(UTC) - timedelta(hours=24)
    figures: dict = {
        "samples": PartitionSample.objects.count(),
        "fill_s": round(filled, 1),
        "rollup_s": round(rolled, 1),
        "before": {},
        "after": {},
    }
    for metric in METRICS:
        rss = current_rss_mb()
        ms, answer = timed(lambda m=metric: table_history(table, m, since))
        figures["before"][metric] = {
            "ms": round(ms),
            "cells": len(answer["points"]) * len(answer["partitions"]),
            "bytes": len(json.dumps(answer)),
            "rss_growth_mb": round(current_rss_mb() - rss),
            "peak_rss_mb": round(rss_mb()),
        }
        del answer
    for metric in METRICS:
        times = []
        for _ in range(REQUESTS):
            ms, answer = timed(lambda m=metric: folded_history(table, m, since))
            times.append(ms)
        figures["after"][metric] = {
            "p50_ms": round(statistics.median(times)),
            "p95_ms": round(p95(times)),
            "cells": len(answer["points"]) * len(answer["partitions"]),
            "bytes": len(json.dumps(answer)),
            "resolution": answer["resolution"],
        }
    # 8 at once (threads of one process, as a gunicorn worker's): its RSS before and after.
    rss_before = current_rss_mb()
    crowd: list[float] = []

    def viewer() -> None:
        for metric in METRICS:
            crowd.append(timed(lambda m=metric: folded_history(table, m, since))[0])
        connection.close()

    threads = [threading.Thread(target=viewer) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    figures["eight_at_once"] = {
        "p95_ms": round(p95(crowd)),
        "rss_before_mb": round(rss_before),
        "rss_after_mb": round(current_rss_mb()),
    }
    print(json.dumps(figures))
    print(
        f"wide history: {PARTITIONS} partitions, {figures['samples']:,} samples over "
        f"{HOURS} h (fill {filled:.0f} s, roll-up {rolled:.0f} s)"
    )
    for metric in METRICS:
        b, a = figures["before"][metric], figures["after"][metric]
        print(
            f"  {metric:18} before {b['ms']:6} ms {b['cells']:>9,} cells "
            f"{b['bytes'] / 2**20:6.1f} MB (+{b['rss_growth_mb']} MB RSS)  |  after p50 "
            f"{a['p50_ms']} ms p95 {a['p95_ms']} ms {a['cells']:,} cells "
            f"{a['bytes'] / 1024:.0f} KB ({a['resolution']})"
        )
    eight = figures["eight_at_once"]
    ok = all(a["p95_ms"] < 1000 for a in figures["after"].values())
    print(
        f"  8 at once: p95 {eight['p95_ms']} ms; RSS {eight['rss_before_mb']} -> "
        f"{eight['rss_after_mb']} MB  [one viewer p95 < 1 s: {'PASS' if ok else 'FAIL'}]"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
