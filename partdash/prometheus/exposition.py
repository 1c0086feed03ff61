"""/metrics: what partdash knows, in Prometheus's text exposition format.

Every figure is read from what the API serves (the servers' latest poll fields, the
latest snapshot's stored pressure, each table's stored totals and health, the alerts),
so a Grafana panel and the pages never disagree. A scrape runs a fixed number of queries
whatever the number of tables.

The series budget (docs/metrics.md): server-level and fleet-level series always;
per-table series only for the tables with a finding (`score` above 0), those opted in
one by one (`PartitionedTable.export_partitions`, which also shows their partitions) and
every table of a server opted in (`Server.export_tables`). A fleet of quiet tables thus
costs nothing per table, and a 64,000-partition server stays at one series per table
per figure even opted in. `?server=NAME` narrows a scrape to those servers' series, for
federation and for sharding the fleet over several Prometheus servers.
"""

from collections import Counter
from collections.abc import Iterator

import redis
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from partdash.alerts.listing import alerts_as_shown
from partdash.alerts.models import Alert, Severity, rule_names
from partdash.health.kinds import Figure, registered
from partdash.health.shapes import stored_health, stored_pressure
from partdash.lib import liveness
from partdash.lib.cyclic_gc import cyclic_gc_paused
from partdash.lib.shared_redis import redis_client
from partdash.metrics.models import (
    HealthValues,
    Partition,
    PartitionedTable,
    ServerSnapshot,
    current_rates,
)
from partdash.prometheus.text import Family, label_text, render
from partdash.servers.choices import ServerStatus
from partdash.servers.models import Server

SERVER = ["server"]
TABLE = ["server", "schema", "table"]
PARTITION = [*TABLE, "partition", "subpartition"]
ALERT = ["server", "rule", "severity"]
FINDING = ["kind", "severity"]
# A poll that ended with warnings (a source it could not read) still succeeded.
POLLED = {ServerStatus.OK, ServerStatus.DEGRADED}


def gauge(name: str, documentation: str, labels: list[str]) -> Family:
    return Family(f"partdash_{name}", documentation, labels)


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def add(family: Family, labels: list[str], value) -> None:
    """A sample, left out where the figure is unknown (null): absent, not zero."""
    if value is not None:
        family.add_metric(labels, float(value))


def worst_findings(findings: list | None) -> dict[str, str]:
    """Each kind's worst severity among stored findings: the one its alert fires with
    (`partdash.alerts.conditions`)."""
    worst: dict[str, str] = {}
    for finding in findings or []:
        kind, severity = finding.get("kind"), finding.get("severity") or Severity.WARNING
        if worst.get(kind) != Severity.CRITICAL:
            worst[kind] = severity
    return worst


def add_findings(family: Family, labels: list[str], findings: list | None) -> None:
    """One sample of 1 per kind of finding held, labelled with its severity."""
    for kind, severity in worst_findings(findings).items():
        add(family, [*labels, kind, severity], 1)


# -- servers ---------------------------------------------------------------------------


def latest_snapshots(server_ids: list[int] | None) -> dict[int, ServerSnapshot]:
    """Each server's latest snapshot (its time, duration and stored pressure), in one
    query (of `server_ids`, else of every server)."""
    snapshots = ServerSnapshot.objects.latest_of(server_ids).only(
        "id", "server_id", "taken_at", "seconds", "pressure"
    )
    return {snapshot.server_id: snapshot for snapshot in snapshots}


