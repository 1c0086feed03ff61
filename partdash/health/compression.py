"""Compression per table and partition: what partdash measures, and the nominal page
ratio labelled as such.

Two kinds, measured differently:
- "row": ROW_FORMAT=COMPRESSED (KEY_BLOCK_SIZE). Each 16 KiB logical page is stored in a
  zip page of KEY_BLOCK_SIZE; when it does not fit, compression fails and InnoDB
  splits the page. The statistics count pages in zip size, so data_bytes is the true
  physical size. `ratio` is the nominal one, innodb_page_size / zip page size (16K/8K =
  2.0), an upper bound that failures and half-empty pages eat into (`nominal`):
  identical for random and text rows, whose files differ twice over. What is measured:
  the failure rate (1 - COMPRESS_OPS_OK / COMPRESS_OPS from INNODB_CMP_PER_INDEX), the
  page splits the failures imply (each failed compression of a zip page splits it:
  ops - ops_ok), and the files' bytes.
  The achieved ratio (`achieved_ratio`) is the statistics' pages (clustered plus other
  indexes) at innodb_page_size, the table as InnoDB holds it uncompressed, over the
  files' bytes: measured on MariaDB 10.11, text rows at KEY_BLOCK_SIZE=8 take exactly as
  many pages as the same rows in ROW_FORMAT=DYNAMIC (353 and 353), so while compressions
  succeed the pages are an uncompressed table's. Failed compressions split pages and
  leave them part empty (random rows: 801 pages against 353), so where more than
  FAILURE_RATE_LIMIT fail, or the rate is unknown, it is withheld rather than flatter
  data that does not compress. Rows x average row length is no alternative:
  AVG_ROW_LENGTH is DATA_LENGTH / rows, compressed bytes again. The files hold space
  InnoDB reserved and has not used yet, compressed or not (a 60,000-row DYNAMIC table's
  pages filled half its files), so a small table's achieved ratio reads low.
  A zip page of half innodb_page_size or more (KEY_BLOCK_SIZE=8 of 16 KiB) failing
  beyond the limit means the data does not compress to half its size:
  ROW_FORMAT=COMPRESSED saves no space there (`does_not_compress`), nor would a larger
  KEY_BLOCK_SIZE.
- "page": page compression (MariaDB PAGE_COMPRESSED, MySQL COMPRESSION=) punches holes
  in the file: the saving is the apparent file size over the blocks really allocated,
  both exact. There is no failure counter per table.
Ratios read "times smaller": 2.0 means half the space; 1.0 is no saving.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from operator import attrgetter
from typing import Any, Literal, TypedDict, cast

from partdash.health.partitions import PartitionState

# InnoDB's own alarm: innodb_compression_failure_threshold_pct defaults to 5, the failure
# rate at which it starts padding pages; the manuals advise reconsidering KEY_BLOCK_SIZE
# when failures exceed a few percent.
FAILURE_RATE_LIMIT = 0.05
# Fewer compression operations than this say nothing about the rate.
MIN_COMPRESS_OPS = 100
# Page compression saving under 10%: incompressible data, or a file system that does not
# punch holes.
PAGE_RATIO_LIMIT = 1.1
DEFAULT_PAGE_SIZE = 16384

Kind = Literal["row", "page"]

_PAGE_COMPRESSED = re.compile(r"\bpage_compressed\s*=\s*'?(1|on|yes)'?", re.I)
_COMPRESSION = re.compile(r"\bcompression\s*=\s*['\"]?(\w+)", re.I)
_ROW_COMPRESSED = re.compile(r"\brow_format\s*=\s*compressed\b", re.I)
_KEY_BLOCK_SIZE = re.compile(r"\bkey_block_size\s*=\s*'?(\d+)", re.I)
_ROW_FORMAT = attrgetter("row_format")


@dataclass(frozen=True, slots=True)
class Compression:
    """One table's or partition's compression figures and what to do about them."""

    kind: Kind
    ratio: float | None
    failure_rate: float | None
    verdict: str
    ratio_is_nominal: bool
    is_finding: bool = False
    zip_page_size: int | None = None
    estimated: bool = False
    # Measured: compressions (window deltas, else totals) and the page splits their
    # failures imply; the files' apparent and allocated bytes; for page compression the
    # share of the file saved (1 - allocated / file).
    compress_ops: int | None = None
    splits: int | None = None
    file_bytes: int | None = None
    allocated_bytes: int | None = None
    saved_ratio: float | None = None
    # What `ratio` is, in words a page shows beside it.
    ratio_label: str = ""
    # Measured: the uncompressed size over the files' bytes (see the module's docstring),
    # None where it cannot be known honestly; `achieved_label` says what it is, or why not.
    achieved_ratio: float | None = None
    achieved_label: str = ""
    does_not_compress: bool = False

    @property
    def nominal(self) -> bool:
        """`ratio` is arithmetic on page sizes, not a measured compression."""
        return self.ratio_is_nominal


def key_block_size(create_options: str | None) -> int | None:
    """KEY_BLOCK_SIZE in KiB from CREATE_OPTIONS; None when absent or 0."""
    match = _KEY_BLOCK_SIZE.search((create_options or "").replace("`", ""))
    return (int(match[1]) or None) if match else None


def compression_kind(row_formats: Iterable[str], create_options: str | None) -> Kind | None:
    """How a table is compressed, from its partitions' ROW_FORMAT and CREATE_OPTIONS
    (MariaDB: "`PAGE_COMPRESSED`='1'", MySQL: 'COMPRESSION="zlib"',
    "row_format=COMPRESSED key_block_size=8"); None when it is not."""
    options = (create_options or "").replace("`", "")
    # Each distinct format once: a table's partitions nearly always share one.
    if any((f or "").lower() == "compressed" for f in set(row_formats)):
        return "row"
    if _ROW_COMPRESSED.search(options) or key_block_size(options):
        return "row"
    algorithm = _COMPRESSION.search(options)
    if _PAGE_COMPRESSED.search(options) or (algorithm and algorithm[1].lower() != "none"):
        return "page"
    return None


def failure_rate(ops: int | None, ops_ok: int | None) -> float | None:
    """1 - COMPRESS_OPS_OK / COMPRESS_OPS, from totals or window deltas; None without ops."""
    if not ops or ops_ok is None:
        return None
    return min(1.0, max(0.0, 1 - ops_ok / ops))


def page_compression_ratio(file_bytes: int | None, allocated_bytes: int | None) -> float | None:
    """Apparent file size over allocated blocks; None when either is unknown or zero."""
    if not file_bytes or not allocated_bytes:
        return None
    return file_bytes / allocated_bytes


def zip_page_size(
    partitions: Sequence[PartitionState], create_options: str | None, page_size: int
) -> int:
    """The physical page size of ROW_FORMAT=COMPRESSED: the tablespace's (the collector
    stores the zip size there), else KEY_BLOCK_SIZE, else InnoDB's default of half a page."""
    physical = [p.page_size for p in partitions if p.page_size and p.page_size < page_size]
    if physical:
        return physical[0]
    kib = key_block_size(create_options)
    return kib * 1024 if kib else page_size // 2


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def nominal_label(page_size: int, zip_size: int) -> str:
    """What the nominal ratio of ROW_FORMAT=COMPRESSED is, and is not."""
    return (
        f"nominal page ratio {page_size // 1024} KiB / KEY_BLOCK_SIZE {zip_size // 1024} KiB, "
        "not the achieved compression"
    )


