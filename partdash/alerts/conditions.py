"""What each rule judges, read from the stored rows the pages show: a table's stored
health and findings (`PartitionedTable.health`, written by the analysis), its stored
totals, its partitions' stored sizes and samples, the snapshot's server pressure, the
server's poll status. Nothing here computes a health figure of its own, apart from a
table's growth over a day, which only the alerts use.

Each function returns `Condition`s (`partdash.health.alerting`) by `Key`.
"""

from datetime import datetime, timedelta
from typing import Any

import environ
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import BigIntegerField, ExpressionWrapper, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from partdash.alerts.emails import binary_size
from partdash.alerts.models import RuleName
from partdash.health.alerting import Condition, Key
from partdash.health.finding_kinds import finding_condition
from partdash.health.kinds import Judge, Setting, registered
from partdash.health.kinds import kind as registered_kind
from partdash.health.pressure import WARN_RATIO
from partdash.health.shapes import (
    FindingShape,
    FixShape,
    stored_health,
    stored_pressure,
)
from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot
from partdash.servers.choices import ServerStatus

DAY = timedelta(days=1)

ADVICE = {
    RuleName.PARTITION_SIZE: "Split the partition (REORGANIZE PARTITION into narrower "
    "ranges, or more HASH/KEY partitions), or archive or drop the rows it no longer needs.",
    RuleName.TABLE_SIZE: "Drop or archive old partitions (DROP PARTITION, or EXCHANGE "
    "PARTITION into an archive table), or raise this table's threshold.",
    RuleName.TABLE_GROWTH: "Check what writes to the table, and that retention drops old "
    "partitions as fast as new ones fill.",
    RuleName.UNREACHABLE: "Check that the server is up, reachable from partdash, and "
    "accepts the monitoring account (Test connection on the server's page).",
    RuleName.STALE_POLLS: "Check that partdash's Celery worker and beat are running "
    "(`make up` starts both) and the server's last poll on its page.",
    RuleName.WORKING_SET_FORECAST: "Before the date: raise innodb_buffer_pool_size (it is "
    "dynamic), or write fewer partitions at once (time RANGE partitions rather than HASH "
    "spreading inserts everywhere), or archive what the application still updates.",
}


def advice(rule: str) -> FixShape:
    return {"advice": ADVICE[rule], "sql": None, "safety": None, "rows": None, "bytes": None}


# -- a table's stored health -----------------------------------------------------------


def judging_settings() -> tuple[str, ...]:
    """The settings the conditions read (beside the rules' defaults, `rules.catalogue`):
    each registered kind's `AlertSpec.reads`. Part of the rules version
    (`service.rules_version`), so a change re-evaluates every table."""
    return tuple(
        sorted({name for kind in registered() if kind.alert for name in kind.alert.read_names})
    )


def _declared(name: str) -> Setting | None:
    for kind in registered():
        for read in kind.alert.reads if kind.alert else ():
            if isinstance(read, Setting) and read.name == name:
                return read
    return None


def setting_value(name: str) -> Any:
    """A setting a judge reads: `partdash.settings`' (or a test's override), else the
    environment's under the `Setting` a kind declares, cast to its default's type."""
    if hasattr(settings, name):
        return getattr(settings, name)
    setting = _declared(name)
    if setting is None:
        raise ImproperlyConfigured(f"{name}: no such setting, and no finding kind declares it")
    default = setting.default
    return environ.Env().get_value(setting.name, cast=type(default), default=default)


def finding_rules() -> dict[str, Judge]:
    """The judge of each registered table finding kind's rule, by rule name."""
    return {
        kind.name: kind.alert.judge
        for kind in registered()
        if kind.alert is not None and kind.alert.judge is not None
    }


def _settings_read(kind: str) -> dict[str, Any]:
    """The settings a kind's judge reads (`AlertSpec.reads`), by name."""
    declared = registered_kind(kind)
    reads = declared.alert.read_names if declared and declared.alert else ()
    return {name: setting_value(name) for name in reads}


def _size(data_bytes: int | None, index_bytes: int | None) -> int | None:
    if data_bytes is None and index_bytes is None:
        return None
    return (data_bytes or 0) + (index_bytes or 0)


