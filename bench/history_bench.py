"""`make bench`'s history figures (issue 24, point 4): a table of 128 partitions polled
every 60 s for 7 days, every partition changing at every poll (1.29M samples), asked for
its history over 1 hour, 24 hours and 7 days, each metric, of gunicorn as `make up` serves
it: by one client (the target: p95 <= 300 ms), then by 8 at a time; and /login/ while 8
viewers ask for 7 days over and over. Prints one JSON object and a line per figure; exits
1 when a target is missed.

Usage: history_bench.py [VAR_DIR]   (a fresh temporary one by default)
"""

import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from api_bench import (  # noqa: E402
    fresh_store,
    issue_credentials,
    start_web,
    summary,
    timed_get,
    timed_status,
)

PARTITIONS = 128
DAYS = 7
POLL_SECONDS = 60
CLIENTS = 8
REQUESTS = 80  # per window and metric, 8 at a time
SEQUENTIAL = 30  # per window and metric, one at a time
TARGET_P95_MS = 300
WINDOWS = {
    "1 hour": timedelta(hours=1),
    "24 hours": timedelta(hours=24),
    "7 days": timedelta(days=7),
}
METRICS = ("rows", "rows_changed_per_s", "write_bytes_per_s", "data_bytes")


def insert_polls(connection, server_id: int, start: datetime, polls: int) -> list[int]:
    """`polls` polls of a server, POLL_SECONDS apart from `start`, in bulk SQL; their ids
    in time order."""
    connection.executemany(
        "INSERT INTO metrics_serversnapshot (server_id, taken_at, poll_id, resolution, flavor,"
        " version, variables, status_counters, innodb_cmp, sources, changed,"
        " definitions_read, files_cover_partitions, warnings, seconds, pressure)"
        " VALUES (?, ?, ?, 'raw', 'mariadb', '10.11', '{}', '{}', '[]', '{}', 0, 0, 1, '[]',"
        " 0.1, '{}')",
        (
            (
                server_id,
                (start + timedelta(seconds=POLL_SECONDS * i)).isoformat(" "),
                uuid.uuid4().hex,
            )
            for i in range(polls)
        ),
    )
    return [
        row[0]
        for row in connection.execute(
            "SELECT id FROM metrics_serversnapshot WHERE server_id = ? ORDER BY taken_at",
            (server_id,),
        )
    ]


def fill(db_path: Path) -> tuple[int, int]:
    """The server, its table, 128 partitions and 7 days of polls, written straight into
    the SQLite store (bulk SQL: 1.29M samples in seconds). Returns (server, table) ids."""
    from partdash.servers.models import Server

    server = Server(name="history", host="127.0.0.1", port=1, user="monitor")
    server.set_password("")
    server.save()
    from partdash.metrics.models import Partition, PartitionedTable

    now = datetime.now(UTC)
    table = PartitionedTable.objects.create(
        server=server,
        schema="shop",
        name="events",
        method="HASH",
        partition_count=PARTITIONS,
        first_seen_at=now - timedelta(days=DAYS),
    )
    Partition.objects.bulk_create(
        Partition(table=table, key=f"p{i}", name=f"p{i}", ordinal=i, rows=0)
        for i in range(PARTITIONS)
    )
    partition_ids = list(table.partitions.order_by("ordinal").values_list("pk", flat=True))
    polls = DAYS * 24 * 3600 // POLL_SECONDS
    start = now - timedelta(seconds=POLL_SECONDS * polls)
    connection = sqlite3.connect(db_path)
    connection.execute("PRAGMA journal_mode=WAL")
    snapshot_ids = insert_polls(connection, server.pk, start, polls)

    def samples():
        for i, snapshot_id in enumerate(snapshot_ids):
            for n, partition_id in enumerate(partition_ids):
                rows = 1000 + i * (n + 1)
                yield (
                    partition_id,
                    snapshot_id,
                    rows,
                    rows * 100,
                    i * (n + 1),
                    i * 16384 * (n + 1),
                )

    connection.executemany(
        "INSERT INTO metrics_partitionsample (partition_id, snapshot_id, rows, data_bytes,"
        " modified_counter, write_bytes) VALUES (?, ?, ?, ?, ?, ?)",
        samples(),
    )
    connection.commit()
    connection.close()
    return server.pk, table.pk


def rss_mb(pid: int) -> float:
    process = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / 2**20