PAGE_LABEL = "file bytes / allocated bytes, measured"


def splits(ops: int | None, ops_ok: int | None) -> int | None:
    """The page splits failed compressions imply: each failure splits its zip page."""
    if ops is None or ops_ok is None:
        return None
    return max(0, ops - ops_ok)


def saved_ratio(file_bytes: int | None, allocated_bytes: int | None) -> float | None:
    """The share of the file page compression saves: 1 - allocated / file."""
    if not file_bytes or allocated_bytes is None:
        return None
    return max(0.0, 1 - allocated_bytes / file_bytes)


def _files(partitions: Sequence[PartitionState]) -> tuple[int | None, int | None]:
    """Apparent and allocated bytes over the partitions that know both."""
    both = [p for p in partitions if p.file_bytes and p.allocated_bytes]
    return _sum(p.file_bytes for p in both), _sum(p.allocated_bytes for p in both)


def _row_verdict(
    rate: float | None, ops: int | None, split_count: int | None, zip_size: int, page_size: int
) -> tuple[bool, str]:
    kib = zip_size // 1024
    if rate is None:
        return False, (
            "failure rate unknown: SET GLOBAL innodb_cmp_per_index_enabled=ON to measure it"
        )
    if (ops or 0) < MIN_COMPRESS_OPS:
        return False, f"too few compressions ({ops}) to judge the failure rate"
    failed = f"{split_count or 0:,} page splits"
    if rate > FAILURE_RATE_LIMIT and _is_half_page_or_more(zip_size, page_size):
        return True, (
            f"the data does not compress to half its size: {rate:.1%} of compressions fail "
            f"at KEY_BLOCK_SIZE={kib}, half a {page_size // 1024} KiB page ({failed}; limit "
            f"{FAILURE_RATE_LIMIT:.0%}), so ROW_FORMAT=COMPRESSED saves no space here"
        )
    if rate > FAILURE_RATE_LIMIT:
        return True, (
            f"{rate:.1%} of compressions fail ({failed}; limit {FAILURE_RATE_LIMIT:.0%}): "
            f"reconsider KEY_BLOCK_SIZE={kib} (a larger one, or page compression) or the "
            "data is incompressible"
        )
    return False, (
        f"compression works: {rate:.1%} of compressions fail ({failed}) at KEY_BLOCK_SIZE={kib}"
    )


