"""Each server group's layout drift, judged after a member's poll (`analyse_server`),
for that member alone: its tables laid out unlike the group's (a `drift` finding in
the table's health, with the statement that aligns it), and the group's tables it lacks
(a server finding). Other members' rows are read, never written: each member's drift is
written by its own poll, which its poll lock serializes, so two members' polls never
race on one table's health.

Cheap by construction: a member's tables are compared by their stored layout digests
(`PartitionedTable.layout`), and only where this member's differs from the group's are
partitions read. A poll where no member's definitions changed since this member's last
comparison (the group's fingerprint) reads one aggregate per group and compares nothing.
"""

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Count, Max, Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from partdash.health import findings as rules
from partdash.health.drift import (
    Holder,
    Layout,
    Sizes,
    align_fix,
    differences,
    expected_everywhere,
    group_digest,
    layout_digest,
    schema_left_out,
)
from partdash.health.fixes import Fix
from partdash.health.partitions import PartitionState
from partdash.health.pressure import stale_partitions, with_file_rows
from partdash.health.shapes import DriftShape, FindingShape, TableHealth, stored_health
from partdash.health.side_by_side import side_by_side_names, written_bound
from partdash.lib.bulk import update_each
from partdash.metrics.models import Partition, PartitionedTable, ServerSnapshot
from partdash.servers.models import Server, ServerGroup

TableName = tuple[str, str]  # (schema, table) lower-cased: how a group matches copies


class Copy(NamedTuple):
    """A group member's copy of a table: who holds it with which layout, and which it is."""

    holder: Holder
    table_id: int
    schema: str
    name: str


class Pair(NamedTuple):
    """A member's copy held to another member's (`theirs`, on `server_id`) in `group`."""

    group: ServerGroup
    mine: int
    theirs: int
    server_id: int


def _finding(finding: rules.Finding) -> FindingShape:
    return asdict(finding)  # type: ignore[return-value]  # the same fields, as JSON


# -- layouts ----------------------------------------------------------------------------


def stored_layouts(table_ids: list[int]) -> dict[int, Layout]:
    """The layouts of these tables from their stored definitions and live partitions."""
    layouts, _ = stored_copies(table_ids)
    return layouts


def stored_copies(table_ids: list[int]) -> tuple[dict[int, Layout], dict[int, Sizes]]:
    """The layouts of these tables, and the rows and bytes of each one's top-level
    partitions (subpartitions summed, by lower-cased name), in one read of them."""
    tables = PartitionedTable.objects.filter(pk__in=table_ids).values_list(
        "id", "method", "expression", "subpartition_method", "subpartition_expression"
    )
    parts: dict[int, list[tuple[str, str, str | None]]] = defaultdict(list)
    sizes: dict[int, dict[str, tuple[int | None, int | None]]] = defaultdict(dict)
    rows = (
        Partition.objects.live()
        .filter(table_id__in=table_ids)
        .order_by("table_id", "ordinal", "subpartition_ordinal", "subpartition")
        .values_list("table_id", "name", "subpartition", "description", *_SIZE_FIELDS)
    )
    states: dict[int, list[PartitionState]] = defaultdict(list)
    for table_id, name, subpartition, description, *figures in rows.iterator(chunk_size=5000):
        parts[table_id].append((name, subpartition, description))
        states[table_id].append(
            PartitionState(name, subpartition, **dict(zip(_SIZE_FIELDS, figures, strict=True)))
        )
    for table_id, members in states.items():
        for state in best_rows(members):
            _add_size(sizes[table_id], state.name.lower(), *_size_of(state))
    layouts = {
        pk: Layout.of(method, expression, sub_method, sub_expression, parts[pk])
        for pk, method, expression, sub_method, sub_expression in tables
    }
    return layouts, {pk: sizes[pk] for pk in layouts}


_SIZE_FIELDS = ("rows", "data_bytes", "index_bytes", "file_bytes", "allocated_bytes")