def server_families(servers: list[Server], snapshots: dict) -> Iterator[Family]:
    """`snapshots`: each server's latest (`latest_snapshots`)."""
    now = timezone.now()
    up = gauge("up", "1 when the server's last poll succeeded, else 0.", SERVER)
    info = gauge(
        "server_info", "The server's flavor and version (always 1).", [*SERVER, "flavor", "version"]
    )
    duration = gauge("poll_duration_seconds", "How long the latest stored poll took.", SERVER)
    age = gauge("last_poll_age_seconds", "Seconds since a poll was last tried.", SERVER)
    interval = gauge("server_poll_interval_seconds", "How often the server is polled.", SERVER)
    success = gauge(
        "last_success_timestamp_seconds", "When a poll last succeeded (Unix time).", SERVER
    )
    # The dead man's switch's name for the same time (docker/prometheus/partdash-rules.yml).
    poll_success = gauge(
        "last_poll_success_timestamp_seconds",
        "When a poll of the server last succeeded (Unix time); absent: never.",
        SERVER,
    )
    tables = gauge("server_partitioned_tables", "Partitioned tables the server lists.", SERVER)
    partitions = gauge("server_partitions", "Partitions on the server.", SERVER)
    limit = gauge("server_limit", "A setting that partitions count against.", [*SERVER, "limit"])
    ratio = gauge(
        "server_limit_ratio", "Partitions on the server over the setting.", [*SERVER, "limit"]
    )
    working_set = gauge(
        "server_working_set_ratio",
        "Data and index bytes of the partitions written in the window over the buffer pool.",
        SERVER,
    )
    forecast = gauge(
        "server_working_set_forecast_seconds",
        "Seconds until the written working set, on its trend, outgrows the buffer pool "
        "(absent: not growing, or too little history).",
        SERVER,
    )
    growth = gauge(
        "server_working_set_growth_bytes_per_second",
        "The written working set's trend.",
        SERVER,
    )
    drifting = gauge(
        "server_drift_tables",
        "Tables laid out unlike the rest of the server's group (absent: in no group).",
        SERVER,
    )
    missing = gauge(
        "server_missing_group_tables",
        "Tables of the server's groups it lacks (absent: in no group).",
        SERVER,
    )
    findings = gauge(
        "server_finding",
        "1 for each kind of finding the server's latest poll holds (pressure; drift: "
        "tables of its groups it lacks), labelled with its severity; absent: none.",
        [*SERVER, *FINDING],
    )
    for server in servers:
        name = [server.name]
        add(up, name, server.status in POLLED)
        add(info, [server.name, server.flavor, server.version], 1)
        if server.last_poll_at:
            add(age, name, (now - server.last_poll_at).total_seconds())
        if server.last_success_at:
            add(success, name, server.last_success_at.timestamp())
            add(poll_success, name, server.last_success_at.timestamp())
        add(tables, name, server.partitioned_tables)
        add(partitions, name, server.partitions)
        add(interval, name, server.poll_interval)
        snapshot = snapshots.get(server.pk)
        if snapshot is None:
            continue
        add(duration, name, snapshot.seconds)
        pressure = stored_pressure(snapshot.pressure)
        add_findings(findings, name, list(pressure.get("findings") or []))
        for setting in pressure.get("limits") or []:
            add(limit, [server.name, setting["setting"]], setting.get("limit"))
            add(ratio, [server.name, setting["setting"]], setting.get("ratio"))
        written = pressure.get("working_set") or {}
        add(working_set, name, written.get("ratio"))
        add(forecast, name, _times(written.get("forecast_days_left"), 86400))
        add(growth, name, _times(written.get("growth_bytes_per_day"), 1 / 86400))
        drift = pressure.get("drift")
        if drift and drift.get("groups"):
            add(drifting, name, len(drift.get("tables") or []))
            add(missing, name, len(drift.get("missing") or []))
    yield from (up, info, duration, age, success, poll_success, interval, tables, partitions)
    yield from (limit, ratio, working_set, forecast, growth, drifting, missing, findings)


# -- tables ----------------------------------------------------------------------------

