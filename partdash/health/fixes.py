"""What a DBA can do about each finding: advice, and where partdash can write it, the
statement to run as is (names quoted, numbers computed to clear the finding).

- runway: the REORGANIZE PARTITION (or ADD PARTITION) of `runway_fix.py`;
- fragmentation: REBUILD PARTITION of the fragmented partitions;
- staleness: ANALYZE PARTITION of the stale ones;
- compression failing: where the data does not compress to half, ROW_FORMAT=DYNAMIC
  (or page compression); else a larger KEY_BLOCK_SIZE, or page compression;
- skew of HASH, LINEAR HASH, KEY and LINEAR KEY that a count spreads: ADD PARTITION (or
  PARTITION BY) of named partitions up to a prime count (`skew_fix.py`); LIST: the values
  of the DEFAULT partition need partitions of their own (advice and the query);
- pressure: SET GLOBAL of the setting, sized so the partitions fill two thirds of it,
  and the my.cnf line that keeps it after a restart.
- retention: DROP PARTITION of the partitions past the table's retention policy
  (`retention.py`): it destroys their rows, and says so.
Everything else is advice only: where no statement is safe to run blind, `sql` is None.

Every statement has a safety class (`Safety`): instant, copies (the rows and bytes of the
partitions it rewrites), blocks (writes, while it runs) or destroys (data). Nothing the
server sent is copied into a statement as text (`fix_values`), and a table whose name
MariaDB mishandles gets no statement at all (`fix_values.table_problem`).
"""

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, TypedDict

from partdash.health import kinds
from partdash.health.bounds import is_catchall, parse_expression
from partdash.health.compression import Compression
from partdash.health.fix_values import Unsafe, charset_problem, name_sql, table_problem
from partdash.health.partitions import (
    LIST_METHODS,
    RANGE_METHODS,
    PartitionState,
    merge_subpartitions,
)
from partdash.health.pressure import WARN_RATIO, WORKING_SET_RATIO, LimitPressure, WorkingSet
from partdash.health.retention import Retention
from partdash.health.runway import Runway
from partdash.health.runway_fix import (
    CannotPlan,
    bound_words,
    horizon_date,
    partitions_words,
    runway_plan,
)
from partdash.health.skew_fix import skew_plan
from partdash.lib.quoting import holds_invisible, identifier

# A limit raised to clear a pressure finding leaves the partitions at this share of it,
# so the finding stays away while the partitions grow by half again.
LIMIT_HEADROOM = 1.5
# The server's maxima (MariaDB 10.11, MySQL 8.0): beyond them SET GLOBAL fails.
SETTING_MAXIMA = {"table_open_cache": 1048576, "table_definition_cache": 2097152}
BUFFER_POOL_CHUNK = 128 << 20  # innodb_buffer_pool_chunk_size's default: the pool's unit
# Past this many partitions a list is replaced by ALL (same effect, a readable statement).
LISTED_PARTITIONS = 100
# ...in the ANALYZE a runway fix's advice ends with (a sentence, not a statement of its own).
ANALYZE_LISTED = 12

_QUOTED = re.compile(r"`((?:[^`]|``)*)`")
_BARE = re.compile(r"[\w$]+")


Safety = Literal["instant", "copies", "blocks", "destroys"]


class FixShape(TypedDict):
    """What to do about a finding (`Fix`), as stored and as the API shows it: `safety`
    says what running `sql` does (null exactly when `sql` is). One of the JSON shapes of
    `partdash.health.shapes`, kept here, below them, where `stored_fix` can name it."""

    advice: str
    sql: str | None
    safety: Safety | None
    rows: int | None
    bytes: int | None


@dataclass(frozen=True, slots=True)
class Fix:
    """`advice` in words; `sql` a statement to run as is, or None; `safety` what running
    it does (None without `sql`); `rows` and `bytes` what it copies or destroys (the
    partitions it rewrites: data and index), None where unknown or nothing."""

    advice: str
    sql: str | None = None
    safety: Safety | None = None
    rows: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        if (self.sql is None) != (self.safety is None):
            raise ValueError("a fix has a safety class exactly when it has a statement")


