"""API representations. Passwords are write-only."""

import ipaddress
import re
from bisect import bisect_right, insort
from copy import copy
from datetime import datetime, timedelta
from types import SimpleNamespace

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import F, QuerySet, Sum, Window
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import RowNumber
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from partdash.api.schema import NULLABLE_OBJECT
from partdash.health.bounds import bound_to_date, is_catchall
from partdash.health.partitions import PartitionState
from partdash.health.shapes import stored_pressure
from partdash.health.sizes import estimated_data_free, row_share
from partdash.lib.times import iso
from partdash.metrics.analysis import coverage_of
from partdash.metrics.history import METRICS
from partdash.metrics.models import (
    FindingCount,
    Partition,
    PartitionedTable,
    StatementDigest,
    current_rates,
)
from partdash.metrics.readings import (
    activity_shares,
    health_fields,
    latest_pressures,
    latest_snapshot,
    partition_figures,
    stored_signals,
    table_shares,
    with_fix,
)
from partdash.mysql import figures as figure_registry
from partdash.servers.models import LATEST_POLL_FIELDS, Server

LABEL = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,62}"
HOST_NAME = re.compile(rf"\A{LABEL}(?:\.{LABEL})*\.?\Z")


def validate_host(host: str) -> None:
    """A host name (RFC 1123 labels, `_` tolerated), an IPv4 address or an IPv6 one (in
    brackets or not, with a zone): no spaces, no control characters, nothing a log line
    or a DSN would misread."""
    if ":" in host:
        address = host.removeprefix("[").removesuffix("]").split("%", 1)[0]
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            raise serializers.ValidationError("not an IPv6 address") from None
        if not HOST_NAME.match(host.rpartition("%")[2] if "%" in host else "x"):
            raise serializers.ValidationError("not an IPv6 zone")
    elif not HOST_NAME.match(host):
        raise serializers.ValidationError("a host name or an IP address, without spaces")


# MySQL's own limit on a password is 32 characters (older) to a few hundred; a cap
# keeps a 1 MB password from being encrypted and stored.
PASSWORD_MAX_LENGTH = 1024


WORKING_SET = inline_serializer(
    "WorkingSet",
    {
        "written_bytes": serializers.IntegerField(),
        "pool_bytes": serializers.IntegerField(allow_null=True),
        "ratio": serializers.FloatField(allow_null=True),
        "growth_bytes_per_day": serializers.FloatField(allow_null=True),
        "forecast_date": serializers.DateTimeField(allow_null=True),
        "forecast_days_left": serializers.FloatField(allow_null=True),
        "forecast_earliest": serializers.DateTimeField(allow_null=True),
        "forecast_latest": serializers.DateTimeField(allow_null=True),
        "forecast_limit_bytes": serializers.FloatField(allow_null=True),
        "forecast_reason": serializers.CharField(allow_null=True),
    },
    allow_null=True,
)


def working_set_of(pressure) -> dict | None:
    """The stored pressure's written working set and its forecast, as the API shows it
    (CONTRACT: `working_set: {written_bytes, pool_bytes, ratio, growth_bytes_per_day,
    forecast_date}`, and the forecast's details)."""
    working = stored_pressure(pressure).get("working_set")
    if not working:
        return None
    return {
        "written_bytes": working.get("bytes", 0),
        "pool_bytes": working.get("buffer_pool_bytes"),
        "ratio": working.get("ratio"),
        "growth_bytes_per_day": working.get("growth_bytes_per_day"),
        "forecast_date": working.get("forecast_date"),
        "forecast_days_left": working.get("forecast_days_left"),
        "forecast_earliest": working.get("forecast_earliest"),
        "forecast_latest": working.get("forecast_latest"),
        "forecast_limit_bytes": working.get("forecast_limit_bytes"),
        "forecast_reason": working.get("forecast_reason"),
    }


def fleet_working_sets(servers: list[Server]) -> dict[int, dict | None]:
    """`working_set_of` for each server's latest poll, in one query."""
    written = latest_pressures([s.pk for s in servers], "working_set")
    return {pk: working_set_of({"working_set": working}) for pk, working in written.items()}


