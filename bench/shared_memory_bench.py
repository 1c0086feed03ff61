"""Issue 25's fleet figure: polls of several large servers through two Celery workers
started as two worker hosts would be, each poll queued with the REST API's "poll now".

Three MariaDBs of 32,000 HASH partitions each (by default) are polled round robin, one
poll at a time, by two workers (`w1@`, `w2@`, concurrency 4 each: 8 children) sharing
Redis (the broker and the shared poll memory) and a SQLite store, behind gunicorn. Which
child runs a poll is the broker's choice, so most polls land on a child that did not poll
that server last: what each poll costs then is what the shared poll memory is for
(`partdash.polling.pollmemory`).

Side by side, in one run, each ratio to the floor read right before that poll (the cheap
sources, every row, PyMySQL):
- quiet polls (nothing written since the last poll of that server);
- polls after 1% of that server's partitions were written;
- the first poll of each server after both workers were restarted (every child new), the
  servers quiet again (the pages written flushed and the statistics InnoDB recalculates
  after writes settled, what that changed stored by two polls of each);
- quiet polls with the shared memory switched off (PARTDASH_SHARE_POLL_MEMORY=0, both
  workers restarted with it): the polls as they were before it.
And the peak resident memory of any worker child, sampled after every poll. Each poll's
line says how many partitions it changed, its stages (seconds, and the child's peak
memory once each ended), and the CPU seconds of reading the memory back and of the
cyclic collector (bench/poll_probe.py).

Usage: shared_memory_bench.py [--servers 3] [--tables 250] [--partitions 128]
       [--ports P1,P2,P3 (servers built already)] [--keep] [--json PATH]
Exit status 1 when a target fails.
"""

import argparse
import contextlib
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path[:0] = [str(ROOT), str(BENCH)]

from fleet_processes import BIN, Processes  # noqa: E402
from worker_bench import (  # noqa: E402
    INTERVAL,
    POLL_TIMEOUT,
    SNAPSHOT_EVERY,
    environment,
    poll_records,
    post_poll,
    prepare_django,
    run_bench,
)

from tests.services import RedisServer, free_port, log_tail, wait_for  # noqa: E402

CONCURRENCY = 4  # per worker, make up's default
WORKERS = 2
TARGETS = {  # kind -> (median at most, worst at most), as ratios to the floor
    "quiet": (0.5, 1.0),
    "written": (0.8, None),
    "restart": (None, 1.5),
}
PEAK_CHILD_MB = 300


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class TwoWorkers(Processes):
    """Two Celery workers named as two hosts' would be (bench/poll_probe.py: partdash's
    app plus a record of each poll), and gunicorn; no beat (each poll is one queued here)."""

    def start(self) -> "TwoWorkers":
        self.start_workers()
        web = [str(BIN / "gunicorn"), "partdash.wsgi", "--bind", f"127.0.0.1:{self.port}"]
        web += ["--workers", "2", "--threads", "4", "--graceful-timeout", "3"]
        self._spawn("web", [*web, "--error-logfile", "-", "--no-control-socket"])
        return self

    def start_workers(self) -> None:
        for number in range(1, WORKERS + 1):
            worker = [str(BIN / "celery"), "-A", "poll_probe", "worker", "--loglevel=INFO"]
            worker += [f"--concurrency={CONCURRENCY}", "-n", f"host{number}@%h"]
            log = self.run_dir / f"worker{number}.log"
            if log.exists():  # a restart: its readiness is read from the new log
                log.rename(log.with_suffix(f".{time.time_ns()}.log"))
            self._spawn(f"worker{number}", worker)

    def restart_workers(self) -> None:
        """Stop both workers (warm shutdown), start them again and wait until ready."""
        workers = {name: proc for name, proc in self.running.items() if name.startswith("worker")}
        for proc in workers.values():
            proc.terminate()
        for proc in workers.values():
            proc.wait(timeout=60)
        self.start_workers()
        self.wait_until_ready()


def _short(stage: str) -> str:
    """A poll stage's name in a word or two ("reading the shared poll memory": shared)."""
    for long in ("reading the ", " poll memory", " poll", " and analysing the snapshot"):
        stage = stage.replace(long, "")
    return stage.replace("sharing the", "sharing")


