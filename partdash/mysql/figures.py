"""The per-partition figures, declared once each (as `health.kinds` declares finding
kinds): which source gives a figure and from which column, its unit, whether it is a
level or a counter, whether it is stored (a `Partition` column of its name), sampled (a
`PartitionSample` column: its history), in the partitions API, and which figure it moves
with. The sources' queries, the collector's merges, the store's columns and its samples,
the poll memory's format and the API's field list read this registry instead of lists of
figure names, so adding a figure is one declaration here, its field in the source's row
and the collector's `PartitionFigures`, and its column in `metrics/models.py` with the
migration (docs/development.md, "Add a source").

Declared in the order the store writes them: the sampled figures (sizes, activity,
compression) first, then the others. Keys of `partdash.mysql.catalogue`'s sources are
spelt here as strings: the catalogue builds some of its queries from this registry.
"""

import hashlib
from dataclasses import dataclass
from typing import Literal

# What a sampled figure is, in the store's words (`metrics.models.SIZE_FIGURES`...).
Group = Literal["size", "activity", "compression", ""]

# The catalogue keys of the sources whose figures are declared here.
INNODB_TABLE_STATS = "innodb_table_stats"
TABLESPACES = "tablespaces"
FILE_IO = "file_io"
TABLESTATS = "tablestats"
CMP_PER_INDEX = "cmp_per_index"


@dataclass(frozen=True, slots=True)
class PartitionFigure:
    """One figure of one partition, as a source gives it.

    `name`: the collector's `PartitionFigures` attribute, the source row's field and,
    where `stored`, the `Partition` column (and the `PartitionSample` column where
    `sampled`). `column`: what the source's query selects for it, where the catalogue
    builds that query from this registry ("" where the source derives it: data bytes
    from pages and the page size). `counter`: cumulative (reset by TRUNCATE or a
    restart; rates are derived across resets) rather than a level. `follows`: a figure
    that moves whenever this one moves (read bytes with reads), so the incremental read
    hashes it not and a handful of header-page reads keeps both (`metrics.store`).
    `api`: shown in `/api/v1/tables/{id}/partitions/`."""

    name: str
    source: str
    unit: str
    column: str = ""
    counter: bool = False
    stored: bool = True
    sampled: bool = False
    group: Group = ""
    follows: str = ""
    api: bool = True


_FIGURES: dict[str, PartitionFigure] = {}


def register(figure: PartitionFigure) -> PartitionFigure:
    """Add a figure; a second of the same name is refused, and so is a sampled one
    outside a group or one that follows a figure not declared before it."""
    if figure.name in _FIGURES:
        raise ValueError(f"partition figure {figure.name!r} is already registered")
    if figure.sampled != bool(figure.group) or (figure.sampled and not figure.stored):
        raise ValueError(f"partition figure {figure.name!r}: a sampled figure is stored in a group")
    if figure.follows and figure.follows not in _FIGURES:
        raise ValueError(f"partition figure {figure.name!r} follows an undeclared figure")
    _FIGURES[figure.name] = figure
    return figure


def registered() -> tuple[PartitionFigure, ...]:
    """Every figure, in the order declared."""
    return tuple(_FIGURES.values())


def figure(name: str) -> PartitionFigure:
    return _FIGURES[name]


def of_source(source: str) -> tuple[str, ...]:
    """The names of a source's figures, in the order its query selects them."""
    return tuple(f.name for f in _FIGURES.values() if f.source == source)


def columns(source: str) -> str:
    """What a source's query selects for its figures, in that order."""
    return ", ".join(_FIGURES[name].column for name in of_source(source))


def sampled(group: Group | None = None) -> tuple[str, ...]:
    """The sampled figures (of one group), in the order declared."""
    return tuple(
        f.name for f in _FIGURES.values() if f.sampled and (group is None or f.group == group)
    )


def stored_unsampled() -> tuple[str, ...]:
    """The figures stored on the partition but not sampled (the latest value only)."""
    return tuple(f.name for f in _FIGURES.values() if f.stored and not f.sampled)


def following(name: str) -> tuple[str, ...]:
    """The figures that move with `name` (`follows`)."""
    return tuple(f.name for f in _FIGURES.values() if f.follows == name)


def in_api() -> tuple[str, ...]:
    return tuple(f.name for f in _FIGURES.values() if f.stored and f.api)


def layout() -> str:
    """A short digest of the declarations: what was stored under another layout (the poll
    memory's parts) is not read back as this one."""
    text = "|".join(f"{f.name}:{f.source}:{f.sampled}:{f.stored}" for f in _FIGURES.values())
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:12]


# -- the built-in figures ----------------------------------------------------------------