class ServerSerializer(serializers.ModelSerializer):
    password = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        max_length=PASSWORD_MAX_LENGTH,
        style={"input_type": "password"},
    )
    host = serializers.CharField(max_length=255, validators=[validate_host])
    tags = serializers.CharField(required=False, allow_blank=True, max_length=500)
    # Only in the answer to a write (absent from reads): e.g. another server at the same
    # host and port.
    warnings = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        source="registration_warnings",
        help_text="Only in answers to POST/PUT/PATCH: what the admin should know.",
    )

    backoff = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="Why the server is polled less often than its interval (its polls keep "
        "failing), or null.",
    )

    not_polled_seconds = serializers.SerializerMethodField(
        help_text="Seconds since the server was last polled, once that is past "
        "PARTDASH_ALERT_STALE_POLL_INTERVALS of its intervals (its polls stopped: a worker "
        "or beat down); null while it is polled on time, or switched off."
    )

    class Meta:
        model = Server
        fields = [
            "id",
            "name",
            "host",
            "port",
            "user",
            "password",
            "tls_mode",
            "ssl_ca",
            "tls_approved_fingerprint",
            "poll_interval",
            "enabled",
            "tags",
            "explain_statements",
            "export_tables",
            *LATEST_POLL_FIELDS,
            "backoff",
            "not_polled_seconds",
            "findings",
            "working_set",
            "warnings",
        ]
        read_only_fields = LATEST_POLL_FIELDS
        optional_in_response = ["warnings"]

    findings = serializers.SerializerMethodField()
    working_set = serializers.SerializerMethodField(
        help_text="As of the latest poll: the partitions written in the window against the "
        "buffer pool, the trend and the date it outgrows it (null where unknown)"
    )

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_not_polled_seconds(self, server: Server) -> float | None:
        seconds = server.not_polled_seconds() if server.pk else None
        return None if seconds is None else round(seconds)

    @extend_schema_field(WORKING_SET)
    def get_working_set(self, server: Server) -> dict | None:
        if not server.pk:
            return None
        known = self.context.get("working_sets")
        if known is not None:
            return known.get(server.pk)
        snapshot = latest_snapshot(server.pk)
        return working_set_of(snapshot.pressure if snapshot else None)

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_findings(self, server: Server) -> list[dict]:
        """The server's worst findings (up to three), worst first."""
        if not server.pk:
            return []
        known = self.context.get("findings")
        if known is not None:  # read for the whole list at once (`fleet_findings`)
            return known.get(server.pk, [])
        tables = worst_findings(PartitionedTable.objects.filter(server=server), 3)
        return ranked(tables + server_findings([server]), 3)

    def validate(self, attrs: dict) -> dict:
        """The model's rules on a copy, the new password included: the stored one is
        never reused for a changed host, port, user or TLS setting."""
        server = copy(self.instance) if self.instance else Server()
        for field, value in attrs.items():
            if field == "password":
                server.set_password(value)
            else:
                setattr(server, field, value)
        try:
            server.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        if "tags" in attrs:
            attrs["tags"] = server.tags
        if "tls_approved_fingerprint" in attrs:
            attrs["tls_approved_fingerprint"] = server.tls_approved_fingerprint
        return attrs

    def _save(self, server: Server, validated: dict) -> Server:
        password = validated.pop("password", None)
        for field, value in validated.items():
            setattr(server, field, value)
        if password is not None:
            server.set_password(password)
        server.save()
        server.registration_warnings = [w for w in [server.same_address_warning()] if w]
        return server

    def create(self, validated_data: dict) -> Server:
        return self._save(Server(), validated_data)

    def update(self, instance: Server, validated_data: dict) -> Server:
        return self._save(instance, validated_data)


# Where a table's finding is, as the findings list names it, and the columns it is read from.
FINDING_WHERE = ("server_id", "server", "table_id", "schema", "table")
FINDING_COLUMNS = ("server_id", "server__name", "pk", "schema", "name")
WORST_TABLES = (F("score").desc(), F("schema"), F("name"))  # a finding's table's rank