def best_rows(states: list[PartitionState]) -> list[PartitionState]:
    """The partitions with the best row figure partdash has: a partition rewritten
    (REORGANIZE, REBUILD) and not analysed since counts the rows its file holds, not
    its statistics' empty tree (a drift fix said "copies ~56 rows" of 1,860: issue 38)."""
    return with_file_rows(states, stale_partitions(states, timezone.now()))


def _size_of(state: PartitionState) -> tuple[int | None, int | None, int | None]:
    return state.rows, state.data_bytes, state.index_bytes


def _add_size(sizes: dict, name: str, count, data, index) -> None:
    """Add a (sub)partition's rows and data plus index bytes to its partition's."""
    size = None if data is None else data + (index or 0)
    count_before, size_before = sizes.get(name, (None, None))
    sizes[name] = (
        None if count is None and count_before is None else (count or 0) + (count_before or 0),
        None if size is None and size_before is None else (size or 0) + (size_before or 0),
    )


def fill_layouts(table_ids: list[int]) -> dict[int, str]:
    """Digests for tables stored before layouts were (written once, then kept by the
    store with each table's definitions)."""
    digests = {pk: layout_digest(layout) for pk, layout in stored_layouts(table_ids).items()}
    tables = [PartitionedTable(pk=pk, layout=digest) for pk, digest in digests.items()]
    update_each(PartitionedTable, tables, ["layout"])
    return digests


# -- the group's state ------------------------------------------------------------------


def _members(groups: list[ServerGroup], polling: int | None = None) -> dict[int, list[int]]:
    """Each group's members. With `polling` (the member whose poll compares), those
    polled already and it: one never polled holds no table yet, which says nothing of
    what it lacks."""
    through = ServerGroup.servers.through.objects.filter(servergroup__in=groups)
    if polling is not None:
        through = through.filter(Q(server__last_success_at__isnull=False) | Q(server=polling))
    members: dict[int, list[int]] = {g.pk: [] for g in groups}
    for group_id, server_id in through.values_list("servergroup_id", "server_id"):
        members[group_id].append(server_id)
    return {pk: sorted(ids) for pk, ids in members.items()}


def fingerprint(groups: list[ServerGroup], members: dict[int, list[int]]) -> str:
    """Changes when a group, its membership or the schemas it leaves out change, or any
    member's tables are added, dropped or read again (new definitions)."""
    ids = sorted({pk for ids in members.values() for pk in ids})
    state = list(
        PartitionedTable.objects.filter(server_id__in=ids)
        .values("server_id")
        .annotate(
            live=Count("id", filter=Q(dropped_at=None)),
            read=Max("definitions_read_at"),
            dropped=Max("dropped_at"),
        )
        .order_by("server_id")
        .values_list("server_id", "live", "read", "dropped")
    )
    groups_state = [
        (g.pk, g.kind, g.reference_id, members[g.pk], g.excluded_schemas) for g in groups
    ]
    text = repr((groups_state, [tuple(map(str, row)) for row in state]))
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _previous(server: Server, snapshot: ServerSnapshot) -> dict:
    """What the server's previous poll stored of its drift (`pressure["drift"]`)."""
    return (
        ServerSnapshot.objects.filter(server=server, taken_at__lt=snapshot.taken_at)
        .order_by("-taken_at")
        .values_list(KeyTransform("drift", "pressure"), flat=True)
        .first()
    ) or {}


# -- comparing ----------------------------------------------------------------------------