# Per table: (name, help, the figure from a table's API row); each finding kind's own
# families (`FindingKind.figures`, `partdash.health.kinds`) come between these and the score.
TABLE_FIGURES = (
    ("table_partitions", "Partitions (and subpartitions) of the table.", "partition_count"),
    ("table_rows", "Rows (an estimate from InnoDB's statistics).", "rows"),
    ("table_data_bytes", "Data bytes over the table's partitions.", "data_bytes"),
    ("table_index_bytes", "Index bytes over the table's partitions.", "index_bytes"),
    ("table_file_bytes", "Tablespace file bytes over the table's partitions.", "file_bytes"),
)
SCORE_FIGURE = (
    "table_score",
    "The table's health score (0 is healthy; the worst finding's).",
    "score",
)


def kind_figures() -> list[Figure]:
    """The registered finding kinds' families, in the kinds' order."""
    return [figure for kind in registered() for figure in kind.figures]


def table_figure_names() -> list[tuple[str, str, str]]:
    """Every per-table family: (name, help, its key in `table_figures`)."""
    kinds = [(figure.name, figure.help, figure.name) for figure in kind_figures()]
    return [*TABLE_FIGURES, *kinds, SCORE_FIGURE]


TABLE_COLUMNS = (
    "id",
    "server_id",
    "server__name",
    "schema",
    "name",
    "partition_count",
    "total_rows",
    "total_data_bytes",
    "total_index_bytes",
    "total_file_bytes",
    "health",
    "score",
    "export_partitions",
)


def table_figures(values: dict, figures: list[Figure] | None = None) -> dict:
    """A stored table's figures: its totals, each finding kind's figures (`figures`, by
    default `kind_figures()`) from its stored health, its score and its hot partitions
    (for the partitions' `hot`)."""
    stored = stored_health(values["health"])
    return {
        "partition_count": values["partition_count"],
        "rows": values["total_rows"],
        "data_bytes": values["total_data_bytes"],
        "index_bytes": values["total_index_bytes"],
        "file_bytes": values["total_file_bytes"],
        **{figure.name: figure.value(stored) for figure in figures or kind_figures()},
        "score": values["score"],
        # As `health_fields` gives them, without building every finding's fix (at 2,400
        # tables of a simulated fleet, 60% of a scrape's time went there).
        "hotspots": stored.get("hotspots") or [],
        "findings": list(stored.get("findings") or []),
    }


def table_families(tables: list[dict]) -> Iterator[Family]:
    families = [(gauge(name, text, TABLE), key) for name, text, key in table_figure_names()]
    findings = gauge(
        "table_finding",
        "1 for each kind of finding the table's latest analysis holds, labelled with its "
        "severity (the worst of the kind's); absent: none.",
        [*TABLE, *FINDING],
    )
    for values in tables:
        labels = [values["server__name"], values["schema"], values["name"]]
        text = label_text(TABLE, labels)  # the same for each family: written once
        figures = values["figures"]
        for family, key in families:
            if (value := figures[key]) is not None:
                family.add_labelled(text, float(value))
        add_findings(findings, labels, figures["findings"])
    yield from (family for family, _ in families)
    yield findings


# -- partitions of the tables opted in -------------------------------------------------

PARTITION_FIGURES = (
    ("partition_rows", "Rows (an estimate from InnoDB's statistics).", "rows"),
    ("partition_data_bytes", "Data bytes.", "data_bytes"),
    ("partition_index_bytes", "Index bytes.", "index_bytes"),
    ("partition_file_bytes", "Tablespace file bytes.", "file_bytes"),
    (
        "partition_rows_changed_per_second",
        "Rows the application inserted, updated or deleted per second between the last two "
        "polls (logical: MODIFIED_COUNTER).",
        "rows_changed_per_s",
    ),
    (
        "partition_disk_write_bytes_per_second",
        "Bytes the server wrote to the partition's file per second between the last two "
        "polls (physical: page flushes, minutes after the writes).",
        "write_bytes_per_s",
    ),
    (
        "partition_disk_read_bytes_per_second",
        "Bytes the server read from the partition's file per second between the last two "
        "polls (physical: buffer-pool misses).",
        "read_bytes_per_s",
    ),
)


