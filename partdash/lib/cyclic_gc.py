"""The cyclic garbage collector held off while a piece of work builds many objects and
frees them all at its end: a poll (about ten objects a partition) and a whole /metrics
scrape (rows, figures and a line a series). The collector would rescan that growing heap
many times meanwhile (a fifth of a 64,000-partition poll, a quarter of a scrape of 8,000
tables, measured); reference counting frees them anyway, and any cycles wait for the
collector to resume. Process-wide: threads serving other requests meanwhile are not
collected either, for as long as the work runs."""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
