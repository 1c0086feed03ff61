"""What partdash measures on a server and what it is blind to, said plainly.

A signal a server does not give is not a healthy reading: a table whose writes are never
seen has no hotspot finding because nothing was looked at. So the table page, the server
page, Test connection and the API list each signal with `measured`, and where it is not,
why and the one change that enables it (`enable`), in the same words everywhere.

The usual blind spot on a default MariaDB: rows changed (INNODB_SYS_TABLESTATS) are not
read where `table_definition_cache` holds fewer tables than InnoDB's dictionary (a
partition is a table there), since each read would load the rest and read their pages;
and disk I/O is not read with performance_schema OFF (as MariaDB ships). With neither,
only row growth stands in, which moves when InnoDB recalculates a partition's statistics
and never for UPDATEs: write hotspots are then not measured at all. The cache is dynamic,
so `SET GLOBAL table_definition_cache = N` is the one change that enables them.
"""

import math
from dataclasses import dataclass
from typing import TypedDict

from partdash.health.fixes import LIMIT_HEADROOM, SETTING_MAXIMA

WRITE_HOTSPOTS = "write_hotspots"
ROWS_CHANGED = "rows_changed"
DISK_IO = "disk_io"
LABELS = {
    WRITE_HOTSPOTS: "write hotspots",
    ROWS_CHANGED: "rows changed",
    DISK_IO: "disk reads and writes (read hotspots)",
}
CACHE = "table_definition_cache"


class CoverageShape(TypedDict):
    """One signal on one server: `measured`, else `why` not and `enable` (a statement or
    a setting line, None where no change of the server's enables it); `line` says it all
    in one line."""

    signal: str
    label: str
    measured: bool
    why: str | None
    enable: str | None
    line: str


@dataclass(frozen=True)
class Blind:
    """Why a signal is not read, and the one change that would have it read."""

    why: str
    enable: str | None = None
    cause: str = ""  # the why in a few words, where another signal's why names it

    @property
    def short(self) -> str:
        return self.cause or self.why.split(" (")[0]


def cache_needed(tables: int) -> int:
    """The table_definition_cache that holds the dictionary's `tables` with room for
    them to grow by half (as the pressure fix sizes it: `fixes.limit_fix`), a multiple
    of 100, within the server's maximum."""
    value = max(100, math.ceil(tables * LIMIT_HEADROOM / 100) * 100)
    return min(value, SETTING_MAXIMA[CACHE])


def uncached(cache: int | None, tables: int, partitions: int | None = None) -> Blind:
    """Rows changed not read because the dictionary cache cannot hold every InnoDB table
    (`tables`, counted in the dictionary; `partitions` of them monitored here)."""
    among = f", {partitions:,} partitions among them" if partitions else ""
    held = f"holds {cache:,}" if cache is not None else "holds fewer"
    cause = f"{CACHE} {held}, fewer than this server's {tables:,} InnoDB tables"
    return Blind(
        f"{cause}{among}: "
        "reading rows changed (INNODB_SYS_TABLESTATS) would load the others into InnoDB's "
        "dictionary cache at every poll and read their pages, so polls do not read them. "
        f"{CACHE} is dynamic: the next poll reads them (also set it in my.cnf to keep it "
        "after a restart)",
        f"SET GLOBAL {CACHE} = {cache_needed(tables)}",
        cause,
    )


TABLESTATS_OFF = Blind(
    "PARTDASH_READ_TABLESTATS=off: partdash does not read them",
    "PARTDASH_READ_TABLESTATS=auto in partdash's environment",
    "PARTDASH_READ_TABLESTATS=off",
)


def _line(label: str, blind: Blind | None) -> str:
    if blind is None:
        return f"{label}: measured"
    enable = f" To measure: {blind.enable}" if blind.enable else ""
    return f"{label}: not measured here. Why: {blind.why}.{enable}"


def entry(signal: str, blind: Blind | None, label: str = "") -> CoverageShape:
    label = label or LABELS[signal]
    return {
        "signal": signal,
        "label": label,
        "measured": blind is None,
        "why": blind.why if blind else None,
        "enable": blind.enable if blind else None,
        "line": _line(label, blind),
    }


def write_hotspots_blind(rows_changed: Blind | None, disk: Blind | None) -> Blind | None:
    """Write hotspots need rows changed, or disk writes standing in (minutes late); with
    neither, row growth alone sees no UPDATE. The change it names is rows changed's, the
    one a running server takes (performance_schema needs a restart)."""
    if rows_changed is None or disk is None:
        return None
    return Blind(
        f"rows changed are not read ({rows_changed.short}) and disk writes are not either "
        f"({disk.short}): row growth alone stands in, which moves only when InnoDB "
        "recalculates a partition's statistics, never for UPDATEs",
        rows_changed.enable or disk.enable,
    )


def coverage(
    rows_changed: Blind | None,
    disk: Blind | None,
    others: tuple[tuple[str, str, Blind], ...] = (),
) -> list[CoverageShape]:
    """Every signal, write hotspots first; `others`: (signal, label, why) of other sources
    a server does not give (file sizes, compression counters...)."""
    return [
        entry(WRITE_HOTSPOTS, write_hotspots_blind(rows_changed, disk)),
        entry(ROWS_CHANGED, rows_changed),
        entry(DISK_IO, disk),
        *(entry(signal, blind, label) for signal, label, blind in others),
    ]
