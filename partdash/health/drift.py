"""Layout drift: one table laid out differently on members of a server group (replicas of
one primary, shards of one schema) that should hold it the same way.

A table's layout is its partitioning method and expressions, and its partitions' names and
bounds in order (`Layout`); `layout_digest` makes it comparable across servers at the
cost of one stored string, so a group is compared by digests alone until two differ.
`differences` says how two layouts differ, in words; `align_fix` writes the statement
that brings a member's layout in line with the group's:

- RANGE partitions missing at the end (no catch-all): ADD PARTITION (instant);
- partitions missing, extra or renamed in between or before the catch-all: REORGANIZE
  PARTITION of the differing span into the group's partitions (copies their rows);
- extra partitions at the end, past the group's last bound: DROP PARTITION (destroys);
- HASH and KEY partitions to add or remove at the end: ADD PARTITION or COALESCE
  PARTITION (both rehash every row: copies);
- anything else (another method or expression, LIST values): PARTITION BY with the
  group's whole definition (copies every row).

Every name and bound is parsed and written again (`fix_values`): nothing a monitored
server sent goes into a statement as text. A layout with subpartitions, or values
partdash does not re-write, gets advice without a statement.
"""

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from partdash.health.bounds import is_catchall
from partdash.health.fix_values import (
    Unsafe,
    bound_values,
    expression_sql,
    name_sql,
    table_problem,
)
from partdash.health.fixes import Fix

RANGE_METHODS = frozenset({"RANGE", "RANGE COLUMNS"})
LIST_METHODS = frozenset({"LIST", "LIST COLUMNS"})
SPREAD_METHODS = frozenset({"HASH", "LINEAR HASH", "KEY", "LINEAR KEY"})
METHODS = RANGE_METHODS | LIST_METHODS | SPREAD_METHODS
DIFFERENCES_NAMED = 8  # partitions named in one difference; the rest are counted

_SPACE = re.compile(r"\s+")


def _plain(text: str | None) -> str:
    """An expression or bound as compared: MySQL and MariaDB spell the same one with or
    without back-quotes and spaces, in either case."""
    return _SPACE.sub("", (text or "").replace("`", "")).lower()


@dataclass(frozen=True, slots=True)
class Layout:
    """A table's partitioning as a group compares it. `partitions`: the top-level
    partitions' (name, bound) in order; `subpartitions`: each partition's subpartition
    names, where there are any."""

    method: str
    expression: str
    subpartition_method: str
    subpartition_expression: str
    partitions: tuple[tuple[str, str | None], ...]
    subpartitions: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def of(
        cls,
        method: str,
        expression: str | None,
        subpartition_method: str | None,
        subpartition_expression: str | None,
        parts: Iterable[tuple[str, str, str | None]],
    ) -> "Layout":
        """From a table's definition and its (partition, subpartition, bound) rows in
        definition order."""
        names: list[tuple[str, str | None]] = []
        subs: dict[str, list[str]] = {}
        for name, subpartition, description in parts:
            if name not in subs:
                names.append((name, description))
                subs[name] = []
            if subpartition:
                subs[name].append(subpartition)
        subpartitions = tuple(tuple(subs[name]) for name, _ in names)
        return cls(
            (method or "").upper().strip(),
            expression or "",
            (subpartition_method or "").upper().strip(),
            subpartition_expression or "",
            tuple(names),
            subpartitions if any(subpartitions) else (),
        )

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.partitions]

    def key(self) -> tuple:
        """What two layouts must share to be the same."""
        return (
            self.method,
            _plain(self.expression),
            self.subpartition_method,
            _plain(self.subpartition_expression),
            tuple((name.lower(), _plain(bound)) for name, bound in self.partitions),
            tuple(tuple(s.lower() for s in subs) for subs in self.subpartitions),
        )


def layout_digest(layout: Layout) -> str:
    """40 hex digits that two servers share exactly when their layouts are the same."""
    return hashlib.sha1(repr(layout.key()).encode(), usedforsecurity=False).hexdigest()