def worst_findings(tables, limit: int | None, fixed: bool = True) -> list[dict]:
    """The worst `limit` findings (None: all) among `tables` (a queryset), each with its
    table and server; without their fixes in the contract's shape unless `fixed`
    (`with_fixes` gives them to those kept: a page of the findings ranks many).

    A table's score is the sum of its findings' (each at least 10), so no finding
    outscores its table: tables are read worst first, and only until `limit` findings
    outscore the next table (its findings, and every later table's, rank below them).
    Reading the worst `limit` tables instead missed a table's one finding that
    outscored another's two, when their sum ranked that table higher."""
    worst = (
        tables.live()
        .filter(score__gt=0)
        # What a finding names, no more: only the health's findings are read (a page of
        # the findings reads every table's: 9,315 tables' whole health took 0.45 s).
        .annotate(stored_findings=KeyTransform("findings", "health"))
        .order_by(*WORST_TABLES)
        .values_list("score", "stored_findings", *FINDING_COLUMNS)
    )
    found: list[dict] = []
    scores: list[float] = []  # the findings' scores so far, in order
    # In a transaction: outside one, PostgreSQL's server-side cursor is declared WITH
    # HOLD, which computes every row (9,315 tables' findings) before the first is read.
    with transaction.atomic(using=worst.db):
        for score, findings, *where in worst.iterator(chunk_size=500):
            if limit is not None and len(scores) - bisect_right(scores, score) >= limit:
                break
            named = dict(zip(FINDING_WHERE, where, strict=True))
            for finding in findings or []:
                insort(scores, finding.get("score") or 0)
                found.append({**finding, **named})
    kept = ranked(found, len(found) if limit is None else limit)
    return with_fixes(kept) if fixed else kept


def finding_count(tables) -> int:
    """How many findings `tables` (a queryset) hold, counted by the database."""
    counted = tables.live().filter(score__gt=0).aggregate(n=Sum(FindingCount("health")))
    return counted["n"] or 0


def with_fixes(findings: list[dict]) -> list[dict]:
    """Findings as ranked, each with its fix in the contract's shape (`with_fix`)."""
    return [with_fix(finding) for finding in findings]


def fleet_findings(servers: list[Server], limit: int = 3) -> dict[int, list[dict]]:
    """Each server's worst findings (up to `limit`), as `get_findings` gives them one
    server at a time, read with a few queries for the whole list: 2,000 servers cost
    two queries each before."""
    ids = [server.pk for server in servers]
    # Each server's worst `limit` tables, picked by the database (50 servers of a
    # simulated fleet: 2,818 tables with a finding, 150 read).
    place = Window(RowNumber(), partition_by=F("server_id"), order_by=WORST_TABLES)
    chosen = list(
        PartitionedTable.objects.live()
        .filter(server_id__in=ids, score__gt=0)
        .annotate(place=place)
        .filter(place__lte=limit)
        .values_list("pk", flat=True)
    )
    found: dict[int, list[dict]] = {}
    tables = PartitionedTable.objects.filter(pk__in=chosen)
    for finding in worst_findings(tables, len(chosen) * 50, fixed=False):
        found.setdefault(finding["server_id"], []).append(finding)
    for finding in server_findings(servers, fixed=False):
        found.setdefault(finding["server_id"], []).append(finding)
    return {pk: with_fixes(ranked(findings, limit)) for pk, findings in found.items()}


def ranked(findings: list[dict], limit: int) -> list[dict]:
    """The worst `limit` findings, worst first."""
    return sorted(findings, key=lambda f: -f["score"])[:limit]


