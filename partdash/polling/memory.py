"""The poll memory: what a poll needs from the previous poll of its server, in one home.

`PollMemories` is what one process holds of every server it polls, with three calls:
`load` before a poll (what it continues), `save` after it (what it leaves for the next)
and `forget`. How it holds them is its own detail: in process, a memory per server,
bounded by PARTDASH_REMEMBERED_PARTITIONS (the servers polled longest ago forgotten
first); shared through Redis (`pollmemory`, PARTDASH_SHARE_POLL_MEMORY), so that
whichever worker child polls a server next continues where the last poll left off, with
the shared parts this process already holds not read again.

The stages below the conductor never write into a memory: each returns what it computed
(the collector its `Collection.reusable` partitions, the store its
`StoreResult.remembered` figures, the alert evaluation its `Evaluated.rules_version`),
and the conductor (`polling.service`) keeps it in the `PollMemory` it loaded.
"""

import logging
from dataclasses import dataclass
from typing import NamedTuple

from django.conf import settings

from partdash.collector.collect import Kept
from partdash.metrics import store
from partdash.mysql.incremental import SourceMemory
from partdash.polling import pollmemory
from partdash.servers.models import Server

log = logging.getLogger(__name__)


@dataclass
class PollMemory:
    """What a poll needs from the previous poll of its server, passed explicitly to the
    stages by the conductor: the wide sources' rows to `collect` (`sources`, None with
    PARTDASH_INCREMENTAL_READS off) and the partitions the last stored poll built
    (`kept`), the stored figures to the store (`figures`), the rules version to the alert
    evaluation (`evaluated_under`). The conductor keeps in it what each stage returns,
    once its transaction committed."""

    address: tuple[str, int]  # the server's, when remembered (another address: forgotten)
    sources: SourceMemory | None
    kept: Kept | None = None
    figures: store.Remembered | None = None
    evaluated_under: str | None = None

    def take_kept(self) -> Kept | None:
        """The kept partitions, no longer held here: the collector releases them once a
        build needs the memory (a poll whose tablespace list changed)."""
        kept, self.kept = self.kept, None
        return kept

    def take_figures(self) -> store.Remembered | None:
        """The remembered figures, no longer held here: a store replaces them in place,
        and hands back what to remember (`StoreResult.remembered`, `PollStore.restore`)."""
        figures, self.figures = self.figures, None
        return figures


class StoredPoll(NamedTuple):
    """What a stored poll leaves for the next, besides what its `memory` holds."""

    memory: PollMemory  # as `load` returned it, with what the stages returned kept
    poll_id: str
    snapshot_id: int
    partitions: int  # how many the poll saw: what the process's bound counts
    kept: Kept | None  # the partitions its collection built, for the next poll to reuse


# How the shared poll memory builds the remembered figures' rows again.
_FIGURE_ROWS = pollmemory.FigureRows(
    tuple(store.StoredRow._fields.index(name) for name in ("stats_updated_at", "changed_at")),
    store.StoredRow,
    store.Spec,
)


class ReadBack(store.StoredFigures):
    """Stored figures read back from the shared memory, decoded on their first use
    (`pollmemory.UnreadFigures`: a quiet poll uses none)."""

    def __init__(self, source: pollmemory.Figures) -> None:  # (not the dataclass's)
        self.source = source
        self.built, self.windows, self.skews, self.changed_keys = {}, {}, {}, set()

    def unread(self) -> bool:
        """Not decoded, and so unchanged since it was read."""
        return pollmemory._unread(self.source)

    def __getattr__(self, name: str):  # (only what the instance does not hold yet)
        if name not in ("figures", "specs"):
            raise AttributeError(name)
        value = getattr(self.source, name)
        setattr(self, name, value)
        return value


