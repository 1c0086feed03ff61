"""The analytics' input: a partition's state copied from a stored row, and
subpartitions merged into their partition (the pure `partdash.health.partitions`)."""

from types import SimpleNamespace

from partdash.health.partitions import PartitionState, merge_subpartitions
from tests.health.builders import NOW


def test_a_partition_state_copies_a_stored_partitions_attributes():
    stored = SimpleNamespace(
        name="p3",
        subpartition=None,
        ordinal=4,
        description="MAXVALUE",
        rows=12,
        data_bytes=16384,
        index_bytes=0,
        row_format=None,
        pk=99,
        table_id=7,
    )
    state = PartitionState.from_object(stored)
    assert (state.name, state.subpartition, state.ordinal, state.rows) == ("p3", "", 4, 12)
    assert state.row_format == ""
    assert state.total_bytes == 16384
    assert state.file_bytes is None


def test_merging_subpartitions_sums_figures_and_keeps_unknown_unknown():
    partitions = [
        PartitionState("p1", "p1sp1", 1, "200", rows=5, data_bytes=10, autoinc=7),
        PartitionState("p1", "p1sp0", 1, "200", rows=3, data_bytes=None, autoinc=9),
        PartitionState("p0", "", 0, "100", rows=1, stats_updated_at=NOW),
    ]
    merged = merge_subpartitions(partitions)
    assert [p.label for p in merged] == ["p0", "p1"]
    assert merged[0] is partitions[2]
    assert (merged[1].rows, merged[1].data_bytes, merged[1].autoinc) == (8, None, 9)
    assert merged[1].description == "200"


def test_a_subpartition_label_carries_both_names():
    assert PartitionState("p1", "p1sp0").label == "p1#p1sp0"
    assert PartitionState("p1").label == "p1"