def server_findings(servers: QuerySet[Server] | list[Server], fixed: bool = True) -> list[dict]:
    """Server-wide findings (partitions against the server's limits, the written working
    set against the buffer pool) as of each server's latest poll; no table. Their fixes
    as `worst_findings` gives them."""
    found = []
    if isinstance(servers, QuerySet):  # only what a finding names, the rest unread
        findings = latest_pressures(servers.values("pk"), "findings")
        named = list(servers.values_list("pk", "name"))
    else:
        findings = latest_pressures([server.pk for server in servers], "findings")
        named = [(server.pk, server.name) for server in servers]
    for pk, name in named:
        for finding in findings.get(pk) or []:
            found.append(
                {
                    **(with_fix(finding) if fixed else finding),
                    "server_id": pk,
                    "server": name,
                    "table_id": None,
                    "schema": None,
                    "table": None,
                }
            )
    return found


class TableSerializer(serializers.ModelSerializer):
    """A partitioned table with totals over its live partitions and its health, as the
    analysis stored them after the latest poll (`partdash.metrics.analysis`)."""

    schema = serializers.CharField()
    rows = serializers.IntegerField(source="total_rows", allow_null=True)
    data_bytes = serializers.IntegerField(source="total_data_bytes", allow_null=True)
    index_bytes = serializers.IntegerField(source="total_index_bytes", allow_null=True)
    file_bytes = serializers.IntegerField(source="total_file_bytes", allow_null=True)
    skew = serializers.SerializerMethodField()
    hotspots = serializers.SerializerMethodField()
    activity_source = serializers.SerializerMethodField()
    compression = serializers.SerializerMethodField()
    runway = serializers.SerializerMethodField()
    findings = serializers.SerializerMethodField()
    statistics = serializers.SerializerMethodField()
    retention = serializers.SerializerMethodField()

    class Meta:
        model = PartitionedTable
        fields = [
            "id",
            "schema",
            "name",
            "method",
            "expression",
            "subpartition_method",
            "partition_count",
            "rows",
            "data_bytes",
            "index_bytes",
            "file_bytes",
            "skew",
            "hotspots",
            "activity_source",
            "compression",
            "runway",
            "findings",
            "statistics",
            "retention",
            "score",
            "analysed_at",
            "first_seen_at",
            "definitions_read_at",
        ]

    @extend_schema_field(NULLABLE_OBJECT)
    def get_skew(self, table) -> dict | None:
        return health_fields(table.health)["skew"]

    def get_hotspots(self, table) -> list[str]:
        return health_fields(table.health)["hotspots"]

    @extend_schema_field(
        serializers.ChoiceField(choices=["rows_changed", "disk", "growth"], allow_null=True)
    )
    def get_activity_source(self, table) -> str | None:
        """What write hotspots were judged on: `rows_changed` (the application's writes),
        `disk` (page flushes, standing in where rows changed cannot be read) or `growth`
        (row or size growth); null before any activity is known."""
        return health_fields(table.health)["activity_source"]

    @extend_schema_field(NULLABLE_OBJECT)
    def get_compression(self, table) -> dict | None:
        """null when not compressed, else `{kind, ratio, failure_rate, nominal, ratio_label,
        achieved_ratio, achieved_label, does_not_compress, compress_ops, splits, file_bytes,
        allocated_bytes, saved_ratio, ...}`. For ROW_FORMAT=COMPRESSED `ratio` is nominal
        (16 KiB / KEY_BLOCK_SIZE, `nominal: true`); what is measured: `failure_rate`,
        `splits` (page splits failed compressions imply), `file_bytes`, and
        `achieved_ratio` (the statistics' pages at innodb_page_size over the files' bytes;
        null, with `achieved_label` saying why, where compressions fail). For page
        compression `ratio` is measured: file over allocated bytes (`saved_ratio` = 1 -
        allocated / file), and is also `achieved_ratio`."""
        return health_fields(table.health)["compression"]

    @extend_schema_field(NULLABLE_OBJECT)
    def get_runway(self, table) -> dict | None:
        return health_fields(table.health)["runway"]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_findings(self, table) -> list[dict]:
        return health_fields(table.health)["findings"]

    @extend_schema_field(NULLABLE_OBJECT)
    def get_statistics(self, table) -> dict | None:
        """How old the InnoDB statistics behind `rows`, `data_bytes` and `index_bytes`
        are: `{as_of, partition, newest_at, partitions}`; a total is as old as its
        stalest partition, `partition` (its `as_of`); `newest_at` the freshest. null
        before the table's first analysis with statistics."""
        return health_fields(table.health)["statistics"]

    @extend_schema_field(NULLABLE_OBJECT)
    def get_retention(self, table) -> dict | None:
        """The retention policy matching the table, applied: `{policy_id, pattern,
        keep_days, keep_partitions, overdue_partitions, partitions (the first 20, oldest
        first), rows, bytes, oldest_partition, oldest_age_days, overdue_days,
        overdue_since, reason}`; `reason` says why a policy does not apply (LIST, HASH,
        id bounds with keep_days). null where no policy matches."""
        return health_fields(table.health)["retention"]


