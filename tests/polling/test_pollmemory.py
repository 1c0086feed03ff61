"""The shared poll memory (`partdash.polling.pollmemory`): a server polled by one
worker child, then another, then the first again, each poll continuing the last one
whichever child stored it, and storing the truth; Redis flushed, a cold poll and never a
wrong one; the parts' encoding exact."""

import time
from datetime import UTC, datetime

import msgpack
import pytest

from partdash.collector import collect as collect_module
from partdash.metrics import store
from partdash.mysql.catalogue import FILE_IO, TABLESPACES
from partdash.mysql.incremental import Buckets
from partdash.mysql.names import PartitionKey, PartitionName
from partdash.mysql.sources.file_io import PartitionIO
from partdash.mysql.sources.tablespaces import PartitionFile
from partdash.mysql.sources.tablestats import LastRead
from partdash.polling import pollmemory, service
from partdash.polling.memory import PollMemories
from partdash.polling.service import poll_server
from tests.collector.test_ground_truth import flush_to_disk
from tests.mysql.test_incremental import (
    assert_stored_is_the_truth,
    sources_of,
    tables_and_server,
)
from tests.sql import run

FILE_IO_PART, KEPT_PART = pollmemory.FILE_IO_PART, pollmemory.KEPT_PART
FIGURES_PART = pollmemory.FIGURES_PART
ROWS = pollmemory.FigureRows((2, 3))  # (plain tuples, datetimes at 2 and 3)


@pytest.fixture(autouse=True)
def own_memories(monkeypatch) -> None:
    """Each test's polls start in a worker child of its own, new to every server (and
    the children a test becomes are let go after it)."""
    monkeypatch.setattr(service, "MEMORIES", PollMemories())


def child() -> PollMemories:
    """What this process holds now, as one worker child's."""
    return service.MEMORIES


def become(memories: PollMemories) -> None:
    """Hold what `memories` holds: the worker child it was taken from polls next."""
    service.MEMORIES = memories


def new_child() -> PollMemories:
    return PollMemories()


def held_part(server, name: str) -> pollmemory.Part:
    part = service.MEMORIES.shared_part(server.pk, name)
    assert part is not None
    return part


@pytest.fixture
def compared(monkeypatch) -> list:
    """How many partitions each store compared with the previous poll's figures."""
    counts = []
    original = store.PollStore._store_figures

    def counting(self, *args):
        result = original(self, *args)
        counts.append(self.compared)
        return result

    monkeypatch.setattr(store.PollStore, "_store_figures", counting)
    return counts


def write(instance, schema: str, rows: str) -> None:
    run(instance, schema, f"INSERT INTO h VALUES {rows}")
    flush_to_disk(instance, schema, "h")


