"""What partdash measures about compression, and the nominal figure labelled as such
(the pure `partdash.health.compression`)."""

import pytest

from partdash.health import compression
from partdash.health.partitions import PartitionState

MiB = 1024 * 1024
KEY_BLOCK_SIZE_4 = "row_format=COMPRESSED key_block_size=4"


def zipped(*counters: tuple[int | None, int | None], file_bytes: int = 10 * MiB):
    """ROW_FORMAT=COMPRESSED partitions with 4 KiB zip pages and these (ops, ops_ok)."""
    return [
        PartitionState(
            f"p{i}",
            ordinal=i,
            row_format="Compressed",
            page_size=4096,
            compress_ops=ops,
            compress_ops_ok=ok,
            file_bytes=file_bytes,
            allocated_bytes=file_bytes,
        )
        for i, (ops, ok) in enumerate(counters)
    ]


def test_each_failed_compression_is_a_page_split():
    result = compression.table_compression(zipped((1000, 700), (3000, 2900)), KEY_BLOCK_SIZE_4)
    assert result.splits == 400 and result.compress_ops == 4000
    assert "400 page splits" in result.verdict


def test_without_counters_the_splits_are_unknown_not_zero():
    result = compression.table_compression(zipped((None, None)), KEY_BLOCK_SIZE_4)
    assert result.splits is None and result.compress_ops is None


def test_the_row_format_ratio_is_labelled_nominal_whatever_the_data():
    noise = compression.table_compression(zipped((1000, 500), file_bytes=20 * MiB))
    text = compression.table_compression(zipped((1000, 1000), file_bytes=5 * MiB))
    assert noise.ratio == text.ratio == 4.0
    for result in (noise, text):
        assert result.nominal is True
        assert result.ratio_label == (
            "nominal page ratio 16 KiB / KEY_BLOCK_SIZE 4 KiB, not the achieved compression"
        )
        assert result.saved_ratio is None  # the uncompressed size is known nowhere
    assert (noise.file_bytes, text.file_bytes) == (20 * MiB, 5 * MiB)


def test_page_compression_saves_what_the_file_system_did_not_allocate():
    partitions = [
        PartitionState("p0", file_bytes=100 * MiB, allocated_bytes=40 * MiB),
        PartitionState("p1", 1, file_bytes=100 * MiB, allocated_bytes=20 * MiB),
        PartitionState("p2", 2, file_bytes=None, allocated_bytes=None),
    ]
    result = compression.table_compression(partitions, "`PAGE_COMPRESSED`='1'")
    assert (result.file_bytes, result.allocated_bytes) == (200 * MiB, 60 * MiB)
    assert result.saved_ratio == pytest.approx(0.7)
    assert result.nominal is False and result.ratio_label.endswith("measured")
    assert result.splits is None


@pytest.mark.parametrize(
    ("file_bytes", "allocated", "saved"),
    [(100, 40, 0.6), (100, 100, 0.0), (100, 120, 0.0), (0, 0, None), (None, 5, None)],
)
def test_saved_ratio(file_bytes, allocated, saved):
    assert compression.saved_ratio(file_bytes, allocated) == saved


def test_the_api_keeps_the_contract_names_and_says_nominal():
    fields = compression.api_fields(compression.table_compression(zipped((100, 90))))
    assert fields["ratio"] == 4.0 and fields["failure_rate"] == pytest.approx(0.1)
    assert fields["nominal"] is True and fields["ratio_is_nominal"] is True
    assert {"splits", "file_bytes", "allocated_bytes", "saved_ratio", "ratio_label"} <= set(fields)


def test_health_stored_before_the_label_is_shown_labelled():
    stored = {"kind": "row", "ratio": 4.0, "failure_rate": 0.1, "ratio_is_nominal": True,
              "zip_page_size": 4096, "verdict": "fails"}  # fmt: skip
    shown = compression.stored_api_fields(stored)
    assert shown["nominal"] is True and shown["ratio"] == 4.0
    assert shown["ratio_label"].startswith("nominal page ratio 16 KiB / KEY_BLOCK_SIZE 4 KiB")
    assert shown["splits"] is None and shown["file_bytes"] is None
    assert compression.stored_api_fields(None) is None
    current = compression.api_fields(compression.table_compression(zipped((100, 90))))
    assert compression.stored_api_fields(current) is current


def paged_out(ops: int, ok: int, zip_kib: int, pages: int, file_bytes: int):
    """One ROW_FORMAT=COMPRESSED partition whose statistics hold `pages` zip pages."""
    return [
        PartitionState(
            "p0",
            row_format="Compressed",
            page_size=zip_kib * 1024,
            compress_ops=ops,
            compress_ops_ok=ok,
            data_bytes=pages * zip_kib * 1024,
            index_bytes=0,
            file_bytes=file_bytes,
            allocated_bytes=file_bytes,
        )
    ]


def test_the_achieved_ratio_is_the_pages_uncompressed_over_the_files():
    result = compression.table_compression(paged_out(1000, 1000, 4, 481, 4 * MiB))
    assert result.achieved_ratio == pytest.approx(481 * 16384 / (4 * MiB))
    assert result.achieved_label.startswith("measured: the statistics' pages uncompressed")
    assert result.ratio == 4.0 and result.does_not_compress is False


@pytest.mark.parametrize(
    ("ops", "ok", "why"),
    [(1000, 600, "part empty"), (None, None, "until the failure rate"), (50, 50, "until")],
)
def test_the_achieved_ratio_is_withheld_where_pages_may_be_part_empty(ops, ok, why):
    result = compression.table_compression(paged_out(ops, ok, 4, 481, 4 * MiB))
    assert result.achieved_ratio is None and why in result.achieved_label


def test_failing_at_half_a_page_says_first_the_data_does_not_compress():
    result = compression.table_compression(paged_out(3755, 2255, 8, 801, 10 * MiB))
    assert result.verdict.startswith("the data does not compress to half its size: 39.9%")
    assert result.does_not_compress is True and result.is_finding is True
    quarter = compression.table_compression(paged_out(3755, 2255, 4, 801, 10 * MiB))
    assert quarter.is_finding and quarter.does_not_compress is False  # 2:1 may still fit


def test_page_compression_achieves_its_measured_ratio():
    partitions = [PartitionState("p0", file_bytes=100 * MiB, allocated_bytes=40 * MiB)]
    result = compression.table_compression(partitions, "PAGE_COMPRESSED=1")
    assert result.achieved_ratio == result.ratio == 2.5


def test_health_stored_before_the_achieved_ratio_shows_it_unknown():
    stored = compression.api_fields(compression.table_compression(zipped((100, 90))))
    for name in ("achieved_ratio", "achieved_label", "does_not_compress"):
        del stored[name]
    shown = compression.stored_api_fields(stored)
    assert shown["achieved_ratio"] is None and "next analysis" in shown["achieved_label"]
    assert shown["splits"] == stored["splits"] and shown["nominal"] is True