def table_conditions(table: PartitionedTable) -> dict[Key, Condition]:
    """The finding rules and `table_size` of one table, from its stored health."""
    health = stored_health(table.health)
    findings: dict[str, FindingShape] = {}
    for finding in health.get("findings") or []:  # stored worst first
        findings.setdefault(finding.get("kind"), finding)
    conditions = {
        Key(rule, table.schema, table.name): judge(health, findings.get(rule), _settings_read(rule))
        for rule, judge in finding_rules().items()
    }
    size = _size(table.total_data_bytes, table.total_index_bytes)
    conditions[Key(RuleName.TABLE_SIZE, table.schema, table.name)] = Condition(
        size,
        message=f"{binary_size(size or 0)} of data and indexes",
        fix=advice(RuleName.TABLE_SIZE),
    )
    return conditions


# -- the server's own ------------------------------------------------------------------


def pressure_condition(snapshot: ServerSnapshot) -> Condition:
    """The worst of the server's limits and its written working set (the snapshot's
    stored pressure); holds while a pressure finding exists."""
    pressure = stored_pressure(snapshot.pressure)
    ratios = [limit.get("ratio") for limit in pressure.get("limits") or []]
    ratios.append((pressure.get("working_set") or {}).get("ratio"))
    worst = max((r for r in ratios if r is not None), default=None)
    found = [f for f in pressure.get("findings") or [] if f.get("kind") == "pressure"]
    critical = any(f.get("severity") == "critical" for f in found)
    return Condition(
        worst,
        limit=WARN_RATIO,
        holds=bool(found),
        severity="critical" if critical else "warning",
        message="; ".join(f.get("message", "") for f in found) or "no pressure",
        fix=next((f.get("fix") for f in found if f.get("fix")), None),
    )


def drift_condition(snapshot: ServerSnapshot) -> Condition:
    """Tables of the server's groups it lacks (the stored pressure's drift finding);
    tables laid out unlike the group's are each their table's `drift` condition."""
    found = [
        f
        for f in stored_pressure(snapshot.pressure).get("findings") or []
        if f.get("kind") == "drift"
    ]
    missing = len((stored_pressure(snapshot.pressure).get("drift") or {}).get("missing") or [])
    return finding_condition(
        found[0] if found else None, missing, 1, "no table of its groups missing"
    )


def working_set_forecast_condition(snapshot: ServerSnapshot) -> Condition:
    """Days until the written working set, on its trend, crosses the limit (the stored
    pressure's forecast); unknown (clear) while it is not growing or has too little
    history."""
    working = stored_pressure(snapshot.pressure).get("working_set") or {}
    days = working.get("forecast_days_left")
    if days is None:
        reason = working.get("forecast_reason") or "no forecast"
        return Condition(None, message=f"working set forecast: {reason}")
    growth = working.get("growth_bytes_per_day") or 0
    message = (
        f"the written working set grows {growth / 2**20:,.0f} MiB a day: it outgrows the "
        f"buffer pool around {(working.get('forecast_date') or '')[:10]} ({days:.1f} days)"
    )
    return Condition(days, message=message, fix=advice(RuleName.WORKING_SET_FORECAST))


def unreachable_condition(name: str, failed: bool, last_error: str = "") -> Condition:
    message = f"{name} cannot be polled: {last_error}" if failed else f"{name} polled again"
    return Condition(
        1.0 if failed else 0.0, limit=1, message=message, fix=advice(RuleName.UNREACHABLE)
    )


def stale_polls_condition(server, now: datetime) -> Condition:
    """Poll intervals since the last successful poll (since registration if none). A
    server whose polls are tried and fail is `unreachable`'s to report: 0 here."""
    since = server.last_success_at or server.created_at
    interval = max(server.poll_interval or 1, 1)
    failing = server.status == ServerStatus.UNREACHABLE
    intervals = 0.0 if failing else max((now - since).total_seconds(), 0.0) / interval
    when = "never" if server.last_success_at is None else f"not since {since:%Y-%m-%d %H:%M} UTC"
    return Condition(
        intervals,
        message=f"no successful poll of {server.name}: {when} ({intervals:.1f} intervals)",
        fix=advice(RuleName.STALE_POLLS),
    )


# -- partitions ------------------------------------------------------------------------


def partition_label(name: str, subpartition: str) -> str:
    return f"{name}#{subpartition}" if subpartition else name


def partition_condition(size: int) -> Condition:
    return Condition(
        size,
        message=f"{binary_size(size)} of data and indexes",
        fix=advice(RuleName.PARTITION_SIZE),
    )


