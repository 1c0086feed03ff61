"""The fleet benchmarks' poll lateness (bench/fleet_figures.py), from poll records as
bench/poll_probe.py writes them: against the poll before plus the interval, and against
the time each poll was due as the scheduler set it."""

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def figures(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import fleet_figures

    yield fleet_figures
    sys.modules.pop("fleet_figures", None)


def records(*polls: tuple[float, float | None]) -> list[dict]:
    """(start, next due as it started) per poll, each ending 1 s after its start."""
    lines = []
    for n, (at, next_due) in enumerate(polls):
        start = {"event": "start", "task_id": f"t{n}", "server_id": 1, "worker": "w1"}
        lines.append({**start, "at": at, "next_due": next_due})
        lines.append({"event": "end", "task_id": f"t{n}", "at": at + 1, "result": "ok"})
    return lines


def test_a_move_to_the_server_s_offset_is_not_lateness_a_late_start_is(figures):
    # Due at 60 and polled at 60.5; then moved to its offset (next due 150, not 120)
    # and polled at 151; then due at 210 and polled 7 s late.
    polls = figures.polls_from(records((0, 60), (60.5, 150), (151, 210), (217, 270)))
    assert [round(late, 1) for late in figures.due_lateness(polls)] == [0.5, 1.0, 7.0]
    # From the poll before plus the interval, the move counts 30.5 s late.
    assert [round(late, 1) for late in figures.lateness([p.started for p in polls], 60)] == [
        0.5,
        30.5,
        6.0,
    ]
    server = figures.server_figures(polls, 60)
    assert server["due_lateness"]["max"] == 7.0 and server["lateness"]["max"] == 30.5


def test_records_without_a_due_time_give_no_due_lateness(figures):
    polls = figures.polls_from(records((0, None), (61, None)))
    assert figures.due_lateness(polls) == []
    assert figures.server_figures(polls, 60)["due_lateness"]["p95"] is None