# -- in words ------------------------------------------------------------------------------


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:DIFFERENCES_NAMED])
    more = len(names) - DIFFERENCES_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _bound_text(bound: str | None) -> str:
    return "none" if bound is None else " ".join(bound.split())[:60]


def differences(here: Layout, group: Layout) -> list[str]:
    """How `here` differs from the group's layout, one sentence each (empty: the same)."""
    found = []
    if here.method != group.method:
        found.append(f"partitioned by {here.method or 'nothing'}, the group by {group.method}")
    elif _plain(here.expression) != _plain(group.expression):
        found.append(f"expression {here.expression!r}, the group's {group.expression!r}")
    if (here.subpartition_method, _plain(here.subpartition_expression)) != (
        group.subpartition_method,
        _plain(group.subpartition_expression),
    ):
        found.append("subpartitioned differently")
    mine = {name.lower(): (name, bound) for name, bound in here.partitions}
    theirs = {name.lower(): (name, bound) for name, bound in group.partitions}
    missing = [name for name, _ in group.partitions if name.lower() not in mine]
    extra = [name for name, _ in here.partitions if name.lower() not in theirs]
    if missing:
        found.append(f"lacks partition(s) {_names(missing)}")
    if extra:
        found.append(f"has partition(s) the group has not: {_names(extra)}")
    bounds = [
        f"{name} {_bound_text(bound)} (group: {_bound_text(theirs[name.lower()][1])})"
        for name, bound in here.partitions
        if name.lower() in theirs and _plain(bound) != _plain(theirs[name.lower()][1])
    ]
    if bounds and here.method == group.method:
        found.append(f"other bounds: {_names(bounds)}")
    shared = [n.lower() for n in here.names if n.lower() in theirs]
    order = [n.lower() for n in group.names if n.lower() in mine]
    if shared != order:
        found.append("the partitions are in another order")
    if here.subpartitions != group.subpartitions and not found:
        found.append("other subpartitions")
    if not found and here.key() != group.key():
        found.append("laid out differently")
    return found


# -- the statement ------------------------------------------------------------------------


class _CannotWrite(ValueError):
    """No statement partdash writes would align this layout (the reason says why)."""


def _values_sql(method: str, bound: str | None) -> str:
    """The VALUES clause of one partition, its bound parsed and written again."""
    if method in SPREAD_METHODS:
        return ""
    text = (bound or "").strip()
    if method in LIST_METHODS:
        if text.upper() == "DEFAULT":
            return " DEFAULT"
        if method == "LIST COLUMNS" and text.startswith("("):
            raise _CannotWrite("LIST COLUMNS bounds are not re-written by partdash")
        return f" VALUES IN ({','.join(_bound(text))})"
    if method == "RANGE" and is_catchall(text):
        return " VALUES LESS THAN MAXVALUE"
    return f" VALUES LESS THAN ({','.join(_bound(text))})"


def _bound(text: str) -> tuple[str, ...]:
    try:
        return bound_values(text)
    except Unsafe as reason:
        raise _CannotWrite(str(reason)) from None


def _name(name: str) -> str:
    try:
        return name_sql(name)
    except Unsafe as reason:
        raise _CannotWrite(str(reason)) from None


def _definitions(layout: Layout, partitions: Sequence[tuple[str, str | None]]) -> str:
    return ", ".join(
        f"PARTITION {_name(name)}{_values_sql(layout.method, bound)}" for name, bound in partitions
    )


def _method_sql(layout: Layout) -> str:
    if layout.method not in METHODS:
        raise _CannotWrite(f"partdash does not write PARTITION BY {layout.method or 'nothing'}")
    columns = layout.method.endswith("COLUMNS") or layout.method.endswith("KEY")
    expression = layout.expression.strip()
    if not expression and layout.method.endswith("KEY"):
        return f"{layout.method}()"  # KEY() partitions by the primary key
    try:
        written = expression_sql(expression)
    except Unsafe as reason:
        raise _CannotWrite(str(reason)) from None
    if columns and "(" in written:
        raise _CannotWrite("a column list holds an expression")
    return f"{layout.method}({written})"