def partition_size_conditions(
    server, floor: float
) -> tuple[dict[Key, Condition], dict[tuple[str, str], int]]:
    """The server's live partitions holding at least `floor` bytes of data and indexes,
    in one query filtered by the database (never a walk over every partition); and the
    ids of their tables by (schema, name)."""
    # Typed as a BigIntegerField: Django types the sum of two BigIntegerFields as an
    # IntegerField, and on PostgreSQL answers a floor past its range (2 GiB) with no rows
    # at all, without a query, so no partition could ever fire.
    size = ExpressionWrapper(
        Coalesce(F("data_bytes"), Value(0)) + Coalesce(F("index_bytes"), Value(0)),
        output_field=BigIntegerField(),
    )
    rows = (
        Partition.objects.live()
        .filter(table__server=server, table__dropped_at=None)
        .annotate(size=size)
        .filter(size__gte=floor)
        .values_list("table_id", "table__schema", "table__name", "name", "subpartition", "size")
    )
    conditions, table_ids = {}, {}
    for table_id, schema, table, name, sub, size in rows:
        key = Key(RuleName.PARTITION_SIZE, schema, table, partition_label(name, sub))
        conditions[key] = partition_condition(size)
        table_ids[(schema, table)] = table_id
    return conditions, table_ids


def partition_sizes(table_ids: set[int]) -> dict[tuple[int, str], int | None]:
    """(table id, partition label) -> data + index bytes of the live partitions of a few
    tables (those with an open partition alert the query above no longer lists)."""
    rows = (
        Partition.objects.live()
        .filter(table_id__in=table_ids)
        .values_list("table_id", "name", "subpartition", "data_bytes", "index_bytes")
    )
    return {
        (table_id, partition_label(name, sub)): _size(data, index)
        for table_id, name, sub, data, index in rows
    }


# -- growth over a day -----------------------------------------------------------------


def _then(sample_field: str, reference_id: int) -> Subquery:
    """A partition's last sampled `sample_field` at or before the reference poll. Snapshot
    ids grow with time for a server (one poll at a time), so the (partition, snapshot)
    index finds it."""
    samples = PartitionSample.objects.filter(
        partition=OuterRef("pk"),
        snapshot_id__lte=reference_id,
        **{f"{sample_field}__isnull": False},
    ).order_by("-snapshot_id")
    return Subquery(samples.values(sample_field)[:1])


def growth_per_day(server, tables: list[PartitionedTable], now: datetime) -> dict[int, float]:
    """Data plus index bytes each table gained since the server's last poll at least a
    day before `now`, per day. Rebuilt from the stored samples: a partition unchanged
    since that poll held then what it holds now, so only the partitions changed or
    dropped since are read (with their last sample before it). Tables first seen after
    that poll, and servers with less than a day of history, have no growth yet."""
    reference = (
        ServerSnapshot.objects.filter(server=server, taken_at__lte=now - DAY)
        .order_by("-taken_at")
        .values_list("id", "taken_at")
        .first()
    )
    if reference is None:
        return {}
    reference_id, reference_at = reference
    growth = {t.pk: 0.0 for t in tables if t.first_seen_at <= reference_at and not t.dropped_at}
    if not growth:
        return {}
    rows = (
        Partition.objects.filter(table_id__in=list(growth))
        .filter(Q(changed_at__gt=reference_at) | Q(dropped_at__gt=reference_at))
        .annotate(
            data_then=_then("data_bytes", reference_id),
            index_then=_then("index_bytes", reference_id),
        )
        .values_list(
            "table_id",
            "dropped_at",
            "changed_at",
            "data_bytes",
            "index_bytes",
            "data_then",
            "index_then",
        )
    )
    for table_id, dropped_at, changed_at, data, index, data_then, index_then in rows:
        current = _size(data, index) or 0
        unchanged = changed_at is None or changed_at <= reference_at
        then = current if unchanged else (_size(data_then, index_then) or 0)
        growth[table_id] += (0 if dropped_at else current) - then
    days = (now - reference_at).total_seconds() / DAY.total_seconds()
    return {table_id: gained / days for table_id, gained in growth.items()}


def growth_condition(bytes_per_day: float | None) -> Condition:
    if bytes_per_day is None:
        return Condition(None, message="less than a day of history")
    return Condition(
        bytes_per_day,
        message=f"grew {binary_size(bytes_per_day)} in the last day",
        fix=advice(RuleName.TABLE_GROWTH),
    )