def peak_mb(pid: int) -> float | None:
    """A process's peak resident memory since it started (VmHWM), in MB."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def build_servers(count: int, tables: int, partitions: int, rows: int, stack) -> list[int]:
    from fleet import create_tables, settle, start_server

    servers = [start_server() for _ in range(count)]
    for server in servers:
        stack.callback(server.stop)
    ports = [server.port for server in servers]
    say(f"  creating {tables} tables x {partitions} HASH partitions on each of {ports}")
    threads = [
        threading.Thread(target=create_tables, args=(port, tables, partitions, rows))
        for port in ports
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for port in ports:
        settle(port)
    return ports


def register(ports: list[int]) -> list[int]:
    """The monitored servers, none due before a day (each poll here is one queued)."""
    from datetime import timedelta

    from django.utils import timezone

    from partdash.servers.models import Server

    ids = []
    for number, port in enumerate(ports):
        server = Server(name=f"big{number}", host="127.0.0.1", port=port, user="root")
        server.poll_interval, server.enabled = INTERVAL, False
        server.set_password("")
        server.save()
        later = timezone.now() + timedelta(days=1)
        Server.objects.filter(pk=server.pk).update(enabled=True, next_poll_at=later)
        ids.append(server.pk)
    return ids


class Fleet:
    def __init__(self, options, processes: TwoWorkers, base: str, token: str, servers: dict):
        self.options = options
        self.processes = processes
        self.base = base
        self.token = token
        self.servers = servers  # id -> port
        self.poll_log = processes.run_dir / "polls.jsonl"
        self.polls: list[dict] = []
        self.last_child: dict[int, int] = {}  # server id -> pid of the child that polled it

    def records(self) -> list[dict]:
        return poll_records(self.poll_log)

    def floor(self, server_id: int) -> float:
        from poll_runner import floor_seconds

        from partdash.mysql.connection import target_for
        from partdash.servers.models import Server

        return floor_seconds(target_for(Server.objects.get(pk=server_id)))

    def poll(self, server_id: int, kind: str, with_floor: bool = True) -> dict:
        """Read the floor, POST poll now, wait for the snapshot and the task's end."""
        from partdash.metrics.models import ServerSnapshot

        floor = self.floor(server_id) if with_floor else None
        snapshots = ServerSnapshot.objects.filter(server_id=server_id)
        last = snapshots.order_by("-pk").values_list("pk", flat=True).first() or 0
        started = time.monotonic()
        post_poll(self.base, self.token, server_id)
        deadline = started + POLL_TIMEOUT
        while (snapshot := snapshots.filter(pk__gt=last).first()) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no snapshot {POLL_TIMEOUT:g} s after queuing a {kind} poll")
            self.processes.check()
            time.sleep(SNAPSHOT_EVERY)
        mine = {}
        while "end" not in mine:
            mine = {r["event"]: r for r in self.records() if r["task_id"] == snapshot.poll_id}
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {kind} poll's task did not end ({mine})")
            time.sleep(SNAPSHOT_EVERY)
        pid = mine["start"]["pid"]
        record = {
            "kind": kind,
            "server": server_id,
            "floor": floor,
            "task_seconds": mine["end"]["at"] - mine["start"]["at"],
            "worker": mine["start"]["worker"],
            "pid": pid,
            "same_child": self.last_child.get(server_id) == pid,
            "changed": snapshot.changed,
            "partitions": snapshot.partitions,
            "stages": mine["end"].get("stages", {}),
            "cpu": mine["end"].get("cpu", {}),
        }
        record["ratio"] = record["task_seconds"] / floor if floor else None
        self.last_child[server_id] = pid
        record["child_peak_mb"] = peak_mb(pid)  # its high-water mark so far
        self.polls.append(record)
        say(
            f"  {kind:<8} server {server_id} task {record['task_seconds']:6.2f} s"
            + (f", floor {floor:5.2f} s, {record['ratio']:.2f}x" if floor else "")
            + f", {record['worker'].split('@')[0]} child {pid}"
            + (" (polled it last)" if record["same_child"] else "")
            + f", {record['changed']} changed; "
            + ", ".join(
                f"{_short(name)} {figures['seconds']:.2f} ({figures['peak_mb']:.0f} MB)"
                for name, figures in record["stages"].items()
            )
            + "".join(f", {name} CPU {seconds:.2f}" for name, seconds in record["cpu"].items())
        )
        return record

    def run(self) -> dict:
        from fleet import settle, statistics_settled, write_to_some_partitions

        options, ids = self.options, list(self.servers)
        # A first poll reads every definition, a second turns unknown rates into zeros, a
        # third zeroes the rates the second measured (the first poll's own reads): then
        # a server is quiet.
        say("  first, second and third poll of each server")
        for kind in ("first", "second", "settle"):
            for server_id in ids:
                self.poll(server_id, kind, with_floor=False)
        for _ in range(options.quiet_rounds):
            for server_id in ids:
                self.poll(server_id, "quiet")
        rounds = int(time.time())
        for number in range(options.written_rounds):
            for server_id in ids:
                write_to_some_partitions(
                    self.servers[server_id],
                    options.tables,
                    options.partitions,
                    0.01,
                    rounds + number,
                )
                self.poll(server_id, "written")
        # After writes InnoDB flushes the pages written and recalculates statistics in
        # the background for a while: both are waited for (flushing made to run now).
        # Two polls of each store what they changed: the restart's polls are of quiet
        # servers, so that they measure reading the memory back (what the written polls
        # measure, storing what changed, is not counted twice).
        waited = max(settle(port) + statistics_settled(port) for port in self.servers.values())
        say(f"  the servers settled ({waited:.0f} s); two polls of each store what changed")
        # (The second once set the rates the first measured back to 0, which a poll no
        # longer writes: kept, so that runs before and after compare.)
        for _ in range(2):
            for server_id in ids:
                self.poll(server_id, "settle", with_floor=False)
        say("  both workers restarted: every child new")
        self.processes.restart_workers()
        for server_id in ids:
            self.poll(server_id, "restart")
        for _ in range(options.quiet_rounds):  # and quiet again, after the restart
            for server_id in ids:
                self.poll(server_id, "quiet")
        say("  both workers restarted with the shared memory off")
        import os

        os.environ["PARTDASH_SHARE_POLL_MEMORY"] = "0"  # (the workers' environment)
        self.processes.restart_workers()
        for server_id in ids:
            self.poll(server_id, "off-first", with_floor=False)
        for _ in range(options.quiet_rounds):
            for server_id in ids:
                self.poll(server_id, "off-quiet")
        return {
            "polls": self.polls,
            "workers": WORKERS,
            "concurrency": CONCURRENCY,
            "servers": len(ids),
            "partitions_per_server": options.tables * options.partitions,
        }