@dataclass(frozen=True, slots=True)
class _Span:
    """The partitions of each side between their shared head and their shared tail."""

    start: int
    here_end: int
    group_end: int


def _span(here: Layout, group: Layout) -> _Span:
    same = [(n.lower(), _plain(b)) for n, b in here.partitions]
    want = [(n.lower(), _plain(b)) for n, b in group.partitions]
    start = 0
    while start < min(len(same), len(want)) and same[start] == want[start]:
        start += 1
    here_end, group_end = len(same), len(want)
    while here_end > start and group_end > start and same[here_end - 1] == want[group_end - 1]:
        here_end, group_end = here_end - 1, group_end - 1
    # A range span ends where both sides' spans end on the same bound: else the shared
    # tail's first partition starts at another value on each side, and joins the span.
    while here_end > start and group_end > start:
        if same[here_end - 1][1] == want[group_end - 1][1]:
            break
        if here_end == len(same) or group_end == len(want):
            break
        here_end, group_end = here_end + 1, group_end + 1
    if here_end == start and group_end > start and here_end < len(same):
        here_end, group_end = here_end + 1, group_end + 1  # inserted before a partition
    if group_end == start and here_end > start and group_end < len(want):
        here_end, group_end = here_end + 1, group_end + 1  # merged into the next one
    return _Span(start, here_end, group_end)


Sizes = Mapping[str, tuple[int | None, int | None]]  # partition name: (rows, bytes)


def _amounts(sizes: Sizes, names: Iterable[str]) -> tuple[int | None, int | None]:
    known = [sizes[n.lower()] for n in names if n.lower() in sizes]
    rows = [r for r, _ in known if r is not None]
    size = [b for _, b in known if b is not None]
    return (sum(rows) if rows else None, sum(size) if size else None)


def _copies(advice: str, sql: str, sizes: Sizes, names: Iterable[str]) -> Fix:
    rows, size = _amounts(sizes, names)
    return Fix(advice, sql, "copies", rows, size)


def _range_fix(quoted: str, here: Layout, group: Layout, sizes: Sizes) -> Fix:
    span = _span(here, group)
    mine = list(here.partitions[span.start : span.here_end])
    wanted = list(group.partitions[span.start : span.group_end])
    mine_names = [name for name, _ in mine]
    if not mine:
        return Fix(
            f"ADD PARTITION adds {_names([n for n, _ in wanted])} past "
            "the last bound, as the group has them: no rows move.",
            f"ALTER TABLE {quoted} ADD PARTITION ({_definitions(group, wanted)})",
            "instant",
        )
    last_here, last_group = _plain(mine[-1][1]), _plain(wanted[-1][1]) if wanted else None
    if wanted and last_here == last_group:
        return _copies(
            f"REORGANIZE PARTITION rewrites {_names(mine_names)} as the group's "
            f"{_names([n for n, _ in wanted])}: it copies their rows and blocks writes to the "
            "table while it runs.",
            f"ALTER TABLE {quoted} REORGANIZE PARTITION "
            f"{', '.join(_name(n) for n in mine_names)} INTO ({_definitions(group, wanted)})",
            sizes,
            mine_names,
        )
    if span.here_end == len(here.partitions) and not wanted:
        rows, size = _amounts(sizes, mine_names)
        return Fix(
            f"DROP PARTITION removes {_names(mine_names)}, past the group's last bound, and "
            "the rows in them: irreversible. Keep them first (EXCHANGE PARTITION into a table "
            "of their own) if they matter.",
            f"ALTER TABLE {quoted} DROP PARTITION {', '.join(_name(n) for n in mine_names)}",
            "destroys",
            rows,
            size,
        )
    raise _CannotWrite("the ranges do not end on the same bound")


