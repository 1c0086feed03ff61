"""Why a poll's store compares each partition it compares (issue 44), logged at DEBUG only."""

import logging
from datetime import UTC, datetime

from partdash.collector import comparing
from partdash.collector.collect import Collection, PartitionFigures
from partdash.mysql.dialects import dialect_for
from partdash.mysql.names import PartitionName
from partdash.mysql.sources.file_io import PartitionIO
from partdash.mysql.sources.tablespaces import PartitionFile


def collection_of(*partitions: str) -> Collection:
    collection = Collection("mariadb", "10.11.6", dialect_for("mariadb", "10.11.6"), None)
    for partition in partitions:
        name = PartitionName("shop", "orders", partition)
        collection.partitions[name.key] = PartitionFigures(name, name.key, f"{partition}#")
    return collection


def key(partition: str):
    return PartitionName("shop", "orders", partition).key


def test_each_compared_partition_is_logged_with_the_sources_that_named_it(caplog):
    caplog.set_level(logging.DEBUG, logger=comparing.__name__)
    collection = collection_of("p0", "p1", "p2", "p3", "p4")
    collection.reasons = {}
    before = PartitionIO("k1", 10, 4, 0, 0, 0, 0)
    after = PartitionIO("k1", 10, 6, 0, 0, 0, 0)
    io = comparing.gathered(collection, comparing.FILE_IO)
    assert io is not None
    comparing.note(collection, io, [(key("p1"), before), (key("p1"), after)])
    grown = PartitionFile(PartitionName("shop", "orders", "p1"), 7, 65536, 65536, 16384, "D")
    files = comparing.gathered(collection, comparing.TABLESPACES)
    assert files is not None
    comparing.note(collection, files, [(key("p1"), grown)])
    refreshed = datetime(2026, 11, 29, 0, 1, 56, tzinfo=UTC)
    collection.partitions[key("p2")].stats_updated_at = refreshed
    comparing.gathered(collection, comparing.STATISTICS).add(key("p2"))

    visit = {key("p1"), key("p2"), key("p3"), key("p4")}
    comparing.explain(collection, visit)

    poll, *partitions = caplog.records
    assert poll.compared == 4
    assert poll.reasons == {
        "tablespaces": 1,
        "file_io": 1,
        "statistics": 1,
        "unknown": 2,
    }
    assert [(r.partition.partition, r.reasons) for r in partitions] == [
        ("p1", ("tablespaces", "file_io")),
        ("p2", ("statistics",)),
        ("p3", ("unknown",)),
        ("p4", ("unknown",)),  # compared, though no source named it
    ]
    assert "write_ops 4 -> 6" in partitions[0].getMessage()
    assert "refreshed at 2026-11-29 00:01:56" in partitions[1].getMessage()


def test_nothing_is_gathered_or_logged_unless_debug_is_on(caplog):
    caplog.set_level(logging.INFO, logger=comparing.__name__)
    assert not comparing.explained()
    collection = collection_of("p0")
    assert comparing.gathered(collection, comparing.STATISTICS) is None
    comparing.explain(collection, {key("p0")})
    assert caplog.records == []