def copies(advice: str, sql: str, partitions: Sequence[PartitionState]) -> Fix:
    """A statement rewriting these partitions: their rows and bytes (None if unknown)."""
    return Fix(advice, sql, "copies", _known_sum(p.rows for p in partitions), _bytes(partitions))


def _known_sum(values) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _bytes(partitions: Sequence[PartitionState]) -> int | None:
    return _known_sum(
        None if p.data_bytes is None else p.data_bytes + (p.index_bytes or 0) for p in partitions
    )


def safety_words(safety: str | None, rows: int | None, size: int | None) -> str:
    """The one line shown with a statement: `copies ~1,200 rows, 5.0 MiB`, `instant`,
    `blocks writes while it runs`; empty without a statement (the pages say the same:
    frontend/src/findings.js)."""
    if safety in ("copies", "destroys"):
        amounts = [f"~{rows:,} rows" if rows is not None else "its rows"]
        if size is not None:
            amounts.append(_size_words(size))
        return f"{safety} {', '.join(amounts)}"
    return {"instant": "instant", "blocks": "blocks writes while it runs"}.get(safety or "", "")


def _size_words(size: int) -> str:
    """1536 -> `1.5 KiB`, as the pages' `bytes()` writes it."""
    scaled, unit = float(size), 0
    while abs(scaled) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        scaled, unit = scaled / 1024, unit + 1
    digits = 0 if unit == 0 or scaled >= 100 else 1
    return f"{scaled:.{digits}f} {_BYTE_UNITS[unit]}"


_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What the fixes of one table's findings need: its name and definition, its
    partitions in definition order, and the analysis' figures."""

    schema: str
    name: str
    method: str
    expression: str | None
    partitions: Sequence[PartitionState]
    now: datetime
    create_options: str = ""
    runway: Runway | None = None
    compression: Compression | None = None
    page_size: int = 16384
    fragmented: Sequence[str] = ()  # partition names (subpartitions' parents)
    fragmented_bytes: int = 0
    stale: Sequence[str] = ()
    retention: Retention | None = None

    @property
    def quoted(self) -> str:
        """`schema`.`table`, quoted for a statement (Unsafe where a name cannot be)."""
        return f"{name_sql(self.schema)}.{name_sql(self.name)}"


def column_of(expression: str | None) -> str | None:
    """The column a partitioning expression reads, spelled as the server stores it
    (`to_days(\\`d\\`)` -> `d`); None for anything but a function of one column or a
    bare column (the first for RANGE COLUMNS)."""
    if parse_expression(expression) is None:
        return None
    quoted = _QUOTED.search(expression or "")
    if quoted:
        return quoted[1].replace("``", "`")
    return parse_expression(expression)[1]  # type: ignore[index]


def bare_column(expression: str | None) -> str | None:
    """The column of an expression that is one column and nothing else."""
    text = (expression or "").strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    quoted = _QUOTED.fullmatch(text)
    if quoted:
        return quoted[1].replace("``", "`")
    return text if _BARE.fullmatch(text) else None


def partition_list(
    names: Sequence[str], all_names: Sequence[str] = (), most: int = LISTED_PARTITIONS
) -> str:
    """`p1`, `p2` (each once, in order), or ALL when they are all of `all_names` or more
    than `most` (Unsafe where a name cannot go into a statement)."""
    unique = list(dict.fromkeys(names))
    if len(unique) > most or (all_names and set(unique) >= set(all_names)):
        return "ALL"
    return ", ".join(name_sql(name) for name in unique)


# -- runway -----------------------------------------------------------------------------


def _current_id(partitions: Sequence[PartitionState]) -> int | None:
    """The next id: the highest AUTO_INCREMENT among the partitions (runway's reading)."""
    autoincs = [p.autoinc for p in partitions if p.autoinc is not None]
    return max(autoincs) if autoincs else None