# mysql.innodb_table_stats: the persistent statistics (estimates; `stats_updated_at` says
# how old). Data and index bytes are pages times the partition's physical page size.
register(PartitionFigure("rows", INNODB_TABLE_STATS, "rows", sampled=True, group="size"))
register(PartitionFigure("data_bytes", INNODB_TABLE_STATS, "bytes", sampled=True, group="size"))
register(PartitionFigure("index_bytes", INNODB_TABLE_STATS, "bytes", sampled=True, group="size"))
# The tablespace list: the file's apparent and allocated size.
register(PartitionFigure("file_bytes", TABLESPACES, "bytes", sampled=True, group="size"))
register(PartitionFigure("allocated_bytes", TABLESPACES, "bytes", sampled=True, group="size"))
# performance_schema.file_summary_by_instance: physical I/O on the partition's file.
register(
    PartitionFigure(
        "read_ops", FILE_IO, "reads", "COUNT_READ", counter=True, sampled=True, group="activity"
    )
)
register(
    PartitionFigure(
        "write_ops", FILE_IO, "writes", "COUNT_WRITE", counter=True, sampled=True, group="activity"
    )
)
register(
    PartitionFigure(
        "read_bytes",
        FILE_IO,
        "bytes",
        "SUM_NUMBER_OF_BYTES_READ",
        counter=True,
        sampled=True,
        group="activity",
        follows="read_ops",
    )
)
register(
    PartitionFigure(
        "write_bytes",
        FILE_IO,
        "bytes",
        "SUM_NUMBER_OF_BYTES_WRITE",
        counter=True,
        sampled=True,
        group="activity",
    )
)
# The time the server waited on the file's reads (the buffer-pool misses queries wait
# for), in microseconds: performance_schema counts picoseconds, which a year of waiting on
# one file would carry past a signed BIGINT. It moves with the reads, so the incremental
# read does not hash it and a handful of header-page reads keeps it, as read bytes. What
# it costs: the integer parsed, where file rows are read (measured through PyMySQL on
# MariaDB 10.11, 64,000 rows shaped like the source's: 0.242 s read whole, 0.271 s with
# it, best of 7); a quiet poll reads no file row, nor more buckets for it.
register(
    PartitionFigure(
        "read_wait_us",
        FILE_IO,
        "microseconds",
        "SUM_TIMER_READ DIV 1000000",
        counter=True,
        sampled=True,
        group="activity",
        follows="read_ops",
    )
)
# InnoDB's in-memory table statistics: rows changed since the last statistics refresh.
register(
    PartitionFigure(
        "modified_counter",
        TABLESTATS,
        "rows",
        "MODIFIED_COUNTER",
        counter=True,
        sampled=True,
        group="activity",
    )
)
# INNODB_CMP_PER_INDEX, summed over the partition's indexes.
for _name, _column, _unit in (
    ("compress_ops", "compress_ops", "operations"),
    ("compress_ops_ok", "compress_ops_ok", "operations"),
    ("compress_time", "compress_time", "seconds"),
    ("uncompress_ops", "uncompress_ops", "operations"),
    ("uncompress_time", "uncompress_time", "seconds"),
):
    register(
        PartitionFigure(
            _name,
            CMP_PER_INDEX,
            _unit,
            _column,
            counter=True,
            sampled=True,
            group="compression",
            api=False,
        )
    )
# Stored, not sampled: the latest value is all the pages and the analysis need.
register(PartitionFigure("stats_updated_at", INNODB_TABLE_STATS, "time"))
# The file's other operations: opens, closes, flushes (fsync) and size changes. Opening a
# partition's table reads its file's first page (1 read) and, with the close that comes
# before it, costs 2 of these: a reopen leaves 2 x reads - misc where it was, where a
# page read adds 2. That is how the store tells the header reads of a table cache that
# reopens tables from a partition being read (`metrics.store._few_reads`). It moves
# with the reads as far as the incremental read is concerned: hashed only within them.
register(
    PartitionFigure(
        "misc_ops", FILE_IO, "operations", "COUNT_MISC", counter=True, follows="read_ops", api=False
    )
)
register(PartitionFigure("autoinc", TABLESTATS, "id", "{autoinc}"))
register(PartitionFigure("space_id", TABLESPACES, "id", api=False))
register(PartitionFigure("row_format", TABLESPACES, "text"))
register(PartitionFigure("page_size", TABLESPACES, "bytes", api=False))
# The collector's own, turned into bytes before they are stored.
register(PartitionFigure("clustered_pages", INNODB_TABLE_STATS, "pages", stored=False))
register(PartitionFigure("other_pages", INNODB_TABLE_STATS, "pages", stored=False))
