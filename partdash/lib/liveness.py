"""Whether a Celery worker is alive, not merely present: it answers (a ping through the
broker, answered by its main process's event loop) and it consumes (while tasks wait
in the queue, it started or finished one within the stall limit, or every slot of its
pool runs a task).

A worker records when it last started and finished a task in Redis
(`partdash:worker:NODE`, `record_task`); `/metrics` exports the finish, and the
watchers (`make up`'s supervisor, `manage.py checkworker` for systemd and Docker) judge
with `WorkerWatch`. A process stopped by SIGSTOP, a stuck main process, or a consumer
that stopped reading the queue after a Redis restart (kombu 5.7, celery/celery#10205)
all fail it, and keep failing it: after PARTDASH_WORKER_STALL_SECONDS of that, the
watcher restarts the worker (`stop_hard`).

Neither Django nor a partdash module is imported here: `scripts/supervise.py` loads
this file by its path, without the Django project.
"""

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

KEY_PREFIX = "partdash:worker:"
# A worker's record outlives it by this long (a removed worker leaves /metrics then).
KEY_TTL_SECONDS = 7 * 86400
QUEUE = "celery"  # Celery's default queue: the only one partdash uses


def worker_key(node: str) -> str:
    return f"{KEY_PREFIX}{node}"


def record_task(client: redis.Redis, node: str, event: str, now: float | None = None) -> None:
    """`event` ("started" or "finished") of a task on worker `node`, now."""
    key = worker_key(node)
    pipe = client.pipeline(transaction=False)
    pipe.hset(key, event, f"{time.time() if now is None else now:.3f}")
    pipe.expire(key, KEY_TTL_SECONDS)
    pipe.execute()


@dataclass(frozen=True)
class Activity:
    """When a worker last started and last finished a task (Unix times; None: never, or
    not since Redis lost its records)."""

    started: float | None = None
    finished: float | None = None

    @property
    def latest(self) -> float | None:
        known = [t for t in (self.started, self.finished) if t is not None]
        return max(known) if known else None


