"""The maintenance plan: every fix due across the fleet, per server, most urgent first,
read from the findings the analysis stored (each table's `health["findings"]`, each
server's latest `ServerSnapshot.pressure["findings"]`), so the plan says exactly what
the API, the pages and the alerts say. The API, its CSV, the fleet's plan page and the
per-server SQL script (`partdash.metrics.plan_script`) all read `fleet_plan`.

Urgency: runway first (rows already in the catch-all, then the fewest days left), then
retention (most overdue first), drift, fragmentation, statistics (staleness), then
pressure, compression, skew and hotspot; within a kind, critical before warning, then
the higher score. Any kind added later comes last.

Stale: a fix is computed from the table as its analysis saw it. Without `as_of`, an item
is stale when the table's definition was read after the fix was computed
(`definitions_read_at` newer than `analysed_at`). With `as_of` (the `generated_at` of a
plan the reader holds), an item is stale when the table's definition changed after that
moment, or the table was dropped since (listed only then, so a plan held does not lose
it silently). The fix shown is always the latest analysis's.

Composed: a table's findings are fixed by one sequence of statements
(`partdash.health.composed`): each server's `statements` list them in the order the
script runs them (instant, copies, the ANALYZE of what the copies rewrote, then what
destroys data), each saying which findings it clears. An item whose own statement was
merged into another (or refused: it would fail on the layout the others leave) has `sql`
null, says so in its advice, and points at the statement that clears it (`statement`).

Reads a handful of queries for the whole fleet, whatever its number of tables.
"""

from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypedDict

from django.db.models import Q
from django.utils import timezone

from partdash.health import kinds
from partdash.health.composed import Part, Proposal, TableFix, compose
from partdash.health.fix_values import Unsafe, name_sql
from partdash.health.fixes import stored_fix
from partdash.health.shapes import FindingShape, stored_health, stored_pressure
from partdash.metrics.models import Partition, PartitionedTable, ServerSnapshot
from partdash.servers.models import Server

SEVERITY_RANK = {"critical": 0, "warning": 1}
# The statistics a statement that rewrites partitions leaves at 0 rows (MySQL bug
# #120318, MDEV-35163: see partdash.health.fixes) until they are analysed.
REWRITES = ("copies",)


class PlanItem(TypedDict):
    """One fix due: where, which finding, how urgent, the fix, and what it rests on."""

    server: int
    server_name: str
    schema: str | None
    table: str | None
    table_id: int | None
    kind: str
    severity: str
    score: float
    message: str
    urgency: str
    advice: str
    sql: str | None
    safety: str | None
    rows: int | None
    bytes: int | None
    analyze_after: str | None
    as_of: datetime | None
    poll: str | None
    stale: bool
    statement: int | None
    superseded: bool


class Cleared(TypedDict):
    """A finding a statement clears."""

    kind: str
    severity: str
    message: str


class PlanStatement(TypedDict):
    """One statement of a server's script, in run order: its section (`instant`,
    `copies`, `statistics`, `destroys`), its table (None: the server's own) and the
    findings it clears."""

    number: int
    section: str
    schema: str | None
    table: str | None
    table_id: int | None
    sql: str
    safety: str
    rows: int | None
    bytes: int | None
    clears: list[Cleared]


class ServerPlan(TypedDict):
    """One server's items, most urgent first, and the poll its own findings came from."""

    server: int
    name: str
    host: str
    port: int
    poll: str | None
    taken_at: datetime | None
    items: list[PlanItem]
    statements: list[PlanStatement]


class Plan(TypedDict):
    generated_at: datetime
    as_of: datetime | None
    servers: list[ServerPlan]


def fleet_plan(
    servers: Iterable[Server], as_of: datetime | None = None, kinds: set[str] | None = None
) -> Plan:
    """The plan of `servers` (most urgent server first; those with nothing due last, by
    name), optionally of some finding kinds only."""
    listed = list(servers)
    snapshots = _latest_snapshots([s.pk for s in listed])
    ranked = _table_items(listed, as_of) + _server_items(listed, snapshots)
    if kinds is not None:
        ranked = [(within, item) for within, item in ranked if item["kind"] in kinds]
    ranked.sort(key=_urgency_key)
    by_server: dict[int, list[PlanItem]] = {}
    for _, item in ranked:
        by_server.setdefault(item["server"], []).append(item)
    layouts = _layouts([item for _, item in ranked])
    plans = [
        _server_plan(server, snapshots.get(server.pk), by_server.get(server.pk, []))
        for server in listed
    ]
    for server_plan in plans:
        server_plan["statements"] = composed(server_plan["items"], layouts)
    plans.sort(key=_server_order(ranked))
    return {"generated_at": timezone.now(), "as_of": as_of, "servers": plans}