def measure(options, stack: contextlib.ExitStack, run_dir: Path) -> dict:
    if options.ports:
        ports = [int(port) for port in options.ports.split(",")]
    else:
        ports = build_servers(
            options.servers, options.tables, options.partitions, options.rows, stack
        )
    redis = RedisServer().start()
    stack.callback(redis.stop)
    env = environment(run_dir, redis.url)
    prepare_django(env)
    from api_bench import issue_credentials

    token, _ = issue_credentials()
    ids = register(ports)
    web_port = free_port()
    processes = TwoWorkers(run_dir, options, web_port)
    stack.callback(processes.stop)
    say(f"  starting {WORKERS} workers (concurrency {CONCURRENCY} each) and gunicorn")
    processes.start()
    processes.wait_until_ready()
    base = f"http://127.0.0.1:{web_port}"
    from worker_bench import answers

    if not wait_for(lambda: answers(f"{base}/api/v1/servers/", token), timeout=60, interval=0.2):
        raise RuntimeError(f"gunicorn does not answer:\n{log_tail(run_dir / 'web.log')}")
    figures = Fleet(options, processes, base, token, dict(zip(ids, ports, strict=True))).run()
    figures["redis_memory_bytes"] = redis_memory(redis.url)
    processes.stop()
    return figures


