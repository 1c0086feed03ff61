"""Compression kinds from the row format and CREATE_OPTIONS as MariaDB 10.11 spells them
("`PAGE_COMPRESSED`='1'"), failure rates, ratios and verdicts (the pure
`partdash.health.compression`)."""

import pytest

from partdash.health import compression
from tests.health.builders import MiB, part, table


@pytest.mark.parametrize(
    ("row_format", "options", "kind"),
    [
        ("Compressed", "row_format=COMPRESSED key_block_size=8 partitioned", "row"),
        ("Compressed", "partitioned", "row"),
        ("", "row_format=COMPRESSED partitioned", "row"),
        ("Dynamic", "KEY_BLOCK_SIZE=4", "row"),
        ("", "partitioned `PAGE_COMPRESSED`='1'", "page"),
        ("", "partitioned `page_compressed`='ON' `page_compression_level`='3'", "page"),
        ("", "PAGE_COMPRESSED=1", "page"),
        ("", 'COMPRESSION="zlib" partitioned', "page"),
        ("", "COMPRESSION='lz4'", "page"),
        ("", "partitioned `PAGE_COMPRESSED`='0'", None),
        ("", "partitioned `page_compressed`='OFF'", None),
        ("", 'COMPRESSION="None"', None),
        ("Dynamic", "partitioned", None),
        ("", "", None),
        ("", None, None),
        ("Dynamic", "key_block_size=0", None),
    ],
)
def test_compression_kind_from_row_format_and_create_options(row_format, options, kind):
    assert compression.compression_kind([row_format], options) == kind


@pytest.mark.parametrize(
    ("ops", "ok", "rate"),
    [(1000, 950, 0.05), (1000, 1000, 0.0), (200, 0, 1.0), (0, 0, None), (None, None, None)],
)
def test_failure_rate(ops, ok, rate):
    assert compression.failure_rate(ops, ok) == (pytest.approx(rate) if rate is not None else None)


def test_an_uncompressed_table_has_no_compression():
    partitions = table([100, 100], row_format="Dynamic", page_size=16384)
    assert compression.table_compression(partitions, "partitioned") is None
    assert compression.partition_compression(partitions[0], "partitioned") is None


def compressed(zip_size: int, counters: list[tuple[int | None, int | None]]):
    return [
        part(
            f"p{i}",
            1000,
            i,
            row_format="Compressed",
            page_size=zip_size,
            compress_ops=ops,
            compress_ops_ok=ok,
        )
        for i, (ops, ok) in enumerate(counters)
    ]


def test_key_block_size_8_that_compresses_well_is_no_finding():
    result = compression.table_compression(
        compressed(8192, [(1000, 990), (1000, 980)]), "row_format=COMPRESSED key_block_size=8"
    )
    assert result.kind == "row"
    assert result.ratio == 2.0
    assert result.ratio_is_nominal
    assert result.failure_rate == pytest.approx(0.015)
    assert not result.is_finding
    assert result.zip_page_size == 8192


def test_incompressible_data_at_key_block_size_4_says_reconsider_key_block_size():
    result = compression.table_compression(compressed(4096, [(1000, 700), (3000, 2100)]))
    assert result.ratio == 4.0
    assert result.failure_rate == pytest.approx(0.3)
    assert result.is_finding
    assert "KEY_BLOCK_SIZE=4" in result.verdict


def test_without_per_index_counters_the_failure_rate_is_unknown_and_says_how_to_get_it():
    result = compression.table_compression(compressed(8192, [(None, None), (None, None)]))
    assert result.failure_rate is None
    assert not result.is_finding
    assert "innodb_cmp_per_index_enabled=ON" in result.verdict


def test_partitions_without_counters_do_not_dilute_the_rate():
    result = compression.table_compression(compressed(8192, [(1000, 800), (None, None)]))
    assert result.failure_rate == pytest.approx(0.2)


def test_too_few_compressions_are_not_judged():
    result = compression.table_compression(compressed(8192, [(10, 5)]))
    assert result.failure_rate == 0.5
    assert not result.is_finding
    assert "too few" in result.verdict


def test_each_partition_has_its_own_failure_rate():
    partitions = compressed(8192, [(1000, 1000), (1000, 500)])
    rates = [compression.partition_compression(p).failure_rate for p in partitions]
    assert rates == [0.0, 0.5]


@pytest.mark.parametrize(
    ("page_size", "options", "innodb_page_size", "zip_size"),
    [
        (8192, "", 16384, 8192),  # the tablespace says
        (16384, "row_format=COMPRESSED key_block_size=4", 16384, 4096),  # options say
        (None, "row_format=COMPRESSED", 16384, 8192),  # InnoDB's default: half a page
        (None, "row_format=COMPRESSED", 32768, 16384),
    ],
)
def test_the_zip_page_size(page_size, options, innodb_page_size, zip_size):
    partitions = [part("p0", 1, row_format="Compressed", page_size=page_size)]
    result = compression.table_compression(partitions, options, innodb_page_size)
    assert result.zip_page_size == zip_size
    assert result.ratio == innodb_page_size / zip_size


def test_page_compression_ratio_is_file_size_over_allocated_size():
    partitions = [
        part("p0", 1, 0, file_bytes=100 * MiB, allocated_bytes=40 * MiB),
        part("p1", 1, 1, file_bytes=100 * MiB, allocated_bytes=40 * MiB),
        part("p2", 1, 2, file_bytes=None, allocated_bytes=None),
    ]
    result = compression.table_compression(partitions, "`PAGE_COMPRESSED`='1'")
    assert result.kind == "page"
    assert result.ratio == 2.5
    assert not result.ratio_is_nominal
    assert result.failure_rate is None
    assert not result.is_finding
    assert "60%" in result.verdict


def test_page_compression_of_incompressible_data_is_a_finding():
    partitions = [part("p0", 1, file_bytes=100 * MiB, allocated_bytes=98 * MiB)]
    result = compression.table_compression(partitions, 'COMPRESSION="zlib"')
    assert result.ratio == pytest.approx(100 / 98)
    assert result.is_finding


@pytest.mark.parametrize(
    ("file_bytes", "allocated", "ratio"),
    [(100, 50, 2.0), (100, 100, 1.0), (0, 0, None), (None, 5, None), (5, None, None)],
)
def test_page_compression_ratio(file_bytes, allocated, ratio):
    assert compression.page_compression_ratio(file_bytes, allocated) == ratio


def test_server_wide_failure_rates_per_page_size_from_innodb_cmp():
    rows = [
        {"page_size": 1024, "compress_ops": 0, "compress_ops_ok": 0},
        {"page_size": 8192, "compress_ops": 2000, "compress_ops_ok": 1900},
    ]
    assert compression.server_failure_rates(rows) == {1024: None, 8192: pytest.approx(0.05)}
