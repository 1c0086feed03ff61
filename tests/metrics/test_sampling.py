"""What a poll stores: only figures that changed, and read counters only once they grew
by more than a table open costs (PARTDASH_MIN_SAMPLED_READS page reads), the header reads
of a table reopened over and over not counted as the partition being read."""

import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.health import recent
from partdash.metrics.models import Partition, PartitionSample
from partdash.metrics.store import PollStore
from tests import builders
from tests.recorded_mysql import RecordedSession, mysql80

pytestmark = pytest.mark.django_db


def poll_with_reads(
    server, poll_id: str, reads: int, misc: int | None = 0, writes: int | None = None
):
    """One stored poll of the recorded MySQL 8 server, p2026 having `reads` page reads,
    `misc` other operations (opens, closes, flushes) and `writes` writes (as recorded
    where None)."""
    flavor, version, results = mysql80()
    files = results["file_summary_by_instance"]
    path, _, recorded, _, write_bytes, *_ = files[0]
    writes = recorded if writes is None else writes
    files[0] = (path, reads, writes, reads * 16384, write_bytes, reads * 90, misc)
    collection = collect(RecordedSession(flavor, version, results), CollectRequest())
    PollStore(server=server, collection=collection, poll_id=poll_id, seconds=0).save()
    return Partition.objects.get(table__server=server, name="p2026")


def read_activity(partition) -> int:
    """The bytes read that the partition's recent activity holds (its window's sum)."""
    entries = recent.loads(partition.recent)
    return sum(entry[2] for entry in entries if len(entry) > 2)


def read_samples(partition) -> list[int]:
    return list(
        PartitionSample.objects.filter(partition=partition, read_ops__isnull=False)
        .order_by("snapshot__taken_at")
        .values_list("read_ops", flat=True)
    )


def test_a_few_reads_accumulate_until_they_are_worth_a_sample(settings):
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    server = builders.server("sampling")
    first = poll_with_reads(server, "poll-1", reads=10)
    assert read_samples(first) == [10]

    quiet = poll_with_reads(server, "poll-2", reads=13)  # a table open: 3 header reads
    assert read_samples(quiet) == [10]
    assert quiet.read_ops == 10  # accumulating against the last stored value

    busy = poll_with_reads(server, "poll-3", reads=40)
    assert read_samples(busy) == [10, 40]
    assert busy.read_ops == 40 and busy.read_bytes == 40 * 16384


def test_an_unchanged_poll_stores_no_sample():
    server = builders.server("unchanged")
    poll_with_reads(server, "poll-1", reads=10)
    before = PartitionSample.objects.count()
    poll_with_reads(server, "poll-2", reads=10)
    assert PartitionSample.objects.count() == before


def test_reads_reaching_the_next_quantum_are_sampled(settings):
    """A sample when the counter reaches the next multiple of PARTDASH_MIN_SAMPLED_READS,
    even by a few reads: what the incremental file read can tell (it hashes the quantum)."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    server = builders.server("quantum")
    poll_with_reads(server, "poll-1", reads=10)
    crossed = poll_with_reads(server, "poll-2", reads=17)
    assert read_samples(crossed) == [10, 17]
    within = poll_with_reads(server, "poll-3", reads=31)  # 14 more, the same quantum
    assert read_samples(within) == [10, 17] and within.read_ops == 17


def test_the_header_reads_of_reopens_are_no_sample_and_no_activity(settings):
    """A table cache smaller than the tables reopens them: each reopen reads every
    partition file's first page and costs 2 other operations (its close and its open),
    which leaves 2 x reads - misc where it was. Such reads are not sampled until they
    reach COARSE_QUANTA quanta, and then stored without being called reading."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16  # coarse: 8 x 16 = 128 reads
    server = builders.server("reopened")
    first = poll_with_reads(server, "poll-1", reads=10, misc=20)
    assert read_samples(first) == [10] and first.misc_ops == 20
    reopened = poll_with_reads(server, "poll-2", reads=60, misc=120)  # 50 reopens
    assert read_samples(reopened) == [10] and reopened.read_ops == 10
    assert reopened.misc_ops == 20 and read_activity(reopened) == 0
    half = poll_with_reads(server, "poll-3", reads=61, misc=121)  # and an open, since
    assert read_samples(half) == [10] and half.read_ops == 10
    coarse = poll_with_reads(server, "poll-4", reads=130, misc=260)  # 120 reopens in all
    assert read_samples(coarse) == [10, 130] and coarse.misc_ops == 260
    assert read_activity(coarse) == 0
    assert coarse.read_bytes_per_s == 0