class PollMemories:
    """What one process holds of the poll memory of each server it polls: `load`,
    `save`, `forget`. A worker child holds one (`polling.service.MEMORIES`)."""

    def __init__(self) -> None:
        # Each server's memory, by server.
        self._memories: dict[int, PollMemory] = {}
        # The servers remembered, least recently polled first, with their partition
        # counts: what `_bound` holds to PARTDASH_REMEMBERED_PARTITIONS.
        self._sizes: dict[int, int] = {}
        # The parts of each server's shared memory this process wrote or read last
        # (`pollmemory.Held`): those named again are not read again.
        self._held: pollmemory.Held = {}

    # -- the interface ------------------------------------------------------------------

    def load(self, server: Server, last_poll: str | None) -> PollMemory:
        """The memory a poll of `server` continues, its last stored poll being
        `last_poll`: this process's, when it stored that poll itself; else the shared
        one, when Redis holds it; else a new one (a cold poll: every row read). Room is
        made first (`_make_room`)."""
        self._make_room(server)
        memory = self._memory_of(server)
        if (
            last_poll is None
            or memory.sources is None
            or memory.sources.basis == last_poll
            or not settings.PARTDASH_SHARE_POLL_MEMORY
        ):
            return memory
        # What this process held of the server is stale: let it go before reading the
        # shared memory rather than hold both at once (the parts still current are kept
        # in `_held`, which `pollmemory.load` reuses). Should there be none, the poll is
        # cold.
        address = memory.address
        del self._memories[server.pk], memory
        shared = pollmemory.load(self._held, server.pk, last_poll, address, _FIGURE_ROWS)
        if shared is None:
            return self._memory_of(server)
        sources = SourceMemory()  # (a read beside still under way keeps the old one)
        sources.sources, sources.basis = shared.sources, last_poll
        sources.started, sources.tablestats = shared.started, shared.tablestats
        sources.counted_at, sources.beside_failed_at = shared.counted_at, shared.beside_failed_at
        memory = self._memories[server.pk] = PollMemory(address, sources, kept=shared.kept)
        if (figures := shared.figures) is not None and shared.snapshot_id is not None:
            memory.figures = store.Remembered(
                shared.snapshot_id, ReadBack(figures), figures.rates_known
            )
        memory.evaluated_under = shared.evaluated_under
        return memory

    def save(self, server: Server, poll: StoredPoll | None) -> pollmemory.Written | None:
        """After a poll of `server`: `poll`, what it stored and left for the next, is
        continued by the next poll of this process and shared for any other (returns what
        was written); None, it stored nothing (it failed, or a retried task's poll was
        stored already), and what this process holds of the shared memory may have been
        changed without being written: it is let go. Never raises: the poll is stored
        already, and a bug here costs the next poll its memory only."""
        if poll is None:
            pollmemory.unheld(self._held, server.pk)
            return None
        memory = poll.memory
        if memory.sources is not None:
            memory.sources.stored(poll.poll_id)  # the next poll continues this one
            memory.kept = poll.kept
        self._bound(server.pk, poll.partitions)
        try:
            return self._share(memory, server, poll)
        except Exception:
            log.exception("the poll memory of %s was not shared", server.name)
            pollmemory.unheld(self._held, server.pk)
            return None

    def forget(self, server_pk: int) -> None:
        """Drop what this process holds of a server (its wide sources, its partitions and
        figures, the shared parts): its next poll here reads the shared memory again, or
        every row once without it."""
        self._memories.pop(server_pk, None)
        self._sizes.pop(server_pk, None)
        pollmemory.unheld(self._held, server_pk)

    # -- what it holds, for the tests and the benchmarks --------------------------------

    def held(self, server_pk: int) -> PollMemory | None:
        """The memory this process holds of the server, if any."""
        return self._memories.get(server_pk)

    def servers(self) -> set[int]:
        """The servers this process holds a memory of."""
        return set(self._memories)

    def shared_part(self, server_pk: int, name: str) -> pollmemory.Part | None:
        """The part `name` of the server's shared memory as this process holds it."""
        return self._held.get(server_pk, {}).get(name)

    # -- in process ---------------------------------------------------------------------

    def _memory_of(self, server: Server) -> PollMemory:
        """What this process holds of the server (a new memory if none, or if it was at
        another address)."""
        address = (server.host, server.port)
        memory = self._memories.get(server.pk)
        if memory is None or memory.address != address:
            sources = SourceMemory() if settings.PARTDASH_INCREMENTAL_READS else None
            memory = self._memories[server.pk] = PollMemory(address, sources)
        return memory

    def _bound(self, server_pk: int, partitions: int) -> list[int]:
        """Record that this process now remembers `partitions` of the server, then
        forget the least recently polled other servers while the total is over
        PARTDASH_REMEMBERED_PARTITIONS (a worker child polling many large servers would
        otherwise keep them all: about 140 MB per 64,000 partitions, traced). A
        forgotten server's next poll here reads the shared memory again, or every row
        once without it. Returns the servers forgotten."""
        sizes = self._sizes
        sizes.pop(server_pk, None)
        sizes[server_pk] = partitions
        limit, forgotten = settings.PARTDASH_REMEMBERED_PARTITIONS, []
        while sum(sizes.values()) > limit and len(sizes) > 1:
            oldest = next(iter(sizes))
            self.forget(oldest)
            forgotten.append(oldest)
        return forgotten

    def _make_room(self, server: Server) -> list[int]:
        """Before a poll reads the server's shared memory: forget the least recently
        polled other servers as `_bound` does after a poll, counting this one at its last
        known size. Forgetting only after the poll would hold what the bound allows and
        this server's memory at once (a child polling three servers of 32,000 partitions
        under a bound of two went past 300 MB so). The other servers' figures are then
        held as stored rather than decoded (`_compact_others`). Returns the servers
        forgotten."""
        forgotten = self._bound(server.pk, server.partitions or 0)
        self._compact_others(server.pk)
        return forgotten

    def _compact_others(self, server_pk: int) -> list[int]:
        """Hold the stored figures of every other server this process remembers as they
        are stored, compressed, rather than decoded, as a read back leaves them: a child
        polling several large servers held each one's figures decoded, 15-20 MB per
        32,000 partitions, while it polled the others. The next poll of such a server
        here decodes them only if it compares partitions (a written poll), as it would
        after a read back. A process polling one server never lets go of its own.
        Returns the servers whose figures it let go."""
        compacted = []
        for pk, memory in self._memories.items():
            remembered = memory.figures
            if pk == server_pk or remembered is None:
                continue
            unread = pollmemory.compact_figures(self._held, pk, _FIGURE_ROWS)
            if unread is not None:
                memory.figures = store.Remembered(
                    remembered.snapshot_id, ReadBack(unread), remembered.rates_known
                )
                compacted.append(pk)
        return compacted

    # -- in Redis -----------------------------------------------------------------------

    def _share(
        self, memory: PollMemory, server: Server, poll: StoredPoll
    ) -> pollmemory.Written | None:
        """Write what this stored poll leaves for the next, for any process to continue."""
        sources = memory.sources
        if sources is None or not settings.PARTDASH_SHARE_POLL_MEMORY:
            pollmemory.unheld(self._held, server.pk)  # (what it holds misses this poll's)
            return None
        remembered, figures, stored = memory.figures, None, None
        if remembered is not None and remembered.snapshot_id == poll.snapshot_id:
            stored = remembered.stored
            if (
                isinstance(stored, ReadBack)
                and stored.unread()
                and stored.source.rates_known == remembered.rates_known
            ):  # (left as it was read: unchanged)
                figures = stored.source
            else:
                figures = pollmemory.Figures(
                    stored.figures, stored.specs, remembered.rates_known, stored.changed_keys
                )
        shared = pollmemory.Memory(
            poll_id=poll.poll_id,
            snapshot_id=poll.snapshot_id,
            address=memory.address,
            sources=sources.sources,
            started=sources.started,
            counted_at=sources.counted_at,
            beside_failed_at=sources.beside_failed_at,
            tablestats=sources.tablestats,
            kept=memory.kept,
            figures=figures,
            evaluated_under=memory.evaluated_under,
        )
        written = pollmemory.save(self._held, server.pk, shared, _FIGURE_ROWS)
        if written is not None and stored is not None:
            stored.changed_keys = set()  # (the next delta counts from here)
        return written