def test_two_children_in_turn_each_continue_the_last_poll(
    transactional_db, mariadb_ps, new_schema, settings
):
    """Children A and B poll a server in turn, as two worker hosts would. Each poll
    continues the last one, whichever child stored it: file I/O and the tablespace list
    read by bucket (not in full; a quiet poll reads no row), and what is stored is the
    truth."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "two-children-shared")
    assert poll_server(server).ok and poll_server(server).ok  # child A: first, second
    a, b = child(), new_child()
    for turn, rows in enumerate(("(6001, 'a'), (6002, 'b')", "(6003, 'c')", "(6004, 'd')")):
        become(b if turn % 2 == 0 else a)  # the other child polls next
        write(mariadb_ps, schema, rows)
        assert poll_server(server).ok
        memory = sources_of(server)
        assert memory.touched[FILE_IO.key] is not None, f"turn {turn}: file I/O read in full"
        assert memory.touched[TABLESPACES.key] is not None, f"turn {turn}: list read in full"
        assert_stored_is_the_truth(server, schema, settings, f"turn {turn}")
        become(a if turn % 2 == 0 else b)  # and back: a quiet poll reads no row
        assert poll_server(server).ok
        memory = sources_of(server)
        assert memory.touched == {FILE_IO.key: [], TABLESPACES.key: []}, f"turn {turn}"
        assert sum(memory.fetched.values()) == 0, f"turn {turn}: {memory.fetched}"
        assert_stored_is_the_truth(server, schema, settings, f"turn {turn}, quiet")


def test_a_memory_lost_from_redis_costs_one_cold_poll(
    transactional_db, mariadb_ps, new_schema, settings, redis_server, compared
):
    """Redis flushed (or a part evicted) between two polls on different children: the
    next poll reads every row and compares every partition, stores the truth, and
    shares its memory again for the one after."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "flushed")
    assert poll_server(server).ok and poll_server(server).ok
    partitions = server.__class__.objects.get(pk=server.pk).partitions
    a = child()
    become(new_child())
    client = redis_server.client()
    header = msgpack.unpackb(client.get(pollmemory.header_key(server.pk)))
    named = pollmemory.part_key(server.pk, header["parts"][pollmemory.FILE_IO_PART][-1])
    assert client.delete(named) == 1  # one part evicted: the whole memory is cold
    write(mariadb_ps, schema, "(7001, 'a')")
    assert poll_server(server).ok
    assert sources_of(server).touched[FILE_IO.key] is None  # every row read
    assert compared[-1] == partitions
    assert_stored_is_the_truth(server, schema, settings, "after the memory was lost")
    become(a)
    write(mariadb_ps, schema, "(7002, 'b')")
    assert poll_server(server).ok  # continues the cold poll, through Redis again
    assert sources_of(server).touched[FILE_IO.key] is not None
    assert_stored_is_the_truth(server, schema, settings, "the poll after")