def test_reads_beside_reopens_are_sampled_as_soon_as_without_them(settings):
    """20 page reads among 50 reopens: the net reads reach the next quantum as 20 reads
    alone would (2 x 16), and only those 20 are the partition being read."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    server = builders.server("read-and-reopened")
    poll_with_reads(server, "poll-1", reads=10, misc=20)
    few = poll_with_reads(server, "poll-2", reads=10 + 50 + 15, misc=20 + 100)
    assert read_samples(few) == [10], "15 page reads: within the quantum, as without reopens"
    read = poll_with_reads(server, "poll-3", reads=10 + 50 + 20, misc=20 + 100)
    assert read_samples(read) == [10, 80] and read.read_ops == 80
    assert read_activity(read) == 20 * 16384


def test_a_written_file_has_its_reads_taken_less_what_reopens_explain(settings):
    """A written file is stored anyway, its reads as they are; its rates and activity
    count the reads its flushes and reopens do not explain (each write may cost up to 3
    other operations), so a partition written and read keeps its reads."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    server = builders.server("written")
    poll_with_reads(server, "poll-1", reads=10, misc=20, writes=30)
    # 40 reopens (40 reads, 80 misc), then written once (3 misc) and read 25 pages.
    written = poll_with_reads(server, "poll-2", reads=10 + 40 + 25, misc=20 + 80 + 3, writes=31)
    assert read_samples(written) == [10, 75] and written.read_ops == 75
    assert read_activity(written) == 25 * 16384
    # Written hard and read: 500 pages written with their flushes, 200 read, no reopen.
    busy = poll_with_reads(server, "poll-3", reads=275, misc=103 + 600, writes=531)
    assert read_activity(busy) == (25 + 200) * 16384


def test_other_operations_alone_change_nothing_stored(settings):
    """A close (or a flush) moves the other operations only: nothing sampled or stored."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    server = builders.server("closed")
    poll_with_reads(server, "poll-1", reads=10, misc=20)
    before = PartitionSample.objects.count()
    closed = poll_with_reads(server, "poll-2", reads=10, misc=21)
    assert PartitionSample.objects.count() == before and closed.misc_ops == 20


def test_reads_stored_before_other_operations_were_read_are_compared_by_quantum(settings):
    """Figures stored before COUNT_MISC was read (migration 0016) hold none: the first poll
    after stores it with the reads, from then on reopens are told apart; a source that
    gives none keeps the reads' quantum."""
    settings.PARTDASH_MIN_SAMPLED_READS = 16
    server = builders.server("upgraded")
    before = poll_with_reads(server, "poll-1", reads=10, misc=None)
    assert before.misc_ops is None and read_samples(before) == [10]
    within = poll_with_reads(server, "poll-2", reads=12, misc=None)  # the quantum's rule
    assert read_samples(within) == [10] and within.read_ops == 10
    first = poll_with_reads(server, "poll-3", reads=13, misc=26)
    assert first.misc_ops == 26 and first.read_ops == 13
    reopened = poll_with_reads(server, "poll-4", reads=13 + 40, misc=26 + 80)
    assert reopened.read_ops == 13 and reopened.misc_ops == 26
