"""Callers asking for the same work at once share one run of it; nothing outlives it."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from partdash.lib.single_flight import SingleFlight
from tests.services import wait_for


def test_callers_at_once_share_one_run_and_the_next_runs_afresh():
    flight: SingleFlight[list[int]] = SingleFlight()
    runs: list[int] = []
    release = threading.Event()
    started = threading.Event()

    def work() -> list[int]:
        runs.append(len(runs))
        started.set()
        release.wait(10)
        return runs[:]

    with ThreadPoolExecutor(6) as pool:
        first = pool.submit(flight.run, "all", work)
        assert started.wait(10)
        others = [pool.submit(flight.run, "all", work) for _ in range(4)]
        assert wait_for(lambda: flight.joined == 4, timeout=10, interval=0.01)
        # Another key is other work: it does not wait for this one.
        other_key = pool.submit(flight.run, ("db1",), lambda: [-1])
        assert other_key.result(10) == [-1]
        release.set()
        results = [first.result(10), *(future.result(10) for future in others)]
    assert runs == [0]
    assert all(result is results[0] for result in results)
    # Done: the next caller runs the work again, not served what was shared.
    assert flight.run("all", work) == [0, 1]


def test_a_failure_reaches_every_caller_who_waited_and_is_not_kept():
    flight: SingleFlight[int] = SingleFlight()
    release = threading.Event()
    started = threading.Event()

    def failing() -> int:
        started.set()
        release.wait(10)
        raise RuntimeError("the store went away")

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(flight.run, None, failing)
        assert started.wait(10)
        waiting = pool.submit(flight.run, None, failing)
        assert wait_for(lambda: flight.joined == 1, timeout=10, interval=0.01)
        release.set()
        for future in (first, waiting):
            with pytest.raises(RuntimeError, match="the store went away"):
                future.result(10)
    assert flight.run(None, lambda: 7) == 7