def partition_families(tables: list[dict], snapshots: dict) -> Iterator[Family]:
    """The partitions of the tables opted in, their rates as of their servers' latest
    polls (`snapshots`, read before them)."""
    families = [(gauge(name, text, PARTITION), key) for name, text, key in PARTITION_FIGURES]
    hot = gauge("partition_hot", "1 when the partition is flagged hot, else 0.", PARTITION)
    opted = {values["id"]: values for values in tables if values["export_partitions"]}
    polled_at = {  # by table: its server's latest poll's time
        table_id: latest.taken_at if (latest := snapshots.get(values["server_id"])) else None
        for table_id, values in opted.items()
    }
    partitions = (
        Partition.objects.live()
        .filter(table_id__in=list(opted))
        .order_by("table_id", *Partition._meta.ordering)
        .values(
            "table_id",
            "name",
            "subpartition",
            "changed_at",
            *(key for _, _, key in PARTITION_FIGURES),
        )
        if opted
        else []
    )
    for partition in partitions:
        table = opted[partition["table_id"]]
        current_rates(partition, polled_at[partition["table_id"]])
        labels = [
            table["server__name"],
            table["schema"],
            table["name"],
            partition["name"],
            partition["subpartition"],
        ]
        for family, key in families:
            add(family, labels, partition[key])
        label = partition["name"] + (
            f"#{partition['subpartition']}" if partition["subpartition"] else ""
        )
        add(hot, labels, label in table["figures"]["hotspots"])
    yield from (family for family, _ in families)
    yield hot


# -- alerts ----------------------------------------------------------------------------


def alert_families(servers: list[Server], narrowed: bool) -> Iterator[Family]:
    """Firing alerts per server, rule and severity (the API's `state=firing`), every
    combination shown (0 where none fire), so a sum never comes out empty; and how many
    of them a silence holds, as Prometheus's own ALERTS count silenced ones too."""
    firing = gauge("alerts_firing", "Firing alerts (state firing), silenced or not.", ALERT)
    silenced = gauge("alerts_silenced", "Those of the firing alerts a silence holds.", ALERT)
    alerts = alerts_as_shown().filter(state=Alert.State.FIRING)
    if narrowed:
        alerts = alerts.filter(server__in=servers)
    fired: Counter[tuple[str, str, str]] = Counter()
    held: Counter[tuple[str, str, str]] = Counter()
    for *key, is_silenced in alerts.values_list("server__name", "rule", "severity", "is_silenced"):
        fired[tuple(key)] += 1
        held[tuple(key)] += is_silenced
    # 32 combinations a server: at 1,000 servers the most samples of a scrape, so each
    # combination's label text is written once for every server.
    names = [server.name for server in servers]
    for rule in rule_names():
        for severity in Severity.values:
            labels = ["", rule, severity]
            firing.add_metrics(labels, "server", [(n, fired[n, rule, severity]) for n in names])
            silenced.add_metrics(labels, "server", [(n, held[n, rule, severity]) for n in names])
    yield from (firing, silenced)


# -- workers ---------------------------------------------------------------------------


def worker_families() -> Iterator[Family]:
    """When each Celery worker last finished a task, from the records workers keep in
    Redis (`partdash.lib.liveness`); none while Redis does not answer, so the rule on it
    (`absent` too) tells."""
    last_task = gauge(
        "worker_last_task_timestamp_seconds",
        "When the worker last finished a task (Unix time).",
        ["worker"],
    )
    try:
        activity = liveness.every_activity(redis_client(timeout=2))
    except redis.exceptions.RedisError:
        activity = {}
    for node, seen in sorted(activity.items()):
        add(last_task, [node], seen.finished)
    yield last_task


# -- the fleet -------------------------------------------------------------------------