def _id_target(runway: Runway, partitions, horizon_days: int) -> tuple[int, str]:
    """The id the new last bound must reach, and what is assumed about it."""
    last = runway.last_bound
    current = _current_id(partitions)
    note = ""
    if current is None:
        # Without AUTO_INCREMENT, ids in the catch-all are guessed dense after the bound.
        current = last + (runway.catchall_rows or 0) + 1  # type: ignore[operator]
        note = " (ids guessed dense after the last bound: no AUTO_INCREMENT to read)"
    target = current
    if runway.fill_rate_per_day:
        target = max(target, current + math.ceil(runway.fill_rate_per_day * horizon_days))
    return max(target, last + 1), note  # type: ignore[operator]


def runway_fix(table: TableFacts, horizon_days: int) -> Fix:
    """Partitions continuing the table's pattern until the runway is `horizon_days` long
    (time ranges: from today; id ranges: at the fill rate) and every row already in the
    catch-all has a bounded partition (ids: up to the AUTO_INCREMENT)."""
    runway = table.runway
    catchall = next((p.name for p in table.partitions if is_catchall(p.description)), None)
    if runway is None or runway.last_bound is None:
        return _runway_advice(table, catchall, "the last bound cannot be read")
    note = ""
    target: int | date
    if runway.bound_kind == "id":
        target, note = _id_target(runway, table.partitions, horizon_days)
    else:
        target = horizon_date(table.now, horizon_days)
    try:
        plan = runway_plan(
            table.schema,
            table.name,
            table.method,
            table.expression,
            table.partitions,
            target,
        )
    except CannotPlan as reason:
        return _runway_advice(table, catchall, str(reason))
    words = _plan_words(table, plan, runway, note)
    if plan.catchall is None or runway.catchall_rows == 0:
        return Fix(words, plan.sql, "instant")
    return copies(words, plan.sql, [p for p in table.partitions if p.name == plan.catchall])


def _plan_words(table: TableFacts, plan, runway: Runway, note: str) -> str:
    new = plan.partitions
    span = identifier(new[0].name) + (f" to {identifier(new[-1].name)}" if len(new) > 1 else "")
    words = (
        f"Add {partitions_words(len(new), plan.step)}, {span}, up to "
        f"{bound_words(new[-1].bound)} (exclusive), continuing the table's own interval "
        f"and names{note}."
    )
    if plan.catchall is None:
        return words + " ADD PARTITION only creates empty partitions: quick."
    words += f" The catch-all {identifier(plan.catchall)} is recreated last, as MAXVALUE."
    rows = runway.catchall_rows
    if rows == 0:
        return words + " It is empty, so this is quick."
    check = _beyond_check(table, plan, runway)
    names = partition_list([p.name for p in new] + [plan.catchall], most=ANALYZE_LISTED)
    held = f"Its ~{rows:,} rows" if rows else "Whatever rows it holds"
    return (
        f"{words}{check} {held} move into the new partitions: REORGANIZE copies them and "
        "blocks writes to the table while it runs (plan it off-peak). "
        + _THEN_ANALYZE.format(statement=_analyze(table, names))
    )


def _beyond_check(table: TableFacts, plan, runway: Runway) -> str:
    """For time ranges, the query that tells whether rows in the catch-all lie past the
    new last bound (they stay there): partdash cannot read the rows themselves."""
    column = column_of(table.expression)
    if runway.bound_kind == "id" or column is None:
        return ""
    query = (
        f"SELECT MAX({name_sql(column)}) FROM {table.quoted} "
        f"PARTITION ({identifier(plan.catchall)})"
    )
    return (
        f" Rows from {bound_words(plan.partitions[-1].bound)} on would stay in it: check "
        f"first with {query}."
    )


def _runway_advice(table: TableFacts, catchall: str | None, reason: str) -> Fix:
    how = (
        f"ALTER TABLE {table.quoted} REORGANIZE PARTITION {identifier(catchall)} INTO "
        f"(... new partitions ..., PARTITION {identifier(catchall)} VALUES LESS THAN MAXVALUE)"
        if catchall
        else f"ALTER TABLE {table.quoted} ADD PARTITION (...)"
    )
    return Fix(
        f"Add partitions beyond the last bound with {how}; partdash cannot write it for "
        f"this table: {reason}.",
        None,
    )


# -- fragmentation, staleness -------------------------------------------------------------


def _names(table: TableFacts) -> list[str]:
    return list(dict.fromkeys(p.name for p in table.partitions))


