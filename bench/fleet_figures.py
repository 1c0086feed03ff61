"""The fleet benchmark's figures, from plain records: no process, no database.

Polls come from bench/poll_probe.py's log (one "start" and one "end" line per poll task);
lateness is measured between consecutive polls of one server that really polled (a task
that found the server's poll lock held is "skipped", not a poll): from the start before
plus the interval, and from the time the poll was due (`due_lateness`).
"""

import itertools
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class Poll:
    """One poll task as its worker child ran it (wall-clock seconds)."""

    task_id: str
    server_id: int
    worker: str
    started: float
    ended: float | None = None  # None: the child died or the run ended mid-poll
    result: str = ""
    next_due: float | None = None  # when the server's next poll was due, as it started

    @property
    def skipped(self) -> bool:
        return self.result.startswith("skipped")

    @property
    def succeeded(self) -> bool:
        return self.ended is not None and not self.skipped and not self.failed

    @property
    def failed(self) -> bool:
        """Tried and failed: unreachable, or stopped at a time limit (see PollReport)."""
        return ": not polled: " in self.result or self.result.startswith("poll stopped")


def polls_from(records: Iterable[dict]) -> list[Poll]:
    """Pair each task's start and end lines; polls ordered by start."""
    polls: dict[str, Poll] = {}
    for record in records:
        task_id = record["task_id"]
        if record["event"] == "start":
            polls[task_id] = Poll(
                task_id,
                record["server_id"],
                record["worker"],
                record["at"],
                next_due=record.get("next_due"),
            )
        elif task_id in polls:
            polls[task_id].ended = record["at"]
            polls[task_id].result = record.get("result", "")
    return sorted(polls.values(), key=lambda poll: poll.started)


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (`share` 0.95 is p95); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))  # ceil(n * share), at least 1
    return ordered[int(rank) - 1]


def lateness(starts: list[float], interval: float) -> list[float]:
    """Poll k's lateness: its start - (poll k-1's start + interval); the first poll has none."""
    return [later - (earlier + interval) for earlier, later in itertools.pairwise(starts)]


def due_lateness(polls: list[Poll]) -> list[float]:
    """Poll k's lateness against the time it was due: its start - the next due time
    poll k-1 saw as it started (the scheduler's, so a first poll, a forced one or one
    moved to the server's offset is measured from where it was put, not from one
    interval after the poll before). Polls of a probe that did not record it: none."""
    return [
        later.started - earlier.next_due
        for earlier, later in itertools.pairwise(polls)
        if earlier.next_due is not None
    ]


def overlaps(polls: list[Poll]) -> int:
    """Polls of one server that started before an earlier one of it had ended. A poll
    with no end (its worker child was killed at the hard time limit, or the run ended)
    counts as ending when it started: the end it never logged is unknown."""
    found = 0
    ended_by = float("-inf")
    for poll in sorted(polls, key=lambda poll: poll.started):
        if poll.started < ended_by:
            found += 1
        ended_by = max(ended_by, poll.ended or poll.started)
    return found


def spread(values: list[float]) -> dict:
    """p50, p95 and max, in seconds rounded to milliseconds."""
    figures = {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}
    figures["max"] = max(values) if values else None
    return {name: None if value is None else round(value, 3) for name, value in figures.items()}


def server_figures(polls: list[Poll], interval: float) -> dict:
    """One server's polls: how many, how late, which workers ran them, overlaps."""
    ran = [poll for poll in polls if not poll.skipped]
    late = lateness([poll.started for poll in ran], interval)
    by_worker: dict[str, int] = {}
    for poll in ran:
        by_worker[poll.worker] = by_worker.get(poll.worker, 0) + 1
    return {
        "polls": len(ran),
        "failed": sum(1 for poll in ran if poll.failed),
        "skipped_lock_held": len(polls) - len(ran),
        "lateness": spread(late),
        "due_lateness": spread(due_lateness(ran)),
        "duration": spread([poll.ended - poll.started for poll in ran if poll.ended is not None]),
        "lateness_samples": [round(value, 3) for value in late],
        "by_worker": by_worker,
        "overlaps": overlaps(ran),
    }


def memory_figures(samples: list[tuple[float, float]], warm_up: float) -> dict:
    """Worker RSS samples (seconds since start, MB): the first after warm-up, the max and
    the last; flat when the last is at most 1.2 times the first."""
    if not samples:
        return {"samples": 0}
    warm = [sample for sample in samples if sample[0] >= warm_up] or samples[-1:]
    first, last = warm[0][1], warm[-1][1]
    return {
        "samples": len(samples),
        "warm_up_s": warm_up,
        "first_mb": round(first, 1),
        "max_mb": round(max(rss for _, rss in samples), 1),
        "last_mb": round(last, 1),
        "flat": last <= first * 1.2,
        "series": [(round(at), round(rss, 1)) for at, rss in samples],
    }