def redis_memory(url: str) -> dict:
    """The shared poll memory's size in Redis: each server's header and live parts."""
    import msgpack
    import redis

    client = redis.Redis.from_url(url)
    sizes = {}
    for key in client.scan_iter("partdash:memory:*"):
        name = key.decode()
        if name.count(":") == 2:  # a header: its parts' sizes
            header = msgpack.unpackb(client.get(key))
            # (each piece: its whole part and the deltas on top, `pollmemory.Part`)
            chains = header["parts"].values()
            parts = [f"{name}:{part}" for chain in chains for part in chain]
            sizes[name] = len(client.get(key)) + sum(client.strlen(p) for p in parts)
    return sizes


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(figures: dict) -> bool:
    polls = figures["polls"]
    checks = []
    print()
    print(
        f"(7f) a fleet through two worker hosts: {figures['servers']} servers of "
        f"{figures['partitions_per_server']:,} partitions, polled round robin with poll now "
        f"(API), {figures['workers']} workers x concurrency {figures['concurrency']}, Redis, "
        "SQLite store; each poll's task time against the floor read right before it"
    )
    labels = {
        "quiet": "quiet poll (nothing written since)",
        "written": "poll after 1% of partitions were written",
        "restart": "first poll after both workers restarted",
        "off-quiet": "quiet poll, shared memory off (as before)",
    }
    for kind, label in labels.items():
        mine = [p for p in polls if p["kind"] == kind]
        if not mine:
            continue
        ratios = [p["ratio"] for p in mine]
        middle, worst = median(ratios), max(ratios)
        notes = []
        most, worst_target = TARGETS.get(kind, (None, None))
        if most is not None:
            checks.append(middle <= most)
            notes.append(f"median target <= {most:g}x: {verdict(middle <= most)}")
        if worst_target is not None:
            checks.append(worst <= worst_target)
            notes.append(f"worst target <= {worst_target:g}x: {verdict(worst <= worst_target)}")
        same = sum(p["same_child"] for p in mine)
        changed = sum(bool(p["changed"]) for p in mine)
        print(
            f"(7f.{kind}) {label:<44} median {middle:.2f}x, worst {worst:.2f}x of "
            f"{len(mine)} (floor median {median(p['floor'] for p in mine):.2f} s); on the "
            f"child that polled that server last: {same}/{len(mine)}"
            + (f"; {changed} changed partitions" if "quiet" in kind else "")
            + (f"  [{'; '.join(notes)}]" if notes else "")
        )
        print(f"        raw: {[round(r, 2) for r in ratios]}")
    for label, shared in (("shared memory on", True), ("off (as before)", False)):
        peaks = [
            p["child_peak_mb"]
            for p in polls
            if p["child_peak_mb"] is not None and p["kind"].startswith("off") != shared
        ]
        if not peaks:
            continue
        peak = max(peaks)
        if shared:
            checks.append(peak < PEAK_CHILD_MB)
        target = f" [target < {PEAK_CHILD_MB} MB: {verdict(peak < PEAK_CHILD_MB)}]"
        print(
            f"(7f.memory) peak resident memory of a worker child, {label}: {peak:.0f} MB"
            + (target if shared else "")
        )
    sizes = figures.get("redis_memory_bytes") or {}
    if sizes:
        print(
            f"(7f.redis) the shared poll memory in Redis per server: "
            f"{', '.join(f'{size / 2**20:.2f} MB' for size in sizes.values())}"
        )
    return all(checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--tables", type=int, default=250)
    parser.add_argument("--partitions", type=int, default=128)
    parser.add_argument("--rows", type=int, default=256, help="rows per table")
    parser.add_argument("--ports", help="servers built already (comma-separated ports)")
    parser.add_argument("--quiet-rounds", type=int, default=4)
    parser.add_argument("--written-rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs)")
    parser.add_argument("--json", type=Path, help="also write every figure there")
    options = parser.parse_args(argv)
    options.workers, options.concurrency = WORKERS, CONCURRENCY  # (for `Processes`)
    label, logs = "(7f) a fleet through two worker hosts", ["worker1", "worker2", "web"]
    return run_bench(options, measure, report, label, logs)


if __name__ == "__main__":
    sys.exit(main())