def _analyze(table: TableFacts, names: str) -> str:
    return f"ALTER TABLE {table.quoted} ANALYZE PARTITION {names}"


# MySQL and MariaDB leave the statistics of partitions a REBUILD or REORGANIZE wrote at 0
# rows (MySQL bug #120318, MDEV-35163) until 10% of them change: measured on MariaDB
# 10.11. partdash reads rows and free space from those statistics.
_THEN_ANALYZE = (
    "The server leaves the statistics of the partitions it rewrote at 0 rows (so partdash, "
    "and the optimizer, see them empty) until they are analysed: then run {statement}."
)


def rebuild_fix(table: TableFacts) -> Fix:
    names = partition_list(table.fragmented, _names(table))
    rebuilt = set(table.fragmented)
    return copies(
        f"REBUILD PARTITION rewrites {names} (~{table.fragmented_bytes / (1 << 20):,.0f} MiB "
        "free inside them) and gives the free space back to the file system. It copies "
        "their rows and blocks writes to the table while it runs: plan it off-peak. "
        "(OPTIMIZE PARTITION on InnoDB rebuilds the whole table.) "
        + _THEN_ANALYZE.format(statement=_analyze(table, names)),
        f"ALTER TABLE {table.quoted} REBUILD PARTITION {names}",
        [p for p in table.partitions if p.name in rebuilt],
    )


def analyze_fix(table: TableFacts) -> Fix:
    names = partition_list(table.stale, _names(table))
    return Fix(
        f"ANALYZE PARTITION recomputes the statistics of {names} (a sample of pages: "
        "quick). InnoDB recalculates by itself only after inserts and deletes move a "
        "tenth of a partition's rows, never for UPDATEs, and not at all where "
        "innodb_stats_auto_recalc or the table's STATS_AUTO_RECALC is off; a partition "
        "rewritten by REORGANIZE, REBUILD or EXCHANGE keeps empty statistics until "
        "analysed.",
        _analyze(table, names),
        "instant",
    )


# -- compression ------------------------------------------------------------------------


def compression_fix(table: TableFacts) -> Fix:
    compression = table.compression
    page_compression = (
        "page compression (MariaDB: ROW_FORMAT=DYNAMIC PAGE_COMPRESSED=1; MySQL: "
        "ROW_FORMAT=DYNAMIC COMPRESSION='zlib'), which never fails a page"
    )
    if compression is not None and compression.kind == "page":
        return Fix(
            "Page compression saves little: the data is incompressible (then PAGE_COMPRESSED=0 "
            "or COMPRESSION='none' saves the CPU), or the file system does not punch holes "
            "(use ext4, XFS or Btrfs).",
            None,
        )
    kib = (compression.zip_page_size or 0) // 1024 if compression else 0
    page_kib = table.page_size // 1024
    if compression is not None and compression.does_not_compress:
        return stop_compressing_fix(table, kib)
    if not kib or kib >= page_kib:
        return Fix(
            f"Compression fails even at KEY_BLOCK_SIZE={kib or page_kib}: the data does not "
            f"compress. Stop compressing (ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0) or use "
            f"{page_compression}. Either rebuilds the table.",
            None,
        )
    larger = kib * 2
    return copies(
        f"Raise KEY_BLOCK_SIZE from {kib} to {larger}: pages fit more often (fewer failed "
        f"compressions and page splits) for a smaller saving. Or use {page_compression}. "
        "Either rebuilds every partition (copies the rows, blocks writes): plan it off-peak.",
        f"ALTER TABLE {table.quoted} KEY_BLOCK_SIZE={larger}",
        table.partitions,
    )


