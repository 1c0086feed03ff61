"""What a poll stores: only figures that changed, and read counters only once they grew
by more than a table open costs (PARTDASH_MIN_SAMPLED_READS page reads)."""

import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.metrics.models import Partition, PartitionSample
from partdash.metrics.store import PollStore
from tests import builders
from tests.recorded_mysql import RecordedSession, mysql80

pytestmark = pytest.mark.django_db


def poll_with_reads(server, poll_id: str, reads: int):
    """One stored poll of the recorded MySQL 8 server, p2026 having `reads` page reads."""
    flavor, version, results = mysql80()
    files = results["file_summary_by_instance"]
    path, _, writes, _, write_bytes, _ = files[0]
    files[0] = (path, reads, writes, reads * 16384, write_bytes, reads * 90)
    collection = collect(RecordedSession(flavor, version, results), CollectRequest())
    PollStore(server=server, collection=collection, poll_id=poll_id, seconds=0).save()
    return Partition.objects.get(table__server=server, name="p2026")


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