def _server_order(ranked: list[tuple[float, PlanItem]]):
    """Servers by their most urgent item; those with nothing due last, by name."""
    first: dict[int, tuple] = {}
    for within, item in ranked:
        first.setdefault(item["server"], _urgency_key((within, item)))
    return lambda plan: (plan["server"] not in first, first.get(plan["server"], ()), plan["name"])


def plan_items(plan: Plan) -> list[PlanItem]:
    """Every item of the plan, server after server (the CSV's rows)."""
    return [item for server in plan["servers"] for item in server["items"]]


# -- reading ------------------------------------------------------------------------------

_TABLE_FIELDS = (
    "pk",
    "server_id",
    "schema",
    "name",
    "health",
    "analysed_at",
    "definitions_read_at",
    "dropped_at",
)


def _latest_snapshots(server_ids: list[int]) -> dict[int, ServerSnapshot]:
    """Each server's latest poll, in one query whatever the number of servers."""
    fields = ("pk", "server_id", "poll_id", "taken_at", "pressure")
    return {s.server_id: s for s in ServerSnapshot.objects.latest_of(server_ids).only(*fields)}


def _tables(servers: list[Server], as_of: datetime | None):
    """The live tables of `servers`, and with `as_of` those dropped since."""
    present = Q(dropped_at=None) | Q(dropped_at__gt=as_of) if as_of else Q(dropped_at=None)
    return (
        PartitionedTable.objects.filter(present, server_id__in=[s.pk for s in servers])
        .filter(score__gt=0)  # a table with a finding scores 10 or more: skip the rest's health
        .order_by()
        .values_list(*_TABLE_FIELDS, named=True)
    )


def _polls_at(server_times: set[tuple[int, datetime]]) -> dict[tuple[int, datetime], str]:
    """The poll id of each (server, time) a table was analysed at (its poll's time)."""
    if not server_times:
        return {}
    found = ServerSnapshot.objects.filter(
        server_id__in={server for server, _ in server_times},
        taken_at__in={at for _, at in server_times},
    ).values_list("server_id", "taken_at", "poll_id")
    return {(server, at): poll for server, at, poll in found}


def _table_items(servers: list[Server], as_of: datetime | None) -> list[tuple[float, PlanItem]]:
    names = {server.pk: server.name for server in servers}
    rows = [row for row in _tables(servers, as_of) if stored_health(row.health).get("findings")]
    polls = _polls_at(
        {(row.server_id, row.analysed_at) for row in rows if row.analysed_at is not None}
    )
    items = []
    for pk, server_id, schema, name, health, analysed_at, read_at, dropped_at in rows:
        where = {"server": server_id, "server_name": names[server_id], "schema": schema}
        where |= {"table": name, "table_id": pk}
        stale = _is_stale(analysed_at, read_at, dropped_at, as_of)
        stored = stored_health(health)
        for finding in stored.get("findings") or []:
            item = _item(finding, where, analysed_at, polls.get((server_id, analysed_at)), stale)
            item["urgency"], within = _urgency(finding, stored)
            items.append((within, item))
    return items


def _server_items(
    servers: list[Server], snapshots: dict[int, ServerSnapshot]
) -> list[tuple[float, PlanItem]]:
    """The servers' own findings (pressure: SET GLOBAL), as of their latest poll."""
    items = []
    for server in servers:
        snapshot = snapshots.get(server.pk)
        if snapshot is None:
            continue
        where = {"server": server.pk, "server_name": server.name, "schema": None}
        where |= {"table": None, "table_id": None}
        for finding in stored_pressure(snapshot.pressure).get("findings") or []:
            items.append((0.0, _item(finding, where, snapshot.taken_at, snapshot.poll_id, False)))
    return items


def _is_stale(
    analysed_at: datetime | None,
    read_at: datetime | None,
    dropped_at: datetime | None,
    as_of: datetime | None,
) -> bool:
    """See the module's docstring."""
    if dropped_at is not None:
        return True
    if read_at is None:
        return False
    if as_of is not None:
        return read_at > as_of
    return analysed_at is not None and read_at > analysed_at