def stop_compressing_fix(table: TableFacts, kib: int) -> Fix:
    """Data that does not compress to half (failing at KEY_BLOCK_SIZE=8 of 16 KiB): say
    so, and stop compressing rows; a larger KEY_BLOCK_SIZE would save nothing. Page
    compression is the alternative for data of which a part compresses: it keeps what
    the data gives without failed compressions (random bytes gain nothing, and then its
    own finding says so)."""
    plain = f"ALTER TABLE {table.quoted} ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0"
    return copies(
        f"The data does not compress to half its size, so KEY_BLOCK_SIZE={kib} only splits "
        "pages and spends CPU on failed compressions, and a larger KEY_BLOCK_SIZE saves "
        f"nothing. Stop compressing its rows: {plain}. If part of the data does compress, "
        f"MariaDB's page compression keeps that saving without failures: {plain} "
        "PAGE_COMPRESSED=1 (MySQL: COMPRESSION='zlib' in place of PAGE_COMPRESSED=1, then "
        "OPTIMIZE TABLE). Either rebuilds every partition (copies the rows): plan it "
        "off-peak.",
        plain,
        table.partitions,
    )


# -- skew, hotspots ---------------------------------------------------------------------


def skew_fix(table: TableFacts) -> Fix:
    method = (table.method or "").upper().strip()
    merged = merge_subpartitions(table.partitions)
    plan = skew_plan(table.quoted, method, table.expression, merged)
    if plan is None:
        return Fix(
            "One closed partition is much larger than the others (unequal bounds, or a "
            "backfill): split it with REORGANIZE PARTITION ... INTO (...) at bounds of the "
            "table's interval.",
            None,
        )
    advice = plan.advice
    if plan.analyze:  # what it wrote reads 0 rows until analysed (see _THEN_ANALYZE)
        advice += " " + _THEN_ANALYZE.format(statement=_analyze(table, "ALL"))
    if plan.sql is None:
        return Fix(advice)
    return copies(advice, plan.sql, table.partitions)  # every row moves to a new count


def hotspot_fix(table: TableFacts) -> Fix:
    method = (table.method or "").upper().strip()
    if method in LIST_METHODS:
        return Fix("One list takes most of the I/O: split its values over more lists.", None)
    if method in RANGE_METHODS:  # raised only for writes into an old partition
        return Fix(
            "Most writes go to a partition new rows do not go to. Find the statements "
            "writing there (performance_schema's statement digests, the slow or general "
            "log): a job updating old rows over and over (move the changing column to its "
            "own table, or batch the job), or rows stamped with the wrong time (the "
            "client's clock or time zone, a default date). Repartitioning does not help.",
            None,
        )
    return Fix(
        "Most of the I/O goes to few partitions: a few key values (a hot id or tenant) take "
        "it, which no number of partitions spreads. Partition on a key that spreads the "
        "writes, or accept it if the hot values are by design.",
        None,
    )


# -- retention --------------------------------------------------------------------------


def drop_fix(table: TableFacts) -> Fix:
    """DROP PARTITION of the partitions past the table's retention policy: it removes
    their rows for good, so the advice says so before anything else."""
    retention = table.retention
    if retention is None or not retention.overdue:
        return Fix("No partition is past the table's retention policy.")
    names = ", ".join(name_sql(p.name) for p in retention.overdue)
    return Fix(
        f"Irreversible: DROP PARTITION deletes {names} and every row in them "
        f"({retention.policy.words}, policy {retention.policy.pattern!r}). It is instant "
        "(the partitions' files are deleted; it waits for a metadata lock on the table), and "
        "there is no undo. If the rows must be kept, first move each partition out with "
        "ALTER TABLE ... EXCHANGE PARTITION ... WITH TABLE an empty archive table of the same "
        "definition, or export it. partdash never runs it: your retention job or you do.",
        f"ALTER TABLE {table.quoted} DROP PARTITION {names}",
        "destroys",
        _known_sum(p.rows for p in retention.overdue),
        _bytes(retention.overdue),
    )


def table_fix(kind: str, table: TableFacts, horizon_days: int) -> Fix | None:
    """The fix of a table's finding of this kind (its `FindingKind.fix`, `health.kinds`);
    advice alone where the table's name is one partdash writes no statement for, or a
    name it would write cannot be."""
    declared = kinds.kind(kind)
    if declared is None or declared.fix is None:
        return None
    try:
        fix = declared.fix(table, horizon_days)
    except Unsafe as reason:
        return Fix(f"partdash writes no statement for this table: {reason}.")
    problem = table_problem(table.schema, table.name)
    if problem and (fix.sql is not None or declared.names_in_advice):
        # Not even in words: the statement the advice would describe is what breaks.
        return Fix(f"partdash writes no statement for this table: {problem}.")
    return fix