_RENAMED = {f"total_{name}": name for name in ("rows", "data_bytes", "index_bytes", "file_bytes")}
# The stored columns a table's API row is built from: its fields by their column names,
# with `health` in place of the fields `health_fields` derives from it.
TABLE_COLUMNS = (
    *(
        {v: k for k, v in _RENAMED.items()}.get(field, field)
        for field in TableSerializer.Meta.fields
        if field not in health_fields(None)
    ),
    "health",
)


def table_rows(tables) -> list[dict]:
    """`TableSerializer`'s representation of many tables, built from one `values()`
    query: a 500-table server's list stays well under the API's latency target."""
    rows = []
    for values in tables.values(*TABLE_COLUMNS):
        health = values.pop("health")
        row = {_RENAMED.get(k, k): v for k, v in values.items()}
        for moment in ("analysed_at", "first_seen_at", "definitions_read_at"):
            row[moment] = iso(row[moment])
        row.update(health_fields(health))
        rows.append({field: row[field] for field in TableSerializer.Meta.fields})
    return rows


class HotspotDetailSerializer(serializers.Serializer):
    """Why a partition is hot (`partdash.health.hotspots.HotPartition`): its share of
    the table's writes or reads over the window, and in how many of the slots with such
    activity it took a hot share."""

    partition = serializers.CharField()
    kind = serializers.ChoiceField(choices=["write", "read"])
    share = serializers.FloatField()
    slots_hot = serializers.IntegerField()
    slots_active = serializers.IntegerField()


class TableDetailSerializer(TableSerializer):
    """One table: its row in the list plus its server and the activity shares."""

    server_id = serializers.IntegerField()
    server_name = serializers.CharField(source="server.name")
    activity = serializers.SerializerMethodField()
    skew_bytes = serializers.SerializerMethodField()
    hotspot_detail = serializers.SerializerMethodField()

    class Meta(TableSerializer.Meta):
        fields = [
            *TableSerializer.Meta.fields,
            "server_id",
            "server_name",
            "activity",
            "skew_bytes",
            "hotspot_detail",
            "create_options",
            "export_partitions",
            "coverage",
        ]
        read_only_fields = ["export_partitions"]

    coverage = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_coverage(self, table) -> list[dict]:
        """What the server's latest poll measured: `{signal, label, measured, why,
        enable, line}` per signal (`write_hotspots`, `rows_changed`, `disk_io`, then
        sources it could not read); where not measured, why and the one change that
        enables it. A table with no finding is healthy only in what is measured."""
        return list(coverage_of(latest_snapshot(table.server_id)))

    @extend_schema_field(NULLABLE_OBJECT)
    def get_activity(self, table) -> dict | None:
        """Where the window's activity comes from, and each partition's share of it."""
        if not table.activity:
            return None
        return {**table.activity, **(table_shares(table) or {"shares": {}, "read_shares": {}})}

    @extend_schema_field(NULLABLE_OBJECT)
    def get_skew_bytes(self, table) -> dict | None:
        return health_fields(table.health)["skew_bytes"]

    @extend_schema_field(HotspotDetailSerializer(many=True))
    def get_hotspot_detail(self, table) -> list[dict]:
        """Why each of `hotspots` is hot: `{partition, kind: write|read, share,
        slots_hot, slots_active}`, one per partition and kind (see "Health analytics")."""
        return health_fields(table.health)["hotspot_detail"]