class _Comparison:
    """One member's drift across its groups."""

    def __init__(self, server: Server, now: datetime) -> None:
        self.server, self.now = server, now
        self.tables: dict[int, tuple[DriftShape, FindingShape]] = {}
        self.missing: list[dict[str, Any]] = []
        # (group, this member's table, the copy it is held to, that copy's server)
        self.pairs: list[Pair] = []

    def group(self, group: ServerGroup, members: list[int]) -> None:
        if self.server.pk not in members:
            return
        copies = (
            PartitionedTable.objects.live()
            .filter(server_id__in=members)
            .values_list(
                "id", "server_id", "schema", "name", "layout", "partition_count", named=True
            )
        )
        patterns = group.excluded_schema_patterns
        rows = [row for row in copies if not schema_left_out(row.schema, patterns)]
        blank = [row.id for row in rows if not row.layout]
        digests = fill_layouts(blank) if blank else {}
        holders: dict[TableName, list[Copy]] = defaultdict(list)
        for pk, server_id, schema, name, layout, count in rows:
            holder = Holder(server_id, layout or digests[pk], count)
            holders[(schema.lower(), name.lower())].append(Copy(holder, pk, schema, name))
        reference = group.reference_id if group.reference_id in members else None
        for copies_of in holders.values():
            self._table(group, members, reference, copies_of)

    def _table(self, group, members, reference, copies_of: list[Copy]) -> None:
        servers = {copy.holder.server_id for copy in copies_of}
        on_reference = (reference in servers) if reference is not None else None
        everywhere = expected_everywhere(len(servers), len(members), on_reference)
        mine = next((c for c in copies_of if c.holder.server_id == self.server.pk), None)
        if mine is None:
            if everywhere:
                first = copies_of[0]
                self.missing.append(
                    {
                        "schema": first.schema,
                        "table": first.name,
                        "group": group.name,
                        "on": sorted(servers),
                    }
                )
            return
        holder, pk = mine.holder, mine.table_id
        if pk in self.tables:
            return  # another group of this member found it first
        if not everywhere:
            others = "the reference" if reference is not None else "most of the group"
            self._only_here(group, pk, f"{others} lacks this table")
            return
        target = group_digest([c.holder for c in copies_of], reference)
        if holder.digest == target:
            return
        theirs = min(
            (c for c in copies_of if c.holder.digest == target),
            key=lambda c: (c.holder.server_id != reference, c.holder.server_id),
        )
        self.pairs.append(Pair(group, pk, theirs.table_id, theirs.holder.server_id))

    def _only_here(self, group: ServerGroup, pk: int, why: str) -> None:
        fix = Fix(
            "Create the table on the group's other members (SHOW CREATE TABLE here), or "
            "drop it here if it does not belong: partdash writes no DROP TABLE."
        )
        finding = rules.drift_finding(group.name, "the rest of its group", [why], fix)
        self.tables[pk] = (
            self._shape(group, "the rest of its group", found=[why], only_here=True),
            _finding(finding),
        )

    def _shape(
        self,
        group: ServerGroup,
        compared_with: str,
        *,
        found: list[str],
        only_here: bool = False,
        server_id: int | None = None,
        table_id: int | None = None,
    ) -> DriftShape:
        """The stored drift of a member's table: compared with which copy (`table_id` on
        `server_id`; None: the table is only here), and the differences `found`."""
        return {
            "group": group.name,
            "group_id": group.pk,
            "compared_with": compared_with,
            "server_id": server_id,
            "table_id": table_id,
            "differences": found,
            "only_here": only_here,
            "evaluated_at": self.now.isoformat(),
        }

    def finish(self) -> None:
        """Read the layouts of the copies that differ, and write their differences."""
        if not self.pairs:
            return
        ids = sorted({pk for _, mine, theirs, _ in self.pairs for pk in (mine, theirs)})
        layouts, sizes = stored_copies(ids)
        names = dict(
            Server.objects.filter(pk__in={p.server_id for p in self.pairs}).values_list(
                "pk", "name"
            )
        )
        tables = dict(
            (pk, (schema, name))
            for pk, schema, name in PartitionedTable.objects.filter(pk__in=ids).values_list(
                "id", "schema", "name"
            )
        )
        for group, mine, theirs, server_id in self.pairs:
            if mine in self.tables:
                continue
            here, there = layouts[mine], layouts[theirs]
            found = differences(here, there) or ["laid out differently"]
            whose = names.get(server_id, "another member")
            if server_id == group.reference_id:
                compared_with = f"{whose} (the reference)"
            else:
                compared_with = f"{whose}"
            schema, name = tables[mine]
            fix = align_fix(schema, name, here, there, sizes[mine])
            finding = rules.drift_finding(group.name, compared_with, found, fix)
            shape = self._shape(
                group, compared_with, found=found, server_id=server_id, table_id=theirs
            )
            self.tables[mine] = (shape, _finding(finding))