def _item(
    finding: FindingShape,
    where: dict[str, Any],
    as_of: datetime | None,
    poll: str | None,
    stale: bool,
) -> PlanItem:
    fix = stored_fix(finding.get("fix")) or {
        "advice": "",
        "sql": None,
        "safety": None,
        "rows": None,
        "bytes": None,
    }
    return {
        **where,  # type: ignore[typeddict-item]
        "kind": finding["kind"],
        "severity": finding["severity"],
        "score": finding["score"],
        "message": finding["message"],
        "urgency": finding["severity"],
        **fix,
        "analyze_after": _analyze_after(fix["safety"], where["schema"], where["table"]),
        "as_of": as_of,
        "poll": poll,
        "stale": stale,
        "statement": None,
        "superseded": False,
    }


def _analyze_after(safety: str | None, schema: str | None, table: str | None) -> str | None:
    """The ANALYZE a statement that rewrites partitions needs before its table's
    figures (and its finding) read true again; None for the others."""
    if safety not in REWRITES or schema is None or table is None:
        return None
    try:
        return f"ALTER TABLE {name_sql(schema)}.{name_sql(table)} ANALYZE PARTITION ALL"
    except Unsafe:
        return None


# -- urgency ------------------------------------------------------------------------------


def _urgency(finding: FindingShape, health: Any) -> tuple[str, float]:
    """A short phrase that says how urgent ("1,200 rows in the catch-all", "3.2 days
    left", "40 days overdue", else the severity) and the order within the kind: the
    kind's own `within` (runway: rows in the catch-all first, then fewest days left;
    retention: most overdue first); else 0 (severity and score decide)."""
    declared = kinds.kind(finding["kind"])
    if declared is None or declared.within is None:
        return finding["severity"], 0.0
    return declared.within(finding, health)


def kind_rank(kind: str) -> int:
    """The kind's place in the plan (`FindingKind.urgency`); a kind not registered comes
    after every registered one."""
    order = kinds.urgency_order()
    return order.index(kind) if kind in order else len(order)


def _urgency_key(ranked: tuple[float, PlanItem]) -> tuple:
    within, item = ranked
    return (
        kind_rank(item["kind"]),
        within,
        SEVERITY_RANK.get(item["severity"], 2),
        -item["score"],
        item["server_name"],
        item["schema"] or "",
        item["table"] or "",
    )


def _server_plan(server: Server, snapshot: ServerSnapshot | None, items: list[PlanItem]):
    return ServerPlan(
        server=server.pk,
        name=server.name,
        host=server.host,
        port=server.port,
        poll=snapshot.poll_id if snapshot else None,
        taken_at=snapshot.taken_at if snapshot else None,
        items=items,
        statements=[],
    )


# -- composing --------------------------------------------------------------------------------

SPREAD = ("HASH", "LINEAR HASH", "KEY", "LINEAR KEY")
RANGED = ("RANGE", "RANGE COLUMNS")


def _layouts(items: list[PlanItem]) -> dict[int, tuple[list[Part], bool]]:
    """The current partitions (in order, subpartitions summed) of the tables with a
    statement, and whether each is HASH or KEY: two queries."""
    ids = list(
        {i["table_id"] for i in items if i["table_id"] is not None and i["sql"] and not i["stale"]}
    )
    methods = dict(PartitionedTable.objects.filter(pk__in=ids).values_list("pk", "method"))
    rows = (
        Partition.objects.live()
        .filter(table_id__in=ids)
        .order_by("table_id", "ordinal", "subpartition_ordinal")
        .values_list("table_id", "name", "description", "rows", "data_bytes", "index_bytes")
    )
    parts: dict[int, dict[str, Part]] = {pk: {} for pk in ids}
    for table_id, name, description, count, data, index in rows:
        ranged = (methods.get(table_id) or "").upper().strip() in RANGED
        size = None if data is None else data + (index or 0)
        held = parts[table_id].get(name)
        if held is not None:
            count, size = _plus(held.rows, count), _plus(held.bytes, size)
        parts[table_id][name] = Part(name, description if ranged else None, count, size)
    spread = {pk: (methods.get(pk) or "").upper().strip() in SPREAD for pk in ids}
    return {pk: (list(parts[pk].values()), spread[pk]) for pk in ids}


