"""The finding kinds, declared once each and found here (like NetBox's `registry` or
healthchecks' `TRANSPORTS`): a kind says how a table's analysis finds it, the fix it
proposes, where it stands in the maintenance plan, its alert rule with its defaults, and
its /metrics families. The analysis, the plan, the alert rules and their choices, the
conditions and /metrics read this registry instead of tables of kind names, so adding a
kind is one declaration (docs/development.md, "Add a finding kind").

How a kind's fix composes with the others' is the fix's own: `health.composed` orders
statements by their `safety` (instant, copies, the ANALYZE after them, destroys) and
merges those that touch the same partitions, whatever their kind.

Pure, as `health/` is: the upper layers read it (alerts read the settings a rule names in
`AlertSpec.reads` and hand their values to its judge).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from partdash.health.compression import Compression
    from partdash.health.hotspots import Hotspots
    from partdash.health.partitions import PartitionState
    from partdash.health.pressure import Fragmentation, Staleness
    from partdash.health.pruning import StatementVerdict
    from partdash.health.retention import Retention
    from partdash.health.runway import Runway
    from partdash.health.skew import SkewFinding

Subject = Literal["server", "table", "partition"]
# `health.findings.Finding`, `health.fixes.Fix` and `TableFacts`, `health.alerting`'s
# `Condition`: those modules read this registry (or lead to one that does), so naming
# their types here, even for type checking only, would close a cycle inside the package
# (`acyclic_siblings` in pyproject.toml).
Condition = Any
Finding = Any
Fix = Any
TableFacts = Any

# The modules that declare the built-in kinds, imported on first use (each registers its
# kinds as it is imported). A kind of its own module is added here.
BUILTIN_MODULES = ("partdash.health.finding_kinds", "partdash.health.unpruned")


@dataclass(frozen=True, slots=True)
class Observed:
    """What one table's analysis measured, as every kind's `analyse` reads it: the
    fix's facts and the figures the analysis computed for the built-in kinds."""

    facts: TableFacts
    states: list[PartitionState]
    skew: SkewFinding | None = None
    hotspots: Hotspots | None = None
    compression: Compression | None = None
    runway: Runway | None = None
    fragments: list[Fragmentation] = field(default_factory=list)
    stale: list[Staleness] = field(default_factory=list)
    retention: Retention | None = None
    now: datetime | None = None
    # The table's statement digests with their verdicts (None: never read).
    statements: list[StatementVerdict] | None = None


# A finding rule's condition from a table's stored health and its stored finding of the
# kind (None where it has none), with the settings named in `AlertSpec.reads`.
Judge = Callable[[Mapping[str, Any], Mapping[str, Any] | None, Mapping[str, Any]], "Condition"]


@dataclass(frozen=True, slots=True)
class Setting:
    """A setting a kind declares itself, so adding the kind needs no line in
    `partdash/settings.py`: read from the environment variable `name` (its value cast to
    the default's type), `default` where it is unset. A value `partdash.settings` sets
    (or a test overrides) under the same name wins. docs/settings.md lists it as any
    other (tests/docs/test_settings_reference.py finds it here)."""

    name: str
    default: float | int | bool | str


@dataclass(frozen=True, slots=True)
class AlertSpec:
    """The kind's alert rule: what it judges, on what, and the defaults `Rule` takes
    (`worse`, `clear_ratio`...). `judge` is None for a server's kinds, whose condition the
    alerts service builds from the snapshot."""

    subject: Subject
    judges: str  # what the value is, in words (README, admin)
    unit: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    judge: Judge | None = None
    # Settings the judge reads (`PARTDASH_...`): a name `partdash.settings` defines, or a
    # `Setting` the kind declares with its default.
    reads: tuple[str | Setting, ...] = ()

    @property
    def read_names(self) -> tuple[str, ...]:
        return tuple(read.name if isinstance(read, Setting) else read for read in self.reads)


@dataclass(frozen=True, slots=True)
class Figure:
    """One /metrics family per table (`partdash_<name>{server, schema, table}`): its help
    text and its value from the table's stored health (None: no sample).

    `paths`: the places in the stored health `value` reads, each a path of keys (a key
    absent or null on the way reads as absent). A scrape then asks the store for those
    values alone rather than each table's whole health, most of which is its findings'
    fixes (`partdash.prometheus.exposition`). None: `value` is given the whole health."""

    name: str
    help: str
    value: Callable[[Mapping[str, Any]], float | None]
    paths: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class FindingKind:
    """A kind of finding, declared once.

    `analyse`: the table's finding from what its analysis measured (None: found
    elsewhere, a server's pressure or a group's drift). `fix`: its fix from the table's
    facts and the runway horizon in days. `urgency`: its place in the maintenance plan
    (lower is fixed first). `within`: the plan's phrase of how urgent one finding is and
    its order within the kind (default: its severity, 0). `names_in_advice`: its advice
    names partitions, so a table whose name partdash writes no statement for gets none.
    `stores`: what the table's stored health keeps of it under its name (plain values),
    for its alert's judge, its figures and the pages (the built-in kinds' shapes are the
    analysis's own)."""

    name: str
    label: str
    urgency: float
    analyse: Callable[[Observed], Finding | None] | None = None
    fix: Callable[[TableFacts, int], Fix] | None = None
    alert: AlertSpec | None = None
    figures: tuple[Figure, ...] = ()
    within: Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[str, float]] | None = None
    names_in_advice: bool = False
    stores: Callable[[Observed], Any] | None = None


_KINDS: dict[str, FindingKind] = {}
_LOADED: list[bool] = []


# A kind's name is its alert rule's: a lowercase word of the alerts' `rule` column.
NAME = re.compile(r"[a-z][a-z0-9_]{0,19}")


def register(kind: FindingKind) -> FindingKind:
    """Add a kind; a second kind of the same name is refused (two declarations of one
    kind would each half-hold), and so is a name the alert tables cannot hold."""
    if not NAME.fullmatch(kind.name):
        raise ValueError(
            f"finding kind {kind.name!r}: a name is 1 to 20 lowercase letters, digits or _"
        )
    if kind.name in _KINDS:
        raise ValueError(f"finding kind {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (a test's throwaway one)."""
    _KINDS.pop(name, None)


def _load() -> None:
    if not _LOADED:
        _LOADED.append(True)
        for module in BUILTIN_MODULES:
            import_module(module)


def registered() -> tuple[FindingKind, ...]:
    """Every kind, in the order declared."""
    _load()
    return tuple(_KINDS.values())


def kind(name: str) -> FindingKind | None:
    _load()
    return _KINDS.get(name)


def urgency_order() -> tuple[str, ...]:
    """The kinds' names in the order a DBA fixes them."""
    return tuple(k.name for k in sorted(registered(), key=lambda k: k.urgency))