# -- server pressure --------------------------------------------------------------------


def _round_up(value: float, unit: int) -> int:
    return max(unit, math.ceil(value / unit) * unit)


def limit_fix(limit: LimitPressure) -> Fix:
    """Raise the setting so the server's partitions fill two thirds of it (a multiple of
    100), at once and in my.cnf; open_files_limit needs a restart."""
    setting = limit.setting
    value = _round_up(limit.partitions * LIMIT_HEADROOM, 100)
    if setting == "open_files_limit":
        return Fix(
            f"open_files_limit cannot change while the server runs: set it in my.cnf under "
            f"[mysqld] (open_files_limit = {value}) and LimitNOFILE={value} in the "
            "service's systemd override, then restart. Or merge or drop partitions.",
            None,
        )
    maximum = SETTING_MAXIMA.get(setting)
    if maximum is not None and value > maximum:
        return Fix(
            f"{limit.partitions:,} partitions need more than {setting}'s maximum "
            f"({maximum:,}): merge or drop partitions.",
            None,
        )
    return Fix(
        f"Raise {setting} to {value:,} (the partitions then fill {1 / LIMIT_HEADROOM:.0%} of "
        f"it; the finding starts at {WARN_RATIO:.0%}). SET GLOBAL lasts until the next "
        f"restart: also set it in my.cnf under [mysqld]: {setting} = {value}. Each cache "
        "entry takes memory and, for table_open_cache, file handles (open_files_limit). "
        "Or merge or drop partitions.",
        f"SET GLOBAL {setting} = {value}",
        "instant",
    )


def working_set_fix(working: WorkingSet) -> Fix:
    """A buffer pool the written partitions fill two thirds of, in whole chunks."""
    size = _round_up(working.bytes * LIMIT_HEADROOM, BUFFER_POOL_CHUNK)
    mib = size >> 20
    return Fix(
        f"Raise innodb_buffer_pool_size to {mib:,} MiB (the written partitions then fill "
        f"{working.bytes / size:.0%} of it; the finding starts at {WORKING_SET_RATIO:.0%}), "
        "only if the host has that much memory to spare: the pool resizes online, in the "
        f"background. Also set it in my.cnf under [mysqld]: innodb_buffer_pool_size = {mib}M. "
        "Or write fewer partitions at once (fewer open time ranges, fewer HASH partitions).",
        f"SET GLOBAL innodb_buffer_pool_size = {size}",
        "instant",
    )


def statement_problem(sql: str) -> str | None:
    """Why a stored statement may not be shown as one to run, or None: it holds an
    invisible character, or a client character set would read it otherwise (a fix
    stored before partdash checked names so, or drift DDL of a member's names)."""
    if holds_invisible(sql.replace("\n", " ")):  # lines: runway's
        return "it holds invisible characters (bidi controls or other format characters)"
    return charset_problem(sql)


def stored_fix(fix: Mapping[str, Any] | None) -> FixShape | None:
    """A fix as stored (a finding's or an alert's JSON) in the contract's shape. One
    stored before fixes had a safety class was written by a partdash that copied what the
    server sent into its statement: its `sql` is withheld until the table's next analysis
    (at most a day later) writes it again. A statement that `statement_problem` refuses
    is withheld too, with the reason: every reader (pages, API, emails, the plan) reads
    fixes through here."""
    if fix is None:
        return None
    advice, sql = fix.get("advice") or "", fix.get("sql")
    problem = sql and statement_problem(sql)
    if problem:
        advice = f"{advice} (partdash withholds its statement: {problem}.)".lstrip()
        return {"advice": advice, "sql": None, "safety": None, "rows": None, "bytes": None}
    if "safety" in fix:
        rows, size = fix.get("rows"), fix.get("bytes")
        return {"advice": advice, "sql": sql, "safety": fix["safety"], "rows": rows, "bytes": size}
    if sql is not None:
        advice += " (The statement returns with the table's next analysis.)"
    return {"advice": advice, "sql": None, "safety": None, "rows": None, "bytes": None}