class TableExportSerializer(serializers.ModelSerializer):
    """What an operator may change on a table: whether /metrics shows its partitions one
    by one (`export_partitions`)."""

    class Meta:
        model = PartitionedTable
        fields = ["export_partitions"]
        extra_kwargs = {"export_partitions": {"required": True}}


def with_api_figures(fields: list[str]) -> list[str]:
    """`fields`, then every partition figure declared for the API and not among them
    (`partdash.mysql.figures`)."""
    return fields + [name for name in figure_registry.in_api() if name not in fields]


class PartitionSerializer(serializers.ModelSerializer):
    """One partition's latest figures; rows and sizes are estimates from InnoDB's
    persistent statistics (`stats_updated_at` says how old)."""

    data_free = serializers.SerializerMethodField()
    row_share = serializers.SerializerMethodField()
    is_hotspot = serializers.SerializerMethodField()
    compression = serializers.SerializerMethodField()
    write_share = serializers.SerializerMethodField()
    read_share = serializers.SerializerMethodField()
    bound_date = serializers.SerializerMethodField()
    catchall = serializers.SerializerMethodField()

    class Meta:
        model = Partition
        fields = with_api_figures(
            [
                "name",
                "subpartition",
                "ordinal",
                "subpartition_ordinal",
                "description",
                "rows",
                "data_bytes",
                "index_bytes",
                "data_free",
                "file_bytes",
                "allocated_bytes",
                "read_bytes_per_s",
                "write_bytes_per_s",
                "rows_changed_per_s",
                "row_share",
                "is_hotspot",
                "compression",
                "write_share",
                "read_share",
                "stats_updated_at",
                "modified_counter",
                "autoinc",
                "read_ops",
                "write_ops",
                "read_bytes",
                "write_bytes",
                "row_format",
                "changed_at",
                "bound_date",
                "catchall",
            ]
        )

    def get_data_free(self, partition: Partition) -> int | None:
        return estimated_data_free(
            partition.file_bytes, partition.data_bytes, partition.index_bytes
        )

    def get_row_share(self, partition: Partition) -> float | None:
        return row_share(partition.rows, self.context.get("table_rows"))

    def _health(self, partition: Partition) -> dict:
        figures = getattr(partition, "_health_figures", None)
        if figures is None:
            table, page_size = self.context["table"], self.context.get("page_size", 16384)
            # As of the table's analysis, so a partition's window is its table's.
            now = table.analysed_at or timezone.now()
            if "shares" not in self.context:
                self.context["shares"] = table_shares(table)
            figures = partition_figures(partition, table, page_size, now, self.context["shares"])
            partition._health_figures = figures
        return figures

    def get_is_hotspot(self, partition: Partition) -> bool:
        return self._health(partition)["is_hotspot"]

    @extend_schema_field(NULLABLE_OBJECT)
    def get_compression(self, partition: Partition) -> dict | None:
        """The partition's own figures, as the table's `compression`."""
        return self._health(partition)["compression"]

    def get_write_share(self, partition: Partition) -> float | None:
        return self._health(partition)["write_share"]

    def get_read_share(self, partition: Partition) -> float | None:
        return self._health(partition)["read_share"]

    def get_bound_date(self, partition: Partition) -> str | None:
        return bound_fields(self.context["table"], partition.description)["bound_date"]

    def get_catchall(self, partition: Partition) -> bool:
        return bound_fields(self.context["table"], partition.description)["catchall"]


def bound_fields(table: PartitionedTable, description: str | None) -> dict:
    """Where a RANGE partition ends, as `partdash.health.bounds` reads it: `bound_date`
    (ISO; UTC where the bound has a time) for time ranges, else null; `catchall` for
    MAXVALUE."""
    bound = (
        bound_to_date(table.expression, description) if table.method.startswith("RANGE") else None
    )
    if isinstance(bound, datetime):
        text = bound.replace(tzinfo=None).isoformat() + "Z"
    else:
        text = bound.isoformat() if bound else None
    return {"bound_date": text, "catchall": is_catchall(description)}