# -- writing ------------------------------------------------------------------------------


def _without_time(shape: Mapping[str, Any] | None) -> dict | None:
    return None if shape is None else {k: v for k, v in shape.items() if k != "evaluated_at"}


def with_drift(
    stored: Mapping[str, Any], drift: tuple[DriftShape, FindingShape] | None
) -> TableHealth:
    """A table's health with this drift (None: none) in place of the one it held."""
    health: Any = dict(stored)
    found = [f for f in health.get("findings") or [] if f.get("kind") != "drift"]
    health.pop("drift", None)
    if drift is not None:
        health["drift"], finding = drift
        found.append(finding)
    found.sort(key=lambda f: -(f.get("score") or 0))
    health["findings"] = found
    health["score"] = sum(f.get("score") or 0 for f in found)
    return health


def keep_drift(before: Any, health: TableHealth) -> TableHealth:
    """A table analysed again keeps the drift its group's comparison last wrote."""
    previous = stored_health(before).get("drift")
    if not previous:
        return health
    finding = next(
        (f for f in stored_health(before).get("findings") or [] if f.get("kind") == "drift"),
        None,
    )
    return with_drift(health, (previous, finding)) if finding else health


def _write(before: list[int], found: dict[int, tuple[DriftShape, FindingShape]], now) -> None:
    ids = set(before) | set(found)
    if not ids:
        return
    changed = []
    for table in PartitionedTable.objects.filter(pk__in=ids).only("id", "health", "score"):
        health = stored_health(table.health)
        new = found.get(table.pk)
        new_shape, new_finding = new or (None, None)
        old_finding = next(
            (f for f in health.get("findings") or [] if f.get("kind") == "drift"), None
        )
        same_shape = _without_time(health.get("drift")) == _without_time(new_shape)
        if same_shape and old_finding == new_finding:
            continue
        table.health = with_drift(health, new)
        table.score = table.health["score"]
        table.analysed_at = now  # the alerts judge what this poll wrote
        changed.append(table)
    update_each(PartitionedTable, changed, ["health", "score", "analysed_at"])


def _missing_words(missing: list[dict[str, Any]], names: dict[int, str]) -> list[str]:
    return [
        f"{m['schema']}.{m['table']} (group {m['group']}: on "
        f"{', '.join(names.get(pk, str(pk)) for pk in m['on'])})"
        for m in missing
    ]


def evaluate(server: Server, snapshot: ServerSnapshot, pressure: dict) -> None:
    """Judge this member's drift in each of its groups; writes its tables' drift and
    adds the tables it lacks to `pressure` (the snapshot's, about to be stored)."""
    previous = _previous(server, snapshot)
    groups = list(ServerGroup.objects.filter(servers=server).order_by("name"))
    if not groups and not previous.get("tables") and not previous.get("missing"):
        return
    members = _members(groups, polling=server.pk)
    mark = fingerprint(groups, members) if groups else ""
    if groups and mark == previous.get("fingerprint"):
        state = previous
    else:
        comparison = _Comparison(server, snapshot.taken_at)
        for group in groups:
            comparison.group(group, members[group.pk])
        comparison.finish()
        # Those the previous poll recorded, and any other holding a drift (a previous
        # snapshot rolled up, or lost): none keeps one the comparison no longer finds.
        held = PartitionedTable.objects.filter(server=server, health__has_key="drift")
        before = {*(previous.get("tables") or []), *held.values_list("id", flat=True)}
        _write(sorted(before), comparison.tables, snapshot.taken_at)
        state = {
            "fingerprint": mark,
            "groups": [g.name for g in groups],
            "tables": sorted(comparison.tables),
            "missing": comparison.missing,
        }
    pressure["drift"] = state
    if state.get("missing"):
        ids = {pk for m in state["missing"] for pk in m["on"]}
        names = dict(Server.objects.filter(pk__in=ids).values_list("pk", "name"))
        finding = rules.missing_finding(_missing_words(state["missing"], names))
        pressure["findings"] = sorted(
            [*pressure.get("findings", []), _finding(finding)], key=lambda f: -f["score"]
        )