def fleet_families(servers: list[Server], exported: int) -> Iterator[Family]:
    """A few series about the whole fleet, in the whole scrape only: how many servers in
    each status, the tables and partitions they hold, and how many tables this scrape
    shows one by one (the rest have no finding and are not opted in)."""
    statuses = gauge(
        "fleet_servers", "Servers registered, by the status of their last poll.", ["status"]
    )
    by_status = Counter(server.status for server in servers)
    for status in ServerStatus.values:
        add(statuses, [status], by_status[status])
    tables = gauge("fleet_partitioned_tables", "Partitioned tables over every server.", [])
    add(tables, [], sum(server.partitioned_tables or 0 for server in servers))
    partitions = gauge("fleet_partitions", "Partitions over every server.", [])
    add(partitions, [], sum(server.partitions or 0 for server in servers))
    shown = gauge(
        "metrics_exported_tables",
        "Tables this scrape shows per-table series for: with a finding or opted in.",
        [],
    )
    add(shown, [], exported)
    yield from (statuses, tables, partitions, shown)


# -- the scrape ------------------------------------------------------------------------

EXPORTED = Q(score__gt=0) | Q(export_partitions=True) | Q(server__export_tables=True)


def health_paths() -> list[tuple[str, ...]] | None:
    """The places in a table's stored health a scrape reads: the finding kinds' figures'
    (`Figure.paths`) and the hot partitions; None where a figure reads the whole health."""
    paths = {("hotspots",)}
    for figure in kind_figures():
        if figure.paths is None:
            return None
        paths.update(figure.paths)
    # A path within one read whole comes with it.
    return sorted(p for p in paths if not any(p[: len(q)] == q != p for q in paths))


def health_read(values: list, paths: list[tuple[str, ...]]) -> dict:
    """A table's health holding what `HealthValues` read of it (`values`): the values at
    `paths` (an absent or null one left out) and its findings' kinds and severities."""
    *found, findings = values
    health: dict = {"findings": [{"kind": kind, "severity": level} for kind, level in findings]}
    for path, value in zip(paths, found, strict=True):
        if value is None:
            continue
        place = health
        for key in path[:-1]:
            place = place.setdefault(key, {})
        place[path[-1]] = value
    return health


def exported_tables(servers: list[Server] | None) -> list[dict]:
    """The tables within the budget (with a finding, or opted in), with their figures;
    of `servers` only, when given. On PostgreSQL only what the figures read of each
    table's health is read (`HealthValues`); elsewhere its whole health."""
    tables = PartitionedTable.objects.live().filter(EXPORTED)
    if servers is not None:
        tables = tables.filter(server__in=servers)
    tables = tables.order_by("server__name", "schema", "name")
    paths = health_paths() if connection.vendor == "postgresql" else None
    if paths is None:
        rows = list(tables.values(*TABLE_COLUMNS))
    else:
        columns = [column for column in TABLE_COLUMNS if column != "health"]
        rows = list(tables.annotate(read=HealthValues("health", paths)).values(*columns, "read"))
    figures = kind_figures()
    for values in rows:
        if paths is not None:
            values["health"] = health_read(values.pop("read"), paths)
        values["figures"] = table_figures(values, figures)
    return rows


def scrape_families(names: list[str] | None = None) -> Iterator[Family]:
    """Every family of a scrape: the whole fleet's, or only the servers named."""
    servers = Server.objects.order_by("name")
    if names is not None:
        servers = servers.filter(name__in=names)
    listed = list(servers)
    tables = exported_tables(None if names is None else listed)
    # (Read before the partitions, whose rates they date: `current_rates`.)
    snapshots = latest_snapshots(None if names is None else [server.pk for server in listed])
    yield from server_families(listed, snapshots)
    yield from table_families(tables)
    yield from partition_families(tables, snapshots)
    yield from alert_families(listed, narrowed=names is not None)
    if names is None:
        yield from fleet_families(listed, len(tables))
        yield from worker_families()


def exposition(names: list[str] | None = None) -> bytes:
    """The scrape in text format 0.0.4: the whole fleet, or the servers named."""
    with cyclic_gc_paused():
        return render(scrape_families(names))