def _is_half_page_or_more(zip_size: int, page_size: int) -> bool:
    """A zip page this large holds a page only if the data compresses to half or better;
    failing there, no larger KEY_BLOCK_SIZE saves space (16 of 16 KiB saves none)."""
    return 2 * zip_size >= page_size


def achieved_ratio(
    partitions: Sequence[PartitionState], zip_size: int, page_size: int
) -> float | None:
    """The statistics' pages at innodb_page_size over the files' bytes, over the
    partitions that know both; None when none does."""
    known = [p for p in partitions if p.total_bytes is not None and p.file_bytes]
    file_bytes = sum(p.file_bytes or 0 for p in known)
    if not known or not file_bytes:
        return None
    pages = sum(p.total_bytes // (p.page_size or zip_size) for p in known)  # type: ignore[operator, misc]
    return pages * page_size / file_bytes


ACHIEVED_LABEL = (
    "measured: the statistics' pages uncompressed (clustered plus other indexes x "
    "innodb_page_size) / the files' bytes"
)


def _achieved(
    partitions: Sequence[PartitionState], rate: float | None, ops: int | None, zip_size: int,
    page_size: int,
) -> tuple[float | None, str]:  # fmt: skip
    """The achieved ratio of ROW_FORMAT=COMPRESSED, or None and why it is not known."""
    if rate is None or (ops or 0) < MIN_COMPRESS_OPS:
        return None, "achieved ratio unknown until the failure rate is known"
    if rate > FAILURE_RATE_LIMIT:
        return None, (
            "achieved ratio unknown: failed compressions split pages and leave them part "
            "empty, so the pages no longer say how large the data is uncompressed"
        )
    ratio = achieved_ratio(partitions, zip_size, page_size)
    if ratio is None:
        return None, "achieved ratio unknown: no statistics or file sizes yet"
    return ratio, ACHIEVED_LABEL


def _page_verdict(ratio: float | None) -> tuple[bool, str]:
    if ratio is None:
        return False, "file or allocated size unknown"
    if ratio < PAGE_RATIO_LIMIT:
        return True, (
            f"page compression saves little ({ratio:.2f}x): the data is incompressible or "
            "the file system does not punch holes"
        )
    return False, f"page compression saves {1 - 1 / ratio:.0%} of the file"


def row_compression(
    partitions: Sequence[PartitionState], create_options: str | None = None, page_size: int = 0
) -> Compression:
    """ROW_FORMAT=COMPRESSED figures over the given partitions (one for a partition's
    own figures, all for the table's): counters summed, then the rate."""
    page_size = page_size or DEFAULT_PAGE_SIZE
    zip_size = zip_page_size(partitions, create_options, page_size)
    ops = _sum(p.compress_ops for p in partitions)
    ok = _sum(p.compress_ops_ok for p in partitions if p.compress_ops is not None)
    rate, split_count = failure_rate(ops, ok), splits(ops, ok)
    is_finding, verdict = _row_verdict(rate, ops, split_count, zip_size, page_size)
    file_bytes, allocated_bytes = _files(partitions)
    achieved, achieved_label = _achieved(partitions, rate, ops, zip_size, page_size)
    return Compression(
        "row",
        page_size / zip_size,
        rate,
        verdict,
        True,
        is_finding,
        zip_size,
        compress_ops=ops,
        splits=split_count,
        file_bytes=file_bytes,
        allocated_bytes=allocated_bytes,
        ratio_label=nominal_label(page_size, zip_size),
        achieved_ratio=achieved,
        achieved_label=achieved_label,
        does_not_compress=is_finding and _is_half_page_or_more(zip_size, page_size),
    )


def page_compression(partitions: Sequence[PartitionState]) -> Compression:
    """Page-compression figures over the given partitions: sizes summed, then the ratio."""
    file_bytes, allocated_bytes = _files(partitions)
    ratio = page_compression_ratio(file_bytes, allocated_bytes)
    is_finding, verdict = _page_verdict(ratio)
    return Compression(
        "page",
        ratio,
        None,
        verdict,
        False,
        is_finding,
        file_bytes=file_bytes,
        allocated_bytes=allocated_bytes,
        saved_ratio=saved_ratio(file_bytes, allocated_bytes),
        ratio_label=PAGE_LABEL,
        # Page compression's ratio is measured: it is the achieved one.
        achieved_ratio=ratio,
        achieved_label=PAGE_LABEL,
    )


def table_compression(
    partitions: Sequence[PartitionState], create_options: str | None = None, page_size: int = 0
) -> Compression | None:
    """A table's compression; None when it is not compressed. `page_size`:
    innodb_page_size (default 16 KiB)."""
    kind = compression_kind(map(_ROW_FORMAT, partitions), create_options)
    if kind == "row":
        return row_compression(partitions, create_options, page_size)
    return page_compression(partitions) if kind == "page" else None


def partition_compression(
    partition: PartitionState, create_options: str | None = None, page_size: int = 0
) -> Compression | None:
    """One partition's compression (the API's per-partition `compression`)."""
    return table_compression([partition], create_options, page_size)


class CompressionShape(TypedDict):
    """`Compression` as stored and as the API shows it (`api_fields`), a table's or a
    partition's: one of the JSON shapes of `partdash.health.shapes`, kept here, below
    them, where what writes and reads it can name it."""

    kind: Kind
    ratio: float | None
    failure_rate: float | None
    verdict: str
    ratio_is_nominal: bool
    is_finding: bool
    zip_page_size: int | None
    estimated: bool
    compress_ops: int | None
    splits: int | None
    file_bytes: int | None
    allocated_bytes: int | None
    saved_ratio: float | None
    ratio_label: str
    achieved_ratio: float | None
    achieved_label: str
    does_not_compress: bool
    nominal: bool


def api_fields(compression: Compression) -> CompressionShape:
    """A compression as the API shows and the analysis stores it, the table's and each
    partition's alike: CONTRACT's `ratio` and `failure_rate`, `nominal` and `ratio_label`
    saying what the ratio is, and the measured figures (null where not measured)."""
    return cast(CompressionShape, {**asdict(compression), "nominal": compression.nominal})


def stored_api_fields(stored: CompressionShape | None) -> CompressionShape | None:
    """A table's stored compression as the API shows it. Health stored before the
    measured figures, the label or the achieved ratio existed gets what can be said from
    what it has (`nominal`, `ratio_label`; page compression's ratio is its achieved one),
    and nulls for the rest, until the table's next analysis (at most a day later)."""
    if not stored or "achieved_ratio" in stored:
        return stored
    nominal = bool(stored.get("ratio_is_nominal"))
    zip_size = stored.get("zip_page_size")
    label = PAGE_LABEL
    if nominal:
        label = nominal_label(DEFAULT_PAGE_SIZE, zip_size) if zip_size else "nominal page ratio"
    missing = ("compress_ops", "splits", "file_bytes", "allocated_bytes", "saved_ratio")
    shown: dict[str, Any] = {
        **dict.fromkeys(missing),
        "nominal": nominal,
        "ratio_label": label,
        **stored,
        "achieved_ratio": None if nominal else stored.get("ratio"),
        "achieved_label": "achieved ratio unknown until the next analysis" if nominal else label,
        "does_not_compress": False,
    }
    return cast(CompressionShape, shown)


def server_failure_rates(innodb_cmp: Iterable[dict]) -> dict[int, float | None]:
    """Server-wide failure rate per zip page size from INNODB_CMP rows (as the collector
    stores them: page_size, compress_ops, compress_ops_ok, ...), shown beside a table's."""
    return {
        int(row["page_size"]): failure_rate(row.get("compress_ops"), row.get("compress_ops_ok"))
        for row in innodb_cmp
    }