# -- side by side -------------------------------------------------------------------------

SIDE_BY_SIDE_ROWS = 5000  # partitions shown per group; a count says how many more


def side_by_side(table: PartitionedTable) -> list[dict[str, Any]]:
    """The table's copies on the members of each group of its server, partition by
    partition: one column per member (null `table_id`: it lacks the table), one row per
    partition name in the group's order (then the others'), each member's bound in it
    (null: no such partition there) and whether they all agree."""
    groups = list(ServerGroup.objects.filter(servers=table.server_id).order_by("name"))
    members = _members(groups)
    shown = []
    for group in groups:
        if schema_left_out(table.schema, group.excluded_schema_patterns):
            continue  # the group does not compare this schema
        copies = {
            server_id: pk
            for pk, server_id in PartitionedTable.objects.live()
            .filter(
                server_id__in=members[group.pk],
                schema__iexact=table.schema,
                name__iexact=table.name,
            )
            .values_list("id", "server_id")
        }
        layouts = stored_layouts(list(copies.values()))
        digests = {pk: layout_digest(layout) for pk, layout in layouts.items()}
        reference = group.reference_id if group.reference_id in copies else None
        holders = [
            Holder(server_id, digests[pk], len(layouts[pk].partitions))
            for server_id, pk in copies.items()
        ]
        target = group_digest(holders, reference)
        names = dict(Server.objects.filter(pk__in=members[group.pk]).values_list("pk", "name"))
        columns = []
        for server_id in members[group.pk]:
            pk = copies.get(server_id)
            layout = layouts.get(pk) if pk else None
            columns.append(
                {
                    "server_id": server_id,
                    "server": names.get(server_id, ""),
                    "table_id": pk,
                    "reference": server_id == group.reference_id,
                    "method": layout.method if layout else None,
                    "expression": layout.expression if layout else None,
                    "in_line": pk is not None and digests[pk] == target,
                }
            )
        shown.append(
            {"group": group.name, "group_id": group.pk, "kind": group.kind, "columns": columns}
            | _rows(columns, layouts, digests, target)
        )
    return shown


def _rows(columns, layouts: dict[int, Layout], digests: dict[int, str], target) -> dict:
    lead = [pk for pk in layouts if digests[pk] == target][:1]
    names = side_by_side_names(
        [layouts[pk] for pk in lead + [pk for pk in layouts if pk not in lead]]
    )
    order = {name.lower(): name for name in names}
    bounds = {
        pk: {name.lower(): bound for name, bound in layout.partitions}
        for pk, layout in layouts.items()
    }
    rows = []
    for key, name in list(order.items())[:SIDE_BY_SIDE_ROWS]:
        cells = [
            bounds[c["table_id"]].get(key)
            if c["table_id"] and key in bounds[c["table_id"]]
            else None
            for c in columns
        ]
        present = [c["table_id"] is not None and key in bounds[c["table_id"]] for c in columns]
        same = all(present) and len({(b or "").replace(" ", "") for b in cells}) <= 1
        # `cells`: the same, as a page walks it, one per member.
        walked = [
            {
                "bound": b,
                "shown": written_bound(c["expression"], b),
                "present": p,
                "has_table": c["table_id"] is not None,
            }
            for b, p, c in zip(cells, present, columns, strict=True)
        ]
        rows.append(
            {"partition": name, "bounds": cells, "present": present, "same": same, "cells": walked}
        )
    return {"rows": rows, "more_rows": max(len(order) - SIDE_BY_SIDE_ROWS, 0)}
