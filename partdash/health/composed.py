"""One table's fixes composed into one sequence of statements that reaches one layout.

Each finding's fix is right alone and can be wrong beside another's: runway's and drift's
REORGANIZE of the same catch-all both create `p20261129` (the second fails with ERROR
1517 after the first ran), drift's and skew's ADD PARTITION of a HASH table both add `p8`.
`compose` takes every proposal of one table (its findings' statements, most urgent first)
and the table's current layout, and returns one statement per partition operation:

- REORGANIZE of the same partitions: one, INTO the union of the new partitions (ordered
  by bound, each name once; a name wanted at two bounds refuses the later proposal);
- ADD PARTITION past the last bound: one, the union likewise; on HASH and KEY tables the
  larger target count (it rehashes every row once, not twice);
- DROP PARTITION: one, the union; REBUILD: one, less the partitions another statement
  rewrites or drops; ANALYZE of stale partitions: one, folded into the ANALYZE that
  follows the table's copies where there are any;
- any other statement (KEY_BLOCK_SIZE, PARTITION BY, SET GLOBAL) as it is.

The statements run in sections: instant first, then copies, then the ANALYZE of what the
copies rewrote (the server leaves it at 0 rows), then what destroys data (DROP PARTITION),
last. Each statement is simulated on the layout the ones before it leave (names, bounds,
counts); one that would fail there is refused, with the reason, and its findings keep
advice only. Pure: statements and layouts in, statements out. The statements are
partdash's own (`fixes`, `drift`, `runway_fix`, `skew_fix`), parsed back; their names and
bounds were checked when they were written, and are re-quoted here.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from partdash.health.bounds import TO_DAYS_OFFSET, TO_SECONDS_EPOCH
from partdash.health.fix_values import Unsafe, name_sql

SECTIONS = ("instant", "copies", "statistics", "destroys")
_SECTION_OF = {"instant": "instant", "copies": "copies", "blocks": "copies", "destroys": "destroys"}
# The order of a table's partition operations within a section.
_ACTION_ORDER = ("add", "reorganize", "coalesce", "rebuild", "rewrite", "analyze", "drop", "other")


@dataclass(frozen=True, slots=True)
class Proposal:
    """One finding of the table, with its own fix as stored."""

    kind: str
    severity: str
    message: str
    sql: str
    safety: str


@dataclass(frozen=True, slots=True)
class Part:
    """A partition as the layout holds it: its name, its bound (a `VALUES ...` clause or
    the server's PARTITION_DESCRIPTION; None on HASH and KEY) and its size."""

    name: str
    bound: str | None = None
    rows: int | None = None
    bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of the combined fix: its section, what it costs, which findings it
    clears (their proposals) and, for a merged one, what was merged."""

    section: str
    sql: str
    safety: str
    clears: tuple[Proposal, ...]
    rows: int | None = None
    bytes: int | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Refusal:
    proposal: Proposal
    reason: str


@dataclass(frozen=True, slots=True)
class TableFix:
    """A table's combined fix: the statements in run order, and the refused proposals."""

    statements: tuple[Statement, ...]
    refused: tuple[Refusal, ...]

    def statement_of(self, proposal: Proposal) -> int | None:
        """The index of the statement that clears `proposal`, or None."""
        for index, statement in enumerate(self.statements):
            if proposal in statement.clears:
                return index
        return None


# -- parsing partdash's own statements ------------------------------------------------------

_QUOTED_NAME = r"`(?:[^`]|``)*`"
_ALTER = re.compile(rf"\s*ALTER\s+TABLE\s+({_QUOTED_NAME})\.({_QUOTED_NAME})\s+(.*)\Z", re.S | re.I)
_HEADS = (
    (
        "reorganize",
        re.compile(r"REORGANIZE\s+PARTITION\s+(.*?)\s+INTO\s*\((.*)\)\s*\Z", re.S | re.I),
    ),
    ("add", re.compile(r"ADD\s+PARTITION\s*\((.*)\)\s*\Z", re.S | re.I)),
    ("drop", re.compile(r"DROP\s+PARTITION\s+(.*?)\s*\Z", re.S | re.I)),
    ("rebuild", re.compile(r"REBUILD\s+PARTITION\s+(.*?)\s*\Z", re.S | re.I)),
    ("analyze", re.compile(r"ANALYZE\s+PARTITION\s+(.*?)\s*\Z", re.S | re.I)),
    ("coalesce", re.compile(r"COALESCE\s+PARTITION\s+([0-9]+)\s*\Z", re.S | re.I)),
)
_DEFINITION = re.compile(rf"\s*PARTITION\s+({_QUOTED_NAME})\s*(.*?)\s*\Z", re.S | re.I)
ALL = "ALL"


class Unparsed(ValueError):
    """Not a statement `compose` takes apart: it stays whole."""


@dataclass(frozen=True, slots=True)
class Step:
    """One partition operation: `sources` the partitions it names (ALL: every one),
    `into` the partitions it creates, `count` COALESCE's."""

    action: str
    proposals: tuple[Proposal, ...]
    safety: str
    sql: str = ""
    sources: tuple[str, ...] = ()
    into: tuple[Part, ...] = ()
    count: int = 0
    note: str = ""


def _unquote(quoted: str) -> str:
    return quoted[1:-1].replace("``", "`")


def split_top(text: str) -> list[str]:
    """`text` cut at the commas outside quotes, back-quotes, comments and parentheses."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char in "`'":
            end = text.find(char, i + 1)
            while end != -1 and text[end + 1 : end + 2] == char:
                end = text.find(char, end + 2)
            i = len(text) if end == -1 else end + 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end == -1 else end + 2
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
        i += 1
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


def _names(text: str) -> tuple[str, ...]:
    if text.strip().upper() == ALL:
        return (ALL,)
    names = []
    for piece in split_top(text):
        if not re.fullmatch(_QUOTED_NAME, piece):
            raise Unparsed(f"not a partition name: {piece[:40]}")
        names.append(_unquote(piece))
    return tuple(names)


def _definitions(text: str) -> tuple[Part, ...]:
    parts = []
    for piece in split_top(text):
        match = _DEFINITION.fullmatch(piece)
        if match is None:
            raise Unparsed("not a partition definition")
        parts.append(Part(_unquote(match[1]), match[2] or None))
    return tuple(parts)


def parse(proposal: Proposal, schema: str, table: str) -> Step:
    """The partition operation of one of partdash's statements; a statement of another
    shape (or naming another table) is a whole-table `rewrite`, or `other` (SET GLOBAL)."""
    alter = _ALTER.match(proposal.sql)
    if alter is None:
        return Step("other", (proposal,), proposal.safety, proposal.sql)
    if (_unquote(alter[1]), _unquote(alter[2])) != (schema, table):
        return Step("other", (proposal,), proposal.safety, proposal.sql)
    rest = alter[3]
    for action, pattern in _HEADS:
        match = pattern.match(rest)
        if match is None:
            continue
        try:
            return _step(action, match, proposal)
        except Unparsed:
            break
    return Step("rewrite", (proposal,), proposal.safety, proposal.sql, (ALL,))


def _step(action: str, match: re.Match, proposal: Proposal) -> Step:
    one = (proposal,)
    if action == "reorganize":
        return Step(
            action, one, proposal.safety, proposal.sql, _names(match[1]), _definitions(match[2])
        )
    if action == "add":
        return Step(action, one, proposal.safety, proposal.sql, (), _definitions(match[1]))
    if action == "coalesce":
        return Step(action, one, proposal.safety, proposal.sql, (ALL,), count=int(match[1]))
    return Step(action, one, proposal.safety, proposal.sql, _names(match[1]))


# -- bounds -----------------------------------------------------------------------------------

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LESS_THAN = re.compile(r"VALUES\s+LESS\s+THAN\s*", re.I)
_CALL = re.compile(r"(TO_DAYS|TO_SECONDS)\s*\(\s*'([^']*)'\s*\)\Z", re.I)
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_MAX = (2, 0)


def _value_key(text: str) -> tuple:
    value = text.strip()
    if value.upper() == "MAXVALUE":
        return _MAX
    if _INTEGER.match(value):
        return (1, int(value))
    call = _CALL.match(value)
    if call:
        moment = datetime.fromisoformat(call[2])
        days = moment.date().toordinal() + TO_DAYS_OFFSET
        if call[1].upper() == "TO_DAYS":
            return (1, days)
        seconds = (moment - datetime(1970, 1, 1)).total_seconds() + TO_SECONDS_EPOCH
        return (1, int(seconds))
    if len(value) >= 2 and value[0] == value[-1] == "'":
        text_value = value[1:-1].replace("''", "'")
        try:  # dates compare as dates, whatever their spelling (with or without a time)
            return (1, datetime.fromisoformat(text_value).isoformat())
        except ValueError:
            return (1, text_value)
    raise Unparsed(f"a bound partdash does not compare: {value[:40]}")


def bound_key(bound: str | None) -> tuple | None:
    """A RANGE bound as a value that orders: from a `VALUES LESS THAN (...)` clause or a
    PARTITION_DESCRIPTION (`740209`, `TO_DAYS('2026-12-01')`, `'2026-12-01',0`,
    `MAXVALUE`); None without one (HASH, KEY) or for LIST values."""
    if bound is None:
        return None
    text = _COMMENT.sub("", bound).strip()
    if text.upper().startswith(("VALUES IN", "DEFAULT")):
        return None
    less = _LESS_THAN.match(text)
    if less:
        text = text[less.end() :].strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return tuple(_value_key(value) for value in split_top(text))


# -- merging ----------------------------------------------------------------------------------


class Refused(ValueError):
    """A step that cannot join the others, or would fail on the layout (why)."""


def _union(first: Sequence[Part], second: Sequence[Part]) -> tuple[Part, ...]:
    """Both lists' partitions, each name once, ordered by bound; a name at two bounds, or
    two names at one bound, refuse the second list (the first is the more urgent)."""
    merged = {part.name.lower(): part for part in first}
    bounds = {_key_or_name(part): part.name for part in first}
    for part in second:
        held = merged.get(part.name.lower())
        if held is not None:
            if bound_key(held.bound) != bound_key(part.bound):
                raise Refused(f"it creates {part.name} at another bound than another fix")
            continue
        other = bounds.get(_key_or_name(part))
        if other is not None:
            raise Refused(f"it creates {part.name} where another fix creates {other}")
        merged[part.name.lower()] = part
    ordered = list(merged.values())
    if all(bound_key(part.bound) is not None for part in ordered):
        ordered.sort(key=lambda part: bound_key(part.bound))  # type: ignore[arg-type, return-value]
    return tuple(ordered)


def _key_or_name(part: Part) -> tuple:
    key = bound_key(part.bound)
    return ("bound", key) if key is not None else ("name", part.name.lower())


def _merge(held: Step, step: Step) -> Step:
    """`step` joined into `held`, a step of the same action on the same partitions."""
    proposals = held.proposals + step.proposals
    safety = _worse(held.safety, step.safety)
    if held.action in ("reorganize", "add") and held.into and bound_key(held.into[0].bound):
        into = _union(held.into, step.into)
        return replace(held, proposals=proposals, safety=safety, into=into, sql="")
    if held.action == "add":  # HASH, KEY: the larger target count
        larger = held if len(held.into) >= len(step.into) else step
        return replace(larger, proposals=proposals, safety=safety, sql=larger.sql)
    if held.action in ("drop", "rebuild", "analyze"):
        sources = tuple(dict.fromkeys(held.sources + step.sources))
        return replace(held, proposals=proposals, safety=safety, sources=sources, sql="")
    raise Refused(f"it is a second {held.action.upper()} of the table")


_SAFETY_RANK = {"instant": 0, "blocks": 1, "copies": 2, "destroys": 3}


def _worse(a: str, b: str) -> str:
    return a if _SAFETY_RANK.get(a, 0) >= _SAFETY_RANK.get(b, 0) else b


def _slot(step: Step) -> tuple:
    """Steps sharing a slot are merged into one statement."""
    if step.action == "reorganize":
        return (step.action, tuple(name.lower() for name in step.sources))
    if step.action in ("add", "drop", "rebuild", "analyze", "coalesce"):
        return (step.action,)
    return (step.action, step.sql)


def _merged(steps: Sequence[Step]) -> tuple[list[Step], list[Refusal]]:
    slots: dict[tuple, Step] = {}
    refused: list[Refusal] = []
    for step in steps:
        slot = _slot(step)
        held = slots.get(slot)
        if held is None:
            slots[slot] = step
            continue
        try:
            slots[slot] = _merge(held, step)
        except (Refused, Unparsed) as reason:
            refused += [Refusal(p, str(reason)) for p in step.proposals]
    return list(slots.values()), refused


# -- folding -------------------------------------------------------------------------------


def _rewritten(steps: Sequence[Step]) -> set[str]:
    """Names of the partitions other steps rewrite (ALL: the whole table) or drop."""
    names: set[str] = set()
    for step in steps:
        if step.action in ("reorganize", "drop"):
            names |= {name.lower() for name in step.sources}
        elif step.action in ("coalesce", "rewrite") or (step.action == "add" and _is_spread(step)):
            names.add(ALL.lower())
    return names


def _is_spread(step: Step) -> bool:
    return step.action == "add" and any(part.bound is None for part in step.into)


def _folded(steps: list[Step]) -> tuple[list[Step], Step | None]:
    """REBUILD less what another step rewrites or drops (none left: folded into that
    step); ANALYZE folded into the statistics that follow copies, less what is dropped.
    Returns the steps, and the ANALYZE step of the statistics section or None."""
    others = [s for s in steps if s.action not in ("rebuild", "analyze")]
    gone = _rewritten(others)
    dropped = {n.lower() for s in steps if s.action == "drop" for n in s.sources}
    copying = [s for s in steps if _SECTION_OF.get(s.safety) == "copies"]
    kept: list[Step] = []
    statistics: Step | None = None
    for step in steps:
        left: Step | None = step
        if step.action == "rebuild":
            left = _less(step, gone, others)
        elif step.action == "analyze" and copying:
            statistics = replace(step, sources=(ALL,), sql="", safety="instant")
            continue
        elif step.action == "analyze":
            left = _less(step, dropped, others)
        if left is not None and left.action in ("rebuild", "analyze"):
            kept.append(left)
    kept = others + kept  # `others` as `_less` left them: with the findings folded in
    if copying and statistics is None:
        statistics = Step("analyze", (), "instant", "", (ALL,))
    return kept, statistics


def _less(step: Step, gone: set[str], others: list[Step]) -> Step | None:
    """`step` without the partitions in `gone`; None (its findings joined to the step
    that rewrites them) when none is left."""
    if ALL.lower() in gone:
        left: tuple[str, ...] = ()
    else:
        left = tuple(n for n in step.sources if n.lower() not in gone)
    if left == step.sources:
        return step
    if left and left != (ALL,):
        return replace(step, sources=left, sql="")
    wanted = {name.lower() for name in step.sources}
    for i, other in enumerate(others):
        rewrites = _rewritten([other])
        if ALL.lower() in rewrites or rewrites & wanted:
            others[i] = replace(other, proposals=other.proposals + step.proposals)
            return None
    return step


# -- simulating ------------------------------------------------------------------------------


@dataclass
class Layout:
    """The partitions a table holds, in order, as the statements leave them; `known`
    false once a statement partdash does not take apart has changed them."""

    parts: list[Part]
    known: bool = True
    spread: bool = False
    log: list[str] = field(default_factory=list)

    def index(self, name: str) -> int:
        for i, part in enumerate(self.parts):
            if part.name.lower() == name.lower():
                return i
        raise Refused(f"partition {name} does not exist there")

    def has(self, name: str) -> bool:
        return any(part.name.lower() == name.lower() for part in self.parts)


def _fresh(layout: Layout, into: Sequence[Part], replaced: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    seen: set[str] = set()
    for part in into:
        lowered = part.name.lower()
        if lowered in seen or (layout.has(part.name) and lowered not in replaced):
            raise Refused(f"partition {part.name} would already exist (duplicate partition name)")
        seen.add(lowered)


def _ascending(parts: Sequence[Part]) -> None:
    keys = [bound_key(part.bound) for part in parts]
    if None in keys:
        return
    for before, after in zip(keys, keys[1:], strict=False):
        if not before < after:  # type: ignore[operator]
            raise Refused("its bounds would not be strictly increasing")


def simulate(layout: Layout, step: Step) -> None:
    """Apply `step` to `layout`; Refused (the layout unchanged) where the server would
    refuse it."""
    if step.action in ("other",):
        return
    if not layout.known:
        raise Refused("a statement before it changes the layout in a way partdash does not follow")
    handler = _SIMULATE.get(step.action)
    if handler is None:
        layout.known = False
        return
    handler(layout, step)


def _simulate_add(layout: Layout, step: Step) -> None:
    _fresh(layout, step.into)
    if not _is_spread(step):
        last = layout.parts[-1] if layout.parts else None
        if last is not None and (bound_key(last.bound) or ((),))[0] == _MAX:
            raise Refused("ADD PARTITION after a MAXVALUE partition fails")
        _ascending(([last] if last else []) + list(step.into))
    layout.parts += list(step.into)


def _simulate_reorganize(layout: Layout, step: Step) -> None:
    positions = [layout.index(name) for name in step.sources]
    first, last = min(positions), max(positions)
    if sorted(positions) != list(range(first, last + 1)):
        raise Refused("it reorganizes partitions that are not adjacent")
    _fresh(layout, step.into, {name.lower() for name in step.sources})
    if not _is_spread(step) and step.into:
        old_end, new_end = bound_key(layout.parts[last].bound), bound_key(step.into[-1].bound)
        if old_end != new_end:
            raise Refused("its new partitions would not end at the bound of those it replaces")
        _ascending(([layout.parts[first - 1]] if first else []) + list(step.into))
    layout.parts[first : last + 1] = list(step.into)


def _simulate_drop(layout: Layout, step: Step) -> None:
    if layout.spread:
        raise Refused("DROP PARTITION works on RANGE and LIST tables only")
    positions = {layout.index(name) for name in step.sources}
    if len(positions) >= len(layout.parts):
        raise Refused("it would drop every partition")
    layout.parts = [p for i, p in enumerate(layout.parts) if i not in positions]


def _simulate_named(layout: Layout, step: Step) -> None:
    for name in step.sources:
        if name != ALL:
            layout.index(name)


def _simulate_coalesce(layout: Layout, step: Step) -> None:
    if not layout.spread or step.count >= len(layout.parts):
        raise Refused("COALESCE PARTITION needs a HASH or KEY table with more partitions")
    layout.parts = layout.parts[: -step.count]


_SIMULATE = {
    "add": _simulate_add,
    "reorganize": _simulate_reorganize,
    "drop": _simulate_drop,
    "rebuild": _simulate_named,
    "analyze": _simulate_named,
    "coalesce": _simulate_coalesce,
}


# -- writing ---------------------------------------------------------------------------------


def _sql(quoted: str, step: Step) -> str:
    """The statement of a step: its proposal's own where it was not changed."""
    if step.sql:
        return step.sql
    names = ", ".join(ALL if n == ALL else name_sql(n) for n in step.sources)
    if step.action in ("drop", "rebuild", "analyze"):
        return f"ALTER TABLE {quoted} {step.action.upper()} PARTITION {names}"
    body = ",\n  ".join(
        f"PARTITION {name_sql(part.name)}" + (f" {part.bound}" if part.bound else "")
        for part in step.into
    )
    head = f"REORGANIZE PARTITION {names} INTO" if step.action == "reorganize" else "ADD PARTITION"
    return f"ALTER TABLE {quoted} {head} (\n  {body}\n)"


def _amounts(step: Step, parts: Sequence[Part]) -> tuple[int | None, int | None]:
    """The rows and bytes a step copies or destroys: of the partitions it names, or of
    the whole table; None for an instant one."""
    if step.safety == "instant":
        return None, None
    every = ALL in step.sources or _is_spread(step) or step.action in ("coalesce", "rewrite")
    wanted = {n.lower() for n in step.sources}
    chosen = [p for p in parts if every or p.name.lower() in wanted]
    rows = [p.rows for p in chosen if p.rows is not None]
    size = [p.bytes for p in chosen if p.bytes is not None]
    return (sum(rows) if rows else None), (sum(size) if size else None)


def _section(step: Step) -> str:
    return _SECTION_OF.get(step.safety, "instant")


def _order(step: Step) -> tuple[int, int]:
    section = SECTIONS.index(_section(step))
    return section, _ACTION_ORDER.index(step.action)


def compose(
    schema: str,
    table: str,
    proposals: Sequence[Proposal],
    parts: Sequence[Part],
    spread: bool = False,
) -> TableFix:
    """The combined fix of one table: `proposals` its findings' statements (most urgent
    first), `parts` its current partitions in order, `spread` true for HASH and KEY."""
    try:
        quoted = f"{name_sql(schema)}.{name_sql(table)}"
    except Unsafe as reason:
        return TableFix((), tuple(Refusal(p, str(reason)) for p in proposals))
    steps, refused = _merged([parse(p, schema, table) for p in proposals])
    steps, statistics = _folded(steps)
    layout = Layout(list(parts), spread=spread)
    statements: list[Statement] = []
    for step in sorted(steps, key=_order):
        try:
            simulate(layout, step)
            sql = _sql(quoted, step)
        except (Refused, Unsafe, Unparsed) as reason:
            refused += [Refusal(p, str(reason)) for p in step.proposals]
            continue
        rows, size = _amounts(step, parts)
        statements.append(Statement(_section(step), sql, step.safety, step.proposals, rows, size))
    copied = any(s.section == "copies" for s in statements)
    if statistics is not None and (copied or statistics.proposals):
        sql = _sql(quoted, statistics)
        statements.append(Statement("statistics", sql, "instant", statistics.proposals))
    statements.sort(key=lambda s: SECTIONS.index(s.section))
    return TableFix(tuple(statements), tuple(refused))