def test_a_memory_of_another_poll_or_address_is_never_used(
    transactional_db, mariadb_ps, new_schema, settings, redis_server
):
    """A header naming another poll than the server's last stored one (a poll stored
    while Redis was unreachable), or another address, is not read."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "other-poll")
    assert poll_server(server).ok and poll_server(server).ok
    last = service.previous_poll(server).poll_id
    become(new_child())
    assert not service.MEMORIES.load(server, "another poll").sources.sources  # a new one
    moved = server.__class__.objects.get(pk=server.pk)
    moved.host = "elsewhere"
    assert not service.MEMORIES.load(moved, last).sources.sources
    service.MEMORIES.forget(server.pk)
    shared = service.MEMORIES.load(server, last)
    assert shared.sources.basis == last and shared.sources.sources  # the shared one


def test_a_memory_read_back_shares_what_its_parts_repeat(
    transactional_db, mariadb_ps, new_schema, settings, redis_server
):
    """Read back whole, each partition kept holds its tablespace row's name, and each
    definition the key of its partition's figures: one object each, as in the memory
    of the poll that wrote them."""
    _, server = tables_and_server(mariadb_ps, new_schema, "shared-objects")
    assert poll_server(server).ok and poll_server(server).ok
    last = service.previous_poll(server).poll_id
    become(new_child())
    shared = service.MEMORIES.load(server, last)
    assert shared.sources is not None and shared.sources.basis == last  # read back
    assert shared.kept is not None and shared.figures is not None
    rows = shared.sources.sources[TABLESPACES.key].rows.values()
    names = {id(row.name) for members in rows for row in members}
    kept = list(shared.kept.partitions.values())
    assert kept and all(id(figures.name) in names for figures in kept)
    figures = shared.figures.stored
    keys = {id(key) for key in figures.figures}
    specs = [spec for members in figures.specs.values() for spec in members]
    assert specs and all(id(spec.key) in keys for spec in specs)


def test_written_polls_share_deltas_that_any_child_continues(
    transactional_db, mariadb_ps, new_schema, settings, redis_server, monkeypatch
):
    """A written poll shares what changed as deltas on top of the last whole parts: a
    new child reads the whole parts and every delta, a child holding some of the deltas
    reads only the rest, each continues the last poll (reads by bucket) and stores the
    truth; past MAX_DELTAS a part is written whole again."""
    monkeypatch.setattr(pollmemory, "DELTAS_SHARE", 100.0)  # (small parts: deltas always)
    monkeypatch.setattr(pollmemory, "CHANGED_SHARE", 1.0)
    read = []
    unpack = pollmemory._unpack
    monkeypatch.setattr(pollmemory, "_unpack", lambda data: read.append(data) or unpack(data))
    schema, server = tables_and_server(mariadb_ps, new_schema, "deltas")
    client = redis_server.client()

    def chains() -> dict[str, list]:
        return msgpack.unpackb(client.get(pollmemory.header_key(server.pk)))["parts"]

    assert poll_server(server).ok and poll_server(server).ok
    before = {name: len(ids) for name, ids in chains().items()}
    write(mariadb_ps, schema, "(9001, 'a')")
    assert poll_server(server).ok  # child A: deltas on the whole parts
    grown = {name for name, ids in chains().items() if len(ids) == before[name] + 1}
    assert {FILE_IO_PART, KEPT_PART, FIGURES_PART} <= grown, chains()
    monkeypatch.setattr(pollmemory, "MAX_DELTAS", max(map(len, chains().values())) + 1)
    a = child()
    become(new_child())  # child B, new: every part whole, and every delta
    write(mariadb_ps, schema, "(9002, 'b'), (9003, 'c')")
    read.clear()
    shared = chains()
    assert poll_server(server).ok
    assert len(read) == sum(map(len, shared.values()))  # every whole part, every delta
    assert sources_of(server).touched[FILE_IO.key] is not None
    assert_stored_is_the_truth(server, schema, settings, "a new child, through deltas")
    assert len(chains()[FILE_IO_PART]) == before[FILE_IO_PART] + 2
    become(a)  # A holds the whole parts and its deltas: reads only B's
    write(mariadb_ps, schema, "(9004, 'd')")
    read.clear()
    shared = chains()
    held = {name: held_part(server, name) for name in shared}
    assert poll_server(server).ok
    on_top = {n: ids[: len(held[n].chain)] == list(held[n].chain) for n, ids in shared.items()}
    assert on_top[FILE_IO_PART] and on_top[KEPT_PART] and on_top[FIGURES_PART]
    assert len(read) == sum(
        len(ids) - len(held[name].chain) if on_top[name] else len(ids)
        for name, ids in shared.items()
    )
    assert len(read) < sum(map(len, shared.values()))
    assert sources_of(server).touched[FILE_IO.key] is not None
    assert_stored_is_the_truth(server, schema, settings, "a child holding some deltas")
    monkeypatch.setattr(pollmemory, "MAX_DELTAS", len(chains()[FILE_IO_PART]) - 1)
    write(mariadb_ps, schema, "(9005, 'e')")
    assert poll_server(server).ok
    assert len(chains()[FILE_IO_PART]) == 1  # written whole again
    assert_stored_is_the_truth(server, schema, settings, "after the part was whole again")


def test_bucket_deltas_come_back_exactly(monkeypatch):
    """A delta of bucketed rows, applied to the held rows, gives the rows and aggregates
    the poll read: rows replaced, added and gone, a bucket emptied, the digest patched
    item by item, or whole when its buckets moved; and without a digest."""
    monkeypatch.setattr(pollmemory, "CHANGED_SHARE", 1.0)  # (a few rows: deltas always)
    name = PartitionName("s", "t", "p0", "")
    one, two, three = (PartitionIO(f"s\x00t\x00p{n}\x00", n, 2, 3, 4, 5, 6) for n in (1, 2, 3))
    changed = PartitionIO("s\x00t\x00p1\x00", 1, 2, 3, 99, 5, 6)
    held = Buckets(4, {0: (2, 5), 1: (1, 6), 2: (0, 0)}, {0: [one, two], 1: [three], 2: []},
                   7.0, "0 2 5,1 1 6,2 0 0", (1, 2))  # fmt: skip
    now = Buckets(4, {0: (2, 8), 1: (0, 0), 2: (0, 0)}, {0: [two, changed], 1: [], 2: []},
                  7.0, "0 2 8,1 0 0,2 0 0", (1, 3))  # fmt: skip
    now.rows[2] = held.rows[2]  # (not read again)
    io = pollmemory.FILE_IO_PART
    kind = pollmemory._kinds(ROWS)[io]
    document = kind.delta(held, now)
    assert document is not None and document[3] == [False, [[0, "0 2 8"], [1, "1 0 0"]]]
    back = kind.apply(held, pollmemory._unpack(pollmemory._pack(document)))
    assert back == now and list(back.rows) == [0, 1, 2] and back.rows[0][0] is two
    moved = Buckets(4, {0: (2, 8), 3: (1, 1), 2: (0, 0)}, {0: [two, changed], 3: [one], 2: []},
                    7.0, "0 2 8,3 1 1,2 0 0", (1, 3))  # fmt: skip
    document = kind.delta(held, moved)
    assert document[3] == [True, moved.digest]
    assert kind.apply(held, pollmemory._unpack(pollmemory._pack(document))) == moved
    spaces = pollmemory._kinds(ROWS)[pollmemory.TABLESPACES_PART]
    file = PartitionFile(name, 5, 65536, 4096, 16384, "Dynamic")
    grown = PartitionFile(name, 5, 131072, 4096, 16384, "Dynamic")
    held = Buckets(0, {3: (1, 11), 1: (0, 0)}, {3: [file], 1: []}, 123.0, None, None)
    now = Buckets(0, {3: (1, 12), 1: (0, 0)}, {3: [grown], 1: held.rows[1]}, 123.0, None, None)
    back = spaces.apply(held, pollmemory._unpack(pollmemory._pack(spaces.delta(held, now))))
    assert back == now and list(back.rows) == [3, 1]
    every = Buckets(0, now.aggregates, now.rows, 124.0, None, None)  # every row read again
    assert spaces.delta(held, every) is None


def test_the_parts_come_back_exactly():
    """Every part decodes to what was encoded: datetimes aware or naive as they were,
    empty buckets kept in their order, aggregates without a digest."""
    name = PartitionName("s", "t", "P0", "")
    files = Buckets(
        0,
        {3: (1, 11), 1: (0, 0)},
        {3: [PartitionFile(name, 5, 65536, 4096, 16384, "Dynamic")], 1: []},
        123.0,
        None,
        None,
    )
    back = pollmemory.decode_tablespaces(pollmemory._unpack(pollmemory._pack(
        pollmemory.encode_tablespaces(files))))  # fmt: skip
    assert back.rows == files.rows and list(back.rows) == [3, 1]
    assert back.aggregates == files.aggregates and back.digest is None
    assert abs(back.read_all_at - 123.0) < 0.01
    io = Buckets(
        4,
        {0: (1, 7)},
        {0: [PartitionIO("s\x00t\x00p0\x00", 1, 2, 3, 4, 5, 6)]},
        1.0,
        "0 1 7",
        (5, 6),
    )
    back = pollmemory.decode_file_io(pollmemory._unpack(pollmemory._pack(
        pollmemory.encode_file_io(io))))  # fmt: skip
    assert back.rows == io.rows and back.aggregates == io.aggregates and back.witness == (5, 6)
    aware, naive = datetime(2026, 11, 27, 12, 0, 1, 5, tzinfo=UTC), datetime(2026, 1, 2, 3, 4, 5, 6)
    figures = pollmemory.Figures(
        {(7, "p0#"): (70, 1, aware, naive, "text"), (7, "p1#"): (71, None, None, None, None)},
        {7: [((7, "p0#"), "P0", "", 1, None, None), ((7, "p1#"), "p1", "", 2, None, "x")]},
        True,
    )
    back = pollmemory.decode_figures(pollmemory._unpack(pollmemory._pack(
        pollmemory.encode_figures(figures, ROWS))), ROWS)  # fmt: skip
    assert back == figures
    unknown = pollmemory.Figures(figures.figures, figures.specs, False)  # after a first poll
    assert not pollmemory.decode_figures(pollmemory.encode_figures(unknown, ROWS), ROWS).rates_known
    assert back.figures[(7, "p0#")][2].tzinfo is not None
    assert back.figures[(7, "p0#")][3].tzinfo is None
    # A definition and the figures of its partition share one key, read back.
    keys = {id(key) for key in back.figures}
    assert all(id(spec[0]) in keys for spec in back.specs[7])
    # A definition without figures keeps its own key.
    figures.specs[8] = [((8, "q#"), "q", "", 1, None, None)]
    back = pollmemory.decode_figures(pollmemory._unpack(pollmemory._pack(
        pollmemory.encode_figures(figures, ROWS))), ROWS)  # fmt: skip
    assert back == figures
    last = LastRead(("1", "2"), {PartitionKey("s", "t", "p0", ""): (5, 0)}, True)
    assert pollmemory.decode_tablestats(pollmemory.encode_tablestats(last)) == last
    counted = LastRead(("1", "2"), {PartitionKey("s", "t", "p0", ""): (5, 0)}, True, 2567, 2048)
    assert pollmemory.decode_tablestats(pollmemory.encode_tablestats(counted)) == counted


def test_repeated_numbers_are_stored_once_and_come_back_of_their_type():
    """A column whose numbers repeat is written as its distinct values and indices, and
    read back as one object per distinct value; a column of mixed types (1 == 1.0 ==
    True) or of mostly distinct values is written as it is."""
    big = [16384, 16384 * 4, None, 16384] * 100
    coded = pollmemory._numbers(big)
    assert isinstance(coded, dict) and len(coded["v"]) == 3
    back = pollmemory._unnumbered(pollmemory._unpack(pollmemory._pack(coded)))
    assert back == big and len({id(v) for v in back if v is not None}) == 2
    mixed = [1, 1.0, True, None] * 10
    kept = pollmemory._unnumbered(pollmemory._unpack(pollmemory._pack(pollmemory._numbers(mixed))))
    assert [type(v) for v in kept] == [type(v) for v in mixed]
    floats = [0.0, 0.5] * 10
    assert pollmemory._unnumbered(pollmemory._numbers(floats)) == floats
    distinct = list(range(1000, 1100))
    assert pollmemory._numbers(distinct) == distinct


def test_the_partitions_a_poll_built_come_back_exactly(
    transactional_db, mariadb_ps, new_schema, settings
):
    """The partitions a real poll kept (`collect.Kept`), decoded: the same keys in the
    same order, the same figures, file keys, tables and signatures."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "kept")
    assert poll_server(server).ok and poll_server(server).ok
    kept = service.MEMORIES.held(server.pk).kept
    assert kept is not None and kept.partitions
    back = pollmemory.decode_kept(pollmemory._unpack(pollmemory._pack(
        pollmemory.encode_kept(kept))))  # fmt: skip
    assert list(back.partitions) == list(kept.partitions)
    assert list(back.partitions.values()) == list(kept.partitions.values())
    assert {p: f.key for p, f in back.by_path.items()} == {
        p: f.key for p, f in kept.by_path.items()
    }
    assert {t: [f.key for f in m] for t, m in back.grouped[1].items()} == {
        t: [f.key for f in m] for t, m in kept.grouped[1].items()
    }
    assert back.grouped[0] == kept.grouped[0] and back.signatures == kept.signatures


