"""A worker's liveness, judged (`partdash.lib.liveness.WorkerWatch`) on plain values, and
a stalled worker stopped hard (`stop_hard`) on a real process that a TERM cannot end."""

import signal
import subprocess
import sys

from partdash.lib.liveness import Activity, Observation, WorkerWatch, stop_hard

STALL = 120.0
T0 = 1_800_000_000.0  # the worker's start


def seen(answered=True, waiting=0, started=None, finished=None, busy=False) -> Observation:
    return Observation(answered, waiting, Activity(started, finished), busy)


def test_a_worker_that_stops_answering_is_stalled_after_the_stall_limit_in_a_row():
    watch = WorkerWatch(STALL, since=T0)
    assert watch.verdict(seen(answered=False), T0 + 10) is None
    assert watch.verdict(seen(answered=False), T0 + 129) is None
    assert watch.verdict(seen(answered=False), T0 + 130) == ("it has not answered a ping for 120 s")


def test_an_answer_in_between_starts_the_count_again():
    watch = WorkerWatch(STALL, since=T0)
    watch.verdict(seen(answered=False), T0 + 10)
    assert watch.verdict(seen(), T0 + 100) is None
    assert watch.verdict(seen(answered=False), T0 + 200) is None
    assert watch.verdict(seen(answered=False), T0 + 319) is None


def test_tasks_waiting_and_none_started_or_finished_is_a_stall():
    watch = WorkerWatch(STALL, since=T0)
    assert watch.verdict(seen(waiting=0), T0 + 50) is None  # nothing to do: progress
    assert watch.verdict(seen(waiting=3, finished=T0 + 60), T0 + 100) is None
    assert watch.verdict(seen(waiting=3, finished=T0 + 60), T0 + 180) == (
        "3 tasks waiting and none started or finished for 120 s"
    )


def test_a_worker_whose_every_slot_runs_a_long_poll_is_not_stalled():
    watch = WorkerWatch(STALL, since=T0)
    assert watch.suspects(5, Activity(T0 + 1, None), T0 + 300)  # then its pool is asked
    assert watch.verdict(seen(waiting=5, started=T0 + 1, busy=True), T0 + 300) is None


def test_a_redis_restart_that_empties_the_records_is_not_taken_for_a_stall():
    watch = WorkerWatch(STALL, since=T0)
    watch.verdict(seen(waiting=0), T0 + 500)
    watch.broker_down(T0 + 505)  # then Redis comes back empty, the queue filling
    assert watch.verdict(seen(waiting=2), T0 + 510) is None
    assert watch.verdict(seen(waiting=2), T0 + 625) == (
        "2 tasks waiting and none started or finished for 120 s"
    )


def stopped_process_ignoring_term() -> subprocess.Popen:
    """A process that ignores TERM, in a session of its own, stopped (SIGSTOP): a hung
    worker's main process."""
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True
    )
    assert process.stdout.readline() == b"ready\n"
    process.send_signal(signal.SIGSTOP)
    return process


def test_a_stopped_process_that_ignores_term_is_killed_with_its_group():
    process = stopped_process_ignoring_term()
    try:
        killed = stop_hard(process.pid, 0.5, lambda: process.poll() is not None)
        assert killed
        assert process.wait(timeout=5) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()


def test_a_stopped_process_that_ends_on_term_is_continued_and_not_killed():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        process.send_signal(signal.SIGSTOP)
        assert not stop_hard(process.pid, 5, lambda: process.poll() is not None)
        assert process.wait(timeout=5) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
