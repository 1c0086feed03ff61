"""The fleet benchmark's worker: partdash's own Celery app, plus a record of every poll.

`celery -A poll_probe worker` (with bench/ on PYTHONPATH) runs exactly what `make up`'s
`celery -A partdash worker` runs; this module only adds two signal receivers that append
one JSON line per poll start and end to $PARTDASH_BENCH_POLL_LOG, so the benchmark knows
when each poll began and when the next was due (their lateness), which worker ran it,
and whether it overlapped another poll of the same server, and how long each of the
poll's stages took (each `set_stage` of `partdash.polling.service` ends the one before).
A poll's start is the moment its worker child began the task (`task_prerun`): failed
polls store no snapshot, and `last_poll_at` is overwritten, so neither could give a
failing server's history.
"""

import gc
import json
import os
import time

from celery.signals import task_postrun, task_prerun

from partdash.celery import app

POLL_TASK = "partdash.polling.tasks.poll_server"  # the tasks cannot be imported before Django

__all__ = ["app"]

# This child's poll under way: its stages, (name, monotonic time it began), in order, and
# the child's peak resident memory (VmHWM, MB) when each began.
_stages: list[tuple[str, float]] = []
_peaks: list[float] = []
_cpu: dict[str, float] = {}  # the CPU seconds of what `_timed` times


def _peak_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


_gc_began: list[float] = []


def _gc_timed(phase: str, info: dict) -> None:
    """The cyclic collector's time within a poll's task, by generation (`gc.callbacks`)."""
    if phase == "start":
        _gc_began[:] = [time.process_time()]
    elif _gc_began:
        _add_cpu(f"gc{info['generation']}", time.process_time() - _gc_began[0])


def _record_stages() -> None:
    """Wrap the poll service's `set_stage` (imported once Django is set up, by then)."""
    from partdash.polling import service

    if getattr(service.set_stage, "recorded", False):
        return
    gc.callbacks.append(_gc_timed)
    original = service.set_stage

    def set_stage(doing: str) -> None:
        _stages.append((doing.split(" to ")[0], time.monotonic()))
        _peaks.append(_peak_mb())
        original(doing)

    set_stage.recorded = True  # type: ignore[attr-defined]
    service.set_stage = set_stage
    # Within the stages: reading the shared memory back, and making room for it.
    from partdash.polling import pollmemory
    from partdash.polling.memory import PollMemories

    PollMemories._make_room = _timed("make_room", PollMemories._make_room)  # type: ignore[method-assign]
    pollmemory.load = _timed("load", pollmemory.load)
    memory = pollmemory
    for name in (
        *("_unpack", "decode_tablespaces", "decode_file_io", "decode_kept", "decode_figures"),
        *("apply_buckets", "apply_kept", "apply_figures"),
    ):
        setattr(memory, name, _cpu_timed(name, getattr(memory, name)))


def _add_cpu(name: str, seconds: float) -> None:
    _cpu[name] = round(_cpu.get(name, 0.0) + seconds, 4)


def _cpu_timed(name: str, function):
    """`function`, its CPU seconds added to `name`'s."""

    def timed(*args, **kwargs):
        cpu = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            _add_cpu(name, time.process_time() - cpu)

    return timed


def _timed(name: str, function):
    """`function` as a stage of its own within the poll's, its CPU seconds counted too."""
    function = _cpu_timed(name, function)

    def timed(*args, **kwargs):
        began = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            _stages.append((name, began))
            _stages.append((f"after {name}", time.monotonic()))
            _peaks.extend([_peaks[-1] if _peaks else 0.0, _peak_mb()])

    return timed


def _stage_figures() -> dict[str, dict[str, float]]:
    """Each stage's seconds, and the child's peak memory once it ended (MB)."""
    ends = [at for _, at in _stages[1:]] + [time.monotonic()]
    figures: dict[str, dict[str, float]] = {}
    stages = zip(_stages, ends, [*_peaks[1:], _peak_mb()], strict=True)
    for (name, began), end, peak in stages:
        was = figures.get(name, {}).get("seconds", 0.0)
        figures[name] = {"seconds": round(was + end - began, 4), "peak_mb": round(peak, 1)}
    return figures


def _append(record: dict) -> None:
    """One line per write with O_APPEND: lines from several processes never interleave."""
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(os.environ["PARTDASH_BENCH_POLL_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _next_due(server_id) -> float | None:
    """When the server's next poll is due, as this poll's claim set it (read as the
    poll starts, before its end can back a failing server off): the next poll's
    lateness is measured from it, so a poll the scheduler moved to the server's offset
    is not counted late for the move."""
    from partdash.servers.models import Server

    due = Server.objects.filter(pk=server_id).values_list("next_poll_at", flat=True).first()
    return due.timestamp() if due else None


def _poll_fields(task, task_id: str, args) -> dict:
    return {
        "task_id": task_id,
        "server_id": (args or [None])[0],
        "worker": task.request.hostname,
        "pid": os.getpid(),
        "at": time.time(),
    }


@task_prerun.connect
def poll_started(sender=None, task_id=None, task=None, args=None, **kwargs) -> None:
    if getattr(task, "name", None) == POLL_TASK:
        _record_stages()
        _stages.clear()
        _peaks.clear()
        _cpu.clear()
        fields = _poll_fields(task, task_id, args)
        _append({"event": "start", "next_due": _next_due(fields["server_id"]), **fields})


@task_postrun.connect
def poll_ended(sender=None, task_id=None, task=None, args=None, retval=None, **kwargs) -> None:
    if getattr(task, "name", None) == POLL_TASK:
        record = {
            "event": "end",
            "result": str(retval)[:300],
            "stages": _stage_figures(),
            "cpu": dict(_cpu),
        }
        _append({**record, **_poll_fields(task, task_id, args)})