def _spread_fix(quoted: str, here: Layout, group: Layout, sizes: Sizes) -> Fix:
    mine, want = [n.lower() for n in here.names], [n.lower() for n in group.names]
    every = list(here.names)
    if want[: len(mine)] == mine and len(want) > len(mine):
        added, new = group.names[len(mine) :], group.partitions[len(mine) :]
        return _copies(
            f"ADD PARTITION adds {_names(added)}; the server rehashes every row into the new "
            "count: it copies the whole table and blocks writes while it runs.",
            f"ALTER TABLE {quoted} ADD PARTITION ({_definitions(group, new)})",
            sizes,
            every,
        )
    if mine[: len(want)] == want and len(mine) > len(want):
        count = len(mine) - len(want)
        return _copies(
            f"COALESCE PARTITION {count} removes the last {count} partition(s) and rehashes "
            "their rows into the rest: it copies the whole table, no row is lost.",
            f"ALTER TABLE {quoted} COALESCE PARTITION {count}",
            sizes,
            every,
        )
    raise _CannotWrite("the partitions differ by more than their count")


def _repartition_fix(quoted: str, here: Layout, group: Layout, sizes: Sizes) -> Fix:
    body = f"({_definitions(group, group.partitions)})"
    return _copies(
        "PARTITION BY re-partitions the table exactly as the group has it: it copies every "
        "row and blocks writes to the table while it runs (plan it off-peak).",
        f"ALTER TABLE {quoted} PARTITION BY {_method_sql(group)} {body}",
        sizes,
        here.names,
    )


def align_fix(schema: str, table: str, here: Layout, group: Layout, sizes: Sizes) -> Fix:
    """The statement that makes `here` the group's layout, with its safety class; advice
    alone where partdash writes none. `sizes`: rows and bytes of here's partitions, by
    lower-cased name."""
    problem = table_problem(schema, table)
    if problem:
        return Fix(f"No statement: {problem}.")
    if here.subpartitions or group.subpartitions or group.subpartition_method:
        return Fix(
            "Subpartitioned: compare SHOW CREATE TABLE on this member and on the group's "
            "reference, and re-partition this one as the reference is (partdash writes no "
            "statement for subpartitions)."
        )
    quoted = f"{name_sql(schema)}.{name_sql(table)}"
    same_scheme = here.method == group.method and _plain(here.expression) == _plain(
        group.expression
    )
    try:
        if same_scheme and group.method in RANGE_METHODS:
            try:
                return _range_fix(quoted, here, group, sizes)
            except _CannotWrite:
                pass
        if same_scheme and group.method in SPREAD_METHODS:
            try:
                return _spread_fix(quoted, here, group, sizes)
            except _CannotWrite:
                pass
        return _repartition_fix(quoted, here, group, sizes)
    except _CannotWrite as reason:
        return Fix(
            f"No statement ({reason}): re-partition this table as the group's reference has "
            "it (SHOW CREATE TABLE there)."
        )


# -- which layout is the group's ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Holder:
    """One member's copy of a table: the server, its layout digest and partition count."""

    server_id: int
    digest: str
    partitions: int


def group_digest(holders: Sequence[Holder], reference: int | None) -> str | None:
    """The layout the members are held to: the reference member's where it has the table,
    else the one most members share; on a tie, the one with more partitions (the others
    lack some), then the lowest server id's. None without holders."""
    if not holders:
        return None
    for holder in holders:
        if holder.server_id == reference:
            return holder.digest
    counts: dict[str, list[Holder]] = {}
    for holder in holders:
        counts.setdefault(holder.digest, []).append(holder)

    def rank(digest: str) -> tuple[int, int, int]:
        members = counts[digest]
        return (
            len(members),
            max(h.partitions for h in members),
            -min(h.server_id for h in members),
        )

    return max(counts, key=rank)


def expected_everywhere(holders: int, members: int, on_reference: bool | None) -> bool:
    """Whether a table held by `holders` of `members` belongs on every member: where a
    reference is set, when the reference has it (`on_reference`); else when at least
    half the members have it."""
    if on_reference is not None:
        return on_reference
    return 2 * holders >= members


def schema_left_out(schema: str, patterns: Iterable[str]) -> bool:
    """Whether a group leaves `schema` out of its comparison: it matches one of the
    group's patterns (`*`, `?`, `[..]` wildcards), in any case, as copies are matched."""
    name = schema.lower()
    return any(fnmatchcase(name, pattern.lower()) for pattern in patterns)
