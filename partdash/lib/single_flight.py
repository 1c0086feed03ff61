"""One piece of work for callers who ask for the same thing at once.

A whole-fleet /metrics scrape at 1,000 servers takes a core for a while; several
Prometheus servers (or one retrying) asking at the same moment each paid for it, one
after the other, on the same cores. Here the first caller for a key does the work and
those who ask for the same key while it runs wait for it and share its result (or its
exception). Nothing is kept once it is done: the next caller starts afresh, so a shared
result is never older than the work's own duration.
"""

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


class SingleFlight(Generic[T]):
    """Per process: threads sharing work by key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Hashable, Future[T]] = {}
        self.joined = 0  # callers who waited for another's run, since the process began

    def run(self, key: Hashable, work: Callable[[], T]) -> T:
        with self._lock:
            running = self._running.get(key)
            if running is None:
                mine: Future[T] = Future()
                self._running[key] = mine
            else:
                self.joined += 1
        if running is not None:
            return running.result()
        try:
            result = work()
        except BaseException as error:
            mine.set_exception(error)
            raise
        finally:
            with self._lock:
                del self._running[key]
        mine.set_result(result)
        return result