def _time(raw: bytes | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def activity_of(client: redis.Redis, node: str) -> Activity:
    started, finished = client.hmget(worker_key(node), ["started", "finished"])
    return Activity(_time(started), _time(finished))


def every_activity(client: redis.Redis) -> dict[str, Activity]:
    """Every worker's record, by node name (`/metrics`)."""
    found = {}
    for key in client.scan_iter(f"{KEY_PREFIX}*", count=100):
        node = key.decode(errors="replace")[len(KEY_PREFIX) :]
        found[node] = activity_of(client, node)
    return found


# -- judging -------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """What a watcher saw of one worker at one check."""

    answered: bool  # the worker answered a ping
    waiting: int  # tasks waiting in the queue
    activity: Activity
    busy: bool = False  # every slot of its pool runs a task (asked only when it matters)


class WorkerWatch:
    """One worker's failures over time, seen at each check: `verdict` says why to restart
    it once it has not answered for `stall` seconds in a row, or has not consumed for
    `stall` seconds: tasks waited all along, it started and finished none (its record in
    Redis, which a Redis restart empties), and its pool had a free slot."""

    def __init__(self, stall: float, since: float | None = None) -> None:
        self.stall = stall
        # The last time it was seen consuming, or with nothing to consume (at first, its
        # start: a worker gets `stall` seconds to come up).
        self.progress = time.time() if since is None else since
        self.silent_since: float | None = None  # first ping unanswered, in a row

    def _progressed(self, waiting: int, activity: Activity, now: float) -> float:
        if waiting <= 0:
            return now
        return max(self.progress, activity.latest or 0.0)

    def suspects(self, waiting: int, activity: Activity, now: float) -> bool:
        """Whether the queue and its record say it may not consume (then ask its pool)."""
        return now - self._progressed(waiting, activity, now) >= self.stall

    def broker_down(self, now: float) -> None:
        """The broker does not answer: no ping can be, nothing can be consumed, and the
        worker is not to blame; its time starts again once the broker is back."""
        self.silent_since = None
        self.progress = now

    def verdict(self, seen: Observation, now: float) -> str | None:
        """Why to restart the worker, or None (and its progress noted)."""
        if not seen.answered:
            if self.silent_since is None:
                self.silent_since = now
            silent = now - self.silent_since
            if silent >= self.stall:
                return f"it has not answered a ping for {silent:.0f} s"
            return None
        self.silent_since = None
        self.progress = now if seen.busy else self._progressed(seen.waiting, seen.activity, now)
        idle = now - self.progress
        if idle < self.stall:
            return None
        plural = "" if seen.waiting == 1 else "s"
        return f"{seen.waiting} task{plural} waiting and none started or finished for {idle:.0f} s"


# -- asking the worker and the broker --------------------------------------------------

# A running task counts as work in progress until the poll's hard time limit, and this
# margin, have passed (`BrokerProbe`'s `longest_task`).
TASK_MARGIN = 30.0


def longest_task(poll_time_limit: float) -> float:
    """Seconds a running task may be at work: PARTDASH_POLL_TIME_LIMIT and a margin."""
    return poll_time_limit + TASK_MARGIN


class BrokerProbe:
    """A worker as seen through the broker: a ping, the queue, its record, and (only when
    it matters) whether its pool is full. A broker that does not answer raises
    `redis.exceptions.RedisError` from `observe`: then nothing can be judged.

    `longest_task`: seconds past which a running task no longer counts as work in
    progress (a poll's hard time limit ends it before; a task without one that runs
    longer is stuck)."""

    def __init__(self, broker_url: str, longest_task: float, timeout: float = 1.0) -> None:
        from celery import Celery  # (here: the supervisor's import costs nothing otherwise)

        self.longest_task = longest_task
        self.timeout = timeout
        self.client = redis.Redis.from_url(
            broker_url, socket_timeout=3, socket_connect_timeout=3, health_check_interval=10
        )
        self.app = Celery("partdash-watch", broker=broker_url, set_as_current=False)
        self.app.conf.broker_connection_retry_on_startup = False
        self.app.conf.broker_connection_max_retries = 0

    def answered(self, node: str) -> bool:
        try:
            with self.app.connection_for_write() as connection:
                replies = self.app.control.ping(
                    destination=[node], timeout=self.timeout, connection=connection
                )
        except Exception:  # noqa: BLE001 the broker, not the worker: told by `observe`
            return False
        return any(node in reply for reply in replies or [])

    def busy(self, node: str, now: float) -> bool:
        """Whether every slot of the worker's pool runs a task started within
        `longest_task` (then their time limits bound how long nothing finishes). Unknown
        counts as not busy."""
        with contextlib.suppress(Exception):
            with self.app.connection_for_write() as connection:
                inspect = self.app.control.inspect(
                    destination=[node], timeout=self.timeout, connection=connection
                )
                active = (inspect.active() or {}).get(node)
                stats = (inspect.stats() or {}).get(node) or {}
            slots = (stats.get("pool") or {}).get("max-concurrency")
            running = [
                task
                for task in active or []
                if now - (task.get("time_start") or now) < self.longest_task
            ]
            return bool(slots and len(running) >= slots)
        return False

    def observe(self, node: str, watch: WorkerWatch, now: float) -> Observation:
        waiting = int(self.client.llen(QUEUE))  # raises when the broker is down
        activity = activity_of(self.client, node)
        answered = self.answered(node)
        busy = answered and watch.suspects(waiting, activity, now) and self.busy(node, now)
        return Observation(answered, waiting, activity, busy)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
            self.app.close()


# -- restarting ------------------------------------------------------------------------


def stop_hard(pid: int, grace: float, exited: Callable[[], bool]) -> bool:
    """Stop a stalled worker: a TERM to its main process (its warm shutdown) and a CONT
    to it and its pool (a stopped process acts on no signal but KILL until it is
    continued), then, if it has not exited within `grace` seconds, a KILL to them all.
    Its pool is its process group when it leads one (as `make up` and tini start it),
    else it is signalled alone. True when the KILL was needed."""
    leads = _leads_its_group(pid)

    def send(number: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, number) if leads else os.kill(pid, number)

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    send(signal.SIGCONT)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if exited():
            return False
        time.sleep(0.1)
    send(signal.SIGKILL)
    return True


def _leads_its_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False