def main() -> int:
    var_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="history-"))
    fresh_store(var_dir)
    env = dict(os.environ)
    from django.conf import settings

    started = time.monotonic()
    server_id, table_id = fill(Path(settings.DATABASES["default"]["NAME"]))
    filled = time.monotonic() - started
    from partdash.metrics.models import PartitionSample
    from partdash.metrics.rollups import roll_up_all

    samples = PartitionSample.objects.count()
    started = time.monotonic()
    roll_up_all(seconds=3600)
    first_rollup = time.monotonic() - started
    started = time.monotonic()
    roll_up_all(seconds=3600)
    next_rollup = time.monotonic() - started
    token, _ = issue_credentials()

    api = {"Authorization": f"Token {token}"}
    web, base = start_web(env, api)
    try:
        rss_before = rss_mb(web.pid)
        results, sizes = {}, {}
        now = datetime.now(UTC)
        for label, window in WINDOWS.items():
            since = (now - window).isoformat().replace("+00:00", "Z")
            for metric in METRICS:
                url = f"{base}/api/v1/tables/{table_id}/history/?metric={metric}&since={since}"
                with urllib_open(url, api) as body:
                    answer = json.loads(body)
                sizes[f"{label} {metric}"] = {
                    "resolution": answer["resolution"],
                    "points": len(answer["points"]),
                    "bytes": len(body),
                }
                alone = [timed_get(url, api) for _ in range(SEQUENTIAL)]
                with ThreadPoolExecutor(CLIENTS) as pool:
                    times = list(pool.map(lambda _, u=url: timed_get(u, api), range(REQUESTS)))
                results[f"{label} {metric}"] = summary(alone) | {"8 clients": summary(times)}
        # /login/ while 8 viewers ask for 7 days of history, over and over.
        stop = threading.Event()
        since = (now - WINDOWS["7 days"]).isoformat().replace("+00:00", "Z")
        url = f"{base}/api/v1/tables/{table_id}/history/?metric=write_bytes_per_s&since={since}"

        def viewer() -> None:
            while not stop.is_set():
                timed_get(url, api)

        viewers = [threading.Thread(target=viewer, daemon=True) for _ in range(CLIENTS)]
        for thread in viewers:
            thread.start()
        answered = [timed_status(f"{base}/login/", {}) for _ in range(30)]
        login = summary([ms for ms, _ in answered]) | {
            "errors": sum(1 for _, status in answered if status != 200)
        }
        rss_loaded = rss_mb(web.pid)
        stop.set()
        for thread in viewers:
            thread.join(timeout=60)
    finally:
        web.terminate()
        web.wait(timeout=30)

    figures = {
        "samples": samples,
        "fill_s": round(filled, 1),
        "first_rollup_s": round(first_rollup, 1),
        "next_rollup_s": round(next_rollup, 2),
        "history": results,
        "answers": sizes,
        "login_under_8_history_viewers": login,
        "web_rss_mb": {"before": round(rss_before), "under_load": round(rss_loaded)},
    }
    print(json.dumps(figures))
    worst = max(r["p95_ms"] for r in results.values())
    print(f"history: {samples:,} samples of {PARTITIONS} partitions over {DAYS} days")
    print(f"  first roll-up of all of it: {first_rollup:.1f} s; the next: {next_rollup:.2f} s")
    for label, figure in results.items():
        answer = sizes[label]
        crowd = figure["8 clients"]
        print(
            f"  {label:28} p50 {figure['median_ms']:4.0f} ms  p95 {figure['p95_ms']:4.0f} ms  "
            f"(8 clients: p50 {crowd['median_ms']:4.0f}, p95 {crowd['p95_ms']:4.0f})  "
            f"{answer['resolution']:>5} {answer['points']:5} points "
            f"{answer['bytes'] / 1024:7.0f} KB"
        )
    passed = "PASS" if worst <= TARGET_P95_MS else "FAIL"
    print(f"  worst p95, one client: {worst:.0f} ms [target <= {TARGET_P95_MS} ms: {passed}]")
    print(
        f"  /login/ under 8 history viewers: p50 {login['median_ms']:.0f} ms, "
        f"p95 {login['p95_ms']:.0f} ms, {login['errors']} not 200; "
        f"web RSS {rss_before:.0f} -> {rss_loaded:.0f} MB"
    )
    return 0 if worst <= TARGET_P95_MS else 1


class urllib_open:
    """The body of a GET, as bytes."""

    def __init__(self, url: str, headers: dict):
        import urllib.request

        self.response = urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=120
        )

    def __enter__(self) -> bytes:
        return self.response.read()

    def __exit__(self, *exc_info) -> None:
        self.response.close()


if __name__ == "__main__":
    sys.exit(main())