def test_a_memory_that_cannot_be_shared_leaves_the_poll_stored(
    transactional_db, mariadb_ps, new_schema, settings, monkeypatch
):
    """Sharing fails after the poll was stored (here Redis' address cannot even be read):
    the poll is reported and recorded as the success it was, and the next poll on another
    child is cold, never wrong."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "unshared")
    assert poll_server(server).ok

    def unreadable():
        raise ValueError("Redis URL must specify one of the following schemes")

    monkeypatch.setattr(pollmemory, "_client", unreadable)
    report = poll_server(server)
    assert report.ok, report.error
    server.refresh_from_db()
    assert server.last_error == "" or "poll failed" not in server.last_error
    assert server.last_success_at == server.last_poll_at
    become(new_child())
    write(mariadb_ps, schema, "(8001, 'a')")
    assert poll_server(server).ok
    assert sources_of(server).touched[FILE_IO.key] is None  # cold: every row
    assert_stored_is_the_truth(server, schema, settings, "after a memory not shared")


def test_a_child_makes_room_before_it_reads_another_servers_memory(
    transactional_db, mariadb_ps, new_schema, settings, monkeypatch
):
    """Past PARTDASH_REMEMBERED_PARTITIONS a child forgets the servers it polled longest
    ago before it reads another server's shared memory, not after the poll: it never
    holds them all at once."""
    _, first = tables_and_server(mariadb_ps, new_schema, "room-first")
    _, second = tables_and_server(mariadb_ps, new_schema, "room-second")
    assert poll_server(second).ok and poll_server(second).ok  # another child: shared
    become(new_child())
    assert poll_server(first).ok and poll_server(first).ok  # this child holds the first
    second.refresh_from_db()
    settings.PARTDASH_REMEMBERED_PARTITIONS = second.partitions  # room for one of them
    ours = {first.pk, second.pk}
    held_when_read = []
    load = pollmemory.load

    def reading(held, server_pk, *args):
        held_when_read.append(ours & service.MEMORIES.servers())
        return load(held, server_pk, *args)

    monkeypatch.setattr(pollmemory, "load", reading)
    assert poll_server(second).ok
    assert held_when_read == [set()], held_when_read  # the first forgotten already
    # And the poll continued the shared memory: file I/O read by bucket, not every row
    # (other tests' schemas on the same server may change meanwhile).
    assert sources_of(second).touched[FILE_IO.key] is not None
    assert ours & service.MEMORIES.servers() == {second.pk}


def test_figures_read_back_are_decoded_only_when_a_poll_compares_them(
    transactional_db, mariadb_ps, new_schema, settings, redis_server, monkeypatch, compared
):
    """On a child that did not hold them, a quiet poll leaves the stored figures as it
    read them (undecoded, the shared copy not written again) and stores the truth; a
    written poll on another new child decodes them, compares what changed and stores
    the truth."""
    # (Statistics refreshed within the margin are read again at every poll: here, those
    # of the tables just created.)
    monkeypatch.setattr(collect_module, "STATS_MARGIN_SECONDS", 0)
    schema, server = tables_and_server(mariadb_ps, new_schema, "unread-figures")
    # Quiet once two polls in a row compare nothing: the third poll zeroes the rates the
    # second measured, and InnoDB refreshes the new tables' statistics in the background.
    for _ in range(40):
        assert poll_server(server).ok
        if compared[-2:] == [0, 0]:
            break
        time.sleep(0.25)
    assert compared[-2:] == [0, 0], compared
    client = redis_server.client()

    def figures_chain() -> list:
        return msgpack.unpackb(client.get(pollmemory.header_key(server.pk)))["parts"][FIGURES_PART]

    chain = figures_chain()
    become(new_child())  # a new child: a quiet poll
    assert poll_server(server).ok and compared[-1] == 0
    held = held_part(server, FIGURES_PART).piece
    assert isinstance(held, pollmemory.UnreadFigures) and not held.decoded
    assert figures_chain() == chain  # nothing of them written again
    assert_stored_is_the_truth(server, schema, settings, "a quiet poll, figures unread")
    become(new_child())  # another new child: a written poll
    write(mariadb_ps, schema, "(8101, 'a')")
    assert poll_server(server).ok
    held = held_part(server, FIGURES_PART).piece
    assert not pollmemory._unread(held) and held.figures
    assert figures_chain() != chain  # what changed, shared
    assert_stored_is_the_truth(server, schema, settings, "a written poll, figures decoded")


def test_figures_that_do_not_decode_are_read_from_the_database(
    transactional_db, mariadb_ps, new_schema, settings, redis_server, caplog
):
    """A figures part that unpacks but does not decode (another version's, damaged):
    the poll that needs them reads them from the database, says so in the log, and
    stores the truth; the poll after continues as usual."""
    schema, server = tables_and_server(mariadb_ps, new_schema, "unreadable-figures")
    assert poll_server(server).ok and poll_server(server).ok
    client = redis_server.client()
    header = msgpack.unpackb(client.get(pollmemory.header_key(server.pk)))
    damaged = pollmemory._pack([[1, 2], ["p0#"], [], [], [None, None], [], []])
    for part_id in header["parts"][FIGURES_PART]:
        client.set(pollmemory.part_key(server.pk, part_id), damaged)
    become(new_child())
    write(mariadb_ps, schema, "(8201, 'a')")
    assert poll_server(server).ok
    assert "the remembered figures are read from the database" in caplog.text
    assert_stored_is_the_truth(server, schema, settings, "figures read from the database")
    write(mariadb_ps, schema, "(8202, 'b')")
    assert poll_server(server).ok
    assert_stored_is_the_truth(server, schema, settings, "the poll after")


def test_a_child_polling_another_server_holds_the_others_figures_as_stored(
    transactional_db, mariadb_ps, new_schema, settings, redis_server, compared, monkeypatch
):
    """A child that polled server A (a written poll: its figures decoded), then polls B,
    holds A's figures as stored (compressed, undecoded) while it polls B; A's next
    written poll on this child decodes them, compares only what changed, and stores the
    truth. A child polling one server never lets go of its figures."""
    monkeypatch.setattr(collect_module, "STATS_MARGIN_SECONDS", 0)  # (as above)
    schema_a, a = tables_and_server(mariadb_ps, new_schema, "compact-a")
    schema_b, b = tables_and_server(mariadb_ps, new_schema, "compact-b")
    for _ in range(40):  # quiet, as above: then a write's poll compares what it changed
        assert poll_server(a).ok
        if compared[-2:] == [0, 0]:
            break
        time.sleep(0.25)
    assert compared[-2:] == [0, 0], compared
    write(mariadb_ps, schema_a, "(8301, 'a')")
    assert poll_server(a).ok
    held = held_part(a, FIGURES_PART)
    assert not pollmemory._unread(held.piece) and held.complete()
    assert poll_server(a).ok  # one server: its figures stay decoded
    assert not pollmemory._unread(held_part(a, FIGURES_PART).piece)
    assert poll_server(b).ok
    held = held_part(a, FIGURES_PART).piece
    assert pollmemory._unread(held)
    assert service.MEMORIES.held(a.pk).figures.stored.source is held
    service.MEMORIES.load(b, service.previous_poll(b).poll_id)  # (makes room again)
    assert held_part(a, FIGURES_PART).piece is held  # held so already: nothing let go
    assert service.MEMORIES.held(a.pk).figures.stored.source is held
    write(mariadb_ps, schema_a, "(8302, 'b')")
    a.refresh_from_db()
    partitions = a.partitions
    assert poll_server(a).ok
    assert 0 < compared[-1] < partitions  # continued: only what changed compared
    assert not pollmemory._unread(held_part(a, FIGURES_PART).piece)
    assert_stored_is_the_truth(a, schema_a, settings, "after its figures were held as stored")
    write(mariadb_ps, schema_a, "(8303, 'c')")
    assert poll_server(a).ok
    assert_stored_is_the_truth(a, schema_a, settings, "the poll after")
    assert_stored_is_the_truth(b, schema_b, settings, "the other server")