# The stored columns a partition's API row is built from.
PARTITION_COLUMNS = (
    *(f for f in PartitionSerializer.Meta.fields if f not in PartitionSerializer._declared_fields),
    "recent",
    "compress_ops",
    "compress_ops_ok",
    "page_size",
)


def partition_rows(table: PartitionedTable, page_size: int, polled_at) -> list[dict]:
    """`PartitionSerializer`'s representation of a table's live partitions, built from
    one `values()` query (a 128-partition table's list in a few milliseconds); their
    rates as of the server's latest poll (`polled_at`, read before, `current_rates`)."""
    rows = []
    now = table.analysed_at or timezone.now()
    partitions = table.partitions.live().order_by(*Partition._meta.ordering)
    stored = [SimpleNamespace(**values) for values in partitions.values(*PARTITION_COLUMNS)]
    shares = activity_shares(
        [PartitionState.from_object(p).label for p in stored],
        [p.recent for p in stored],
        now,
        stored_signals(table.activity),
    )
    for partition in stored:
        values = current_rates(vars(partition), polled_at)
        row = {
            **values,
            "data_free": estimated_data_free(
                partition.file_bytes, partition.data_bytes, partition.index_bytes
            ),
            "row_share": row_share(partition.rows, table.total_rows),
            **partition_figures(partition, table, page_size, now, shares),
            **bound_fields(table, partition.description),
        }
        row["stats_updated_at"], row["changed_at"] = (
            iso(row["stats_updated_at"]),
            iso(row["changed_at"]),
        )
        rows.append({field: row[field] for field in PartitionSerializer.Meta.fields})
    return rows


HISTORY_DEFAULT = timedelta(hours=24)


class HistoryQuery(serializers.Serializer):
    """`metric` from `since` (default 24 hours ago) to `until` (default now): a window
    inside the polls partdash keeps, `until` after `since`."""

    metric = serializers.ChoiceField(choices=METRICS)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)

    def validate(self, attrs: dict) -> dict:
        until = attrs.get("until")
        now = timezone.now()
        # Nothing older than the longest retention is kept: a window reaching before it
        # only costs (and near year 1, date arithmetic overflows).
        longest = timedelta(days=settings.PARTDASH_RETENTION_DAILY_DAYS)
        for field in ("since", "until"):
            moment = attrs.get(field)
            if moment is not None and not now - longest - HISTORY_DEFAULT <= moment:
                raise serializers.ValidationError(
                    {field: f"at most {longest.days} days ago (the retention)"}
                )
            if moment is not None and moment > now + longest:
                raise serializers.ValidationError({field: "too far in the future"})
        since = attrs.get("since") or (until or now) - HISTORY_DEFAULT
        if until is not None and until <= since:
            raise serializers.ValidationError({"until": "must be after since"})
        if (until or now) - since > longest:
            raise serializers.ValidationError(
                {"since": f"at most {longest.days} days before until (the retention)"}
            )
        return {**attrs, "since": since, "until": until}


class StatementSerializer(serializers.ModelSerializer):
    """One statement digest as it reads one table: its counters as last read (cumulative
    on the server), its digest text (`?` for literals) and how many of the table's
    partitions it reads, parsed from the text or counted by the server's EXPLAIN."""

    class Meta:
        model = StatementDigest
        fields = [
            "digest",
            "text",
            "calls",
            "rows_examined",
            "seconds",
            "partitions_read",
            "partitions_total",
            "prunes",
            "how",
            "why",
            "last_seen",
        ]
        extra_kwargs = {
            "digest": {"help_text": "performance_schema's DIGEST"},
            "text": {"help_text": "the digest text: placeholders, never literals"},
            "partitions_read": {"help_text": "null where placeholders hide how many"},
            "why": {"help_text": "what decided the verdict, in one line"},
        }