def _plus(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _proposal(item: PlanItem) -> Proposal:
    return Proposal(
        item["kind"], item["severity"], item["message"], item["sql"] or "", item["safety"] or ""
    )


def composed(
    items: list[PlanItem], layouts: dict[int, tuple[list[Part], bool]]
) -> list[PlanStatement]:
    """One server's statements in run order, its tables' fixes composed (tables by their
    most urgent item), and each item told which statement clears it."""
    by_table: dict[tuple, list[PlanItem]] = {}
    for item in items:
        if item["sql"] and not item["stale"]:
            key = (item["table_id"],) if item["table_id"] is not None else ("server", len(by_table))
            by_table.setdefault(key, []).append(item)
    placed: list[tuple[tuple[int, int, int], PlanStatement]] = []
    for rank, table_items in enumerate(by_table.values()):
        for order, statement in enumerate(_table_statements(table_items, layouts)):
            section = _SECTIONS.index(statement["section"])
            placed.append(((section, rank, order), statement))
    # By section, then the tables' urgency, then each table's own order.
    ordered = [statement for _, statement in sorted(placed, key=_place)]
    for number, statement in enumerate(ordered, 1):
        statement["number"] = number
    _point_items(by_table, ordered)
    return ordered


_SECTIONS = ("instant", "copies", "statistics", "destroys")


def _place(placed: tuple[tuple[int, int, int], PlanStatement]) -> tuple[int, int, int]:
    place, _ = placed
    return place


def _table_statements(
    items: list[PlanItem], layouts: dict[int, tuple[list[Part], bool]]
) -> list[PlanStatement]:
    first = items[0]
    where = {"schema": first["schema"], "table": first["table"], "table_id": first["table_id"]}
    if first["table_id"] is None or first["table_id"] not in layouts:
        fixes = [_as_is(item) for item in items]
    else:
        parts, spread = layouts[first["table_id"]]
        fix = compose(
            first["schema"] or "",
            first["table"] or "",
            [_proposal(i) for i in items],
            parts,
            spread,
        )
        _refuse(items, fix)
        fixes = [
            (s.section, s.sql, s.safety, s.rows, s.bytes, list(s.clears)) for s in fix.statements
        ]
    return [
        {
            "number": 0,
            "section": section,
            **where,  # type: ignore[typeddict-item]
            "sql": sql,
            "safety": safety,
            "rows": rows,
            "bytes": size,
            "clears": [
                {"kind": p.kind, "severity": p.severity, "message": p.message} for p in clears
            ],
        }
        for section, sql, safety, rows, size, clears in fixes
    ]


def _as_is(item: PlanItem) -> tuple:
    section = {"copies": "copies", "blocks": "copies", "destroys": "destroys"}
    return (
        section.get(item["safety"] or "", "instant"),
        item["sql"],
        item["safety"],
        item["rows"],
        item["bytes"],
        [_proposal(item)],
    )


def _refuse(items: list[PlanItem], fix: TableFix) -> None:
    """A proposal the composition refused keeps advice only, with the reason."""
    for refusal in fix.refused:
        for item in items:
            if _proposal(item) == refusal.proposal:
                item["advice"] = (
                    f"Not in the plan: beside the table's other fixes this statement would "
                    f"fail ({refusal.reason}). Run the plan, poll again, and the next plan "
                    f"holds what is still due. Its own statement was: {item['sql']}"
                )
                item["sql"], item["safety"], item["analyze_after"] = None, None, None


def _point_items(by_table: dict[tuple, list[PlanItem]], statements: list[PlanStatement]) -> None:
    """Each item's `statement`; an item whose own statement is not that one as is says
    it was superseded, and loses its `sql` (run the combined one, not both)."""
    for items in by_table.values():
        for item in items:
            if item["sql"] is None:
                continue
            found = _clearing(item, statements)
            if found is None:
                continue
            item["statement"] = found["number"]
            if found["sql"] != item["sql"]:
                item["superseded"] = True
                item["advice"] = (
                    f"Superseded by the table's combined fix, statement {found['number']} of "
                    f"the plan ({found['section']}), which clears this finding with the "
                    f"table's others. {item['advice']}"
                )
                item["sql"], item["safety"], item["analyze_after"] = None, None, None


def _clearing(item: PlanItem, statements: list[PlanStatement]) -> PlanStatement | None:
    for statement in statements:
        if statement["table_id"] != item["table_id"] or statement["schema"] != item["schema"]:
            continue
        for cleared in statement["clears"]:
            if (cleared["kind"], cleared["message"]) == (item["kind"], item["message"]):
                return statement
    return None


def table_statements(table: PartitionedTable) -> tuple[list[PlanStatement], list[PlanItem]]:
    """One table's combined fix as its server's plan has it (the statements in run
    order, numbered as in that server's script) and its findings' items (which say what
    was superseded or refused): the table page shows the same sequence as the plan."""
    plan = fleet_plan(Server.objects.filter(pk=table.server_id))
    if not plan["servers"]:
        return [], []
    server = plan["servers"][0]
    statements = [s for s in server["statements"] if s["table_id"] == table.pk]
    items = [i for i in server["items"] if i["table_id"] == table.pk]
    return statements, items
