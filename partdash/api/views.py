"""REST endpoints under /api/v1/."""

import hashlib

from django.core.cache import cache
from django.http import HttpResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from partdash.accounts import audit
from partdash.api.export import WITH_CSV
from partdash.api.fleet import FleetQuery
from partdash.api.listing import PARTITIONS, TABLES, Listing
from partdash.api.pagination import OptionalLimitOffset
from partdash.api.schema import PartdashSchema
from partdash.api.serializers import (
    HistoryQuery,
    PartitionSerializer,
    ServerSerializer,
    StatementSerializer,
    TableDetailSerializer,
    TableExportSerializer,
    TableSerializer,
    finding_count,
    fleet_findings,
    fleet_working_sets,
    partition_rows,
    ranked,
    server_findings,
    table_rows,
    with_fixes,
    worst_findings,
)
from partdash.health.compression import failure_rate
from partdash.health.fixes import stored_fix
from partdash.health.pressure import as_number
from partdash.health.shapes import stored_pressure
from partdash.lib.times import iso
from partdash.metrics import statements as statement_digests
from partdash.metrics.analysis import coverage_of
from partdash.metrics.drift import side_by_side
from partdash.metrics.folded_history import (
    MAX_CELLS,
    MAX_SERIES,
    HistoryRequestError,
    folded_history,
)
from partdash.metrics.history import METRICS
from partdash.metrics.models import PartitionedTable, ServerSnapshot
from partdash.metrics.readings import capabilities, latest_snapshot
from partdash.mysql.catalogue import HIDDEN, Shortfall
from partdash.polling.scheduling import PollRequest, poll_now
from partdash.servers.models import Server

QUEUED = inline_serializer(
    "PollQueued", {"queued": serializers.BooleanField(), "detail": serializers.CharField()}
)
SERVER_HEALTH = inline_serializer(
    "ServerHealth",
    {
        "snapshot_at": serializers.DateTimeField(allow_null=True),
        "capabilities": serializers.ListField(child=serializers.DictField()),
        "coverage": serializers.ListField(child=serializers.DictField()),
        "pressure": serializers.DictField(allow_null=True),
        "innodb_cmp": serializers.ListField(child=serializers.DictField()),
        "partitioned_tables": serializers.IntegerField(allow_null=True),
        "hidden_tables": serializers.IntegerField(),
        "unpruned_tables": serializers.IntegerField(
            help_text="live tables read by a statement digest that reads every partition"
        ),
        "warnings": serializers.ListField(child=serializers.DictField()),
        "unmonitored": serializers.ListField(child=serializers.DictField()),
    },
)
# A partitioned table of another engine, listed but not monitored (`health`'s `unmonitored`).
UNMONITORED_FIELDS = (
    "schema",
    "name",
    "engine",
    "partitions",
    "rows",
    "data_bytes",
    "index_bytes",
    "read_at",
)


class FixSerializer(serializers.Serializer):
    """What to do about a finding: advice, and the statement to run as is where partdash
    can write one, with what running it does (partdash.health.fixes)."""

    advice = serializers.CharField()
    sql = serializers.CharField(
        allow_null=True, help_text="One statement to run as is; null where none is safe."
    )
    safety = serializers.ChoiceField(
        choices=["instant", "copies", "blocks", "destroys"],
        allow_null=True,
        help_text="What running `sql` does: instant; copies `rows`/`bytes` (the partitions "
        "it rewrites); blocks writes while it runs; destroys data. Null when `sql` is null.",
    )
    rows = serializers.IntegerField(
        allow_null=True, help_text="Rows the statement copies or destroys (estimate)."
    )
    bytes = serializers.IntegerField(
        allow_null=True, help_text="Data and index bytes the statement copies or destroys."
    )

    def to_representation(self, instance):
        return super().to_representation(stored_fix(instance))


FIX = FixSerializer(allow_null=True)
FINDINGS = inline_serializer(
    "Finding",
    {
        "server_id": serializers.IntegerField(),
        "server": serializers.CharField(),
        "table_id": serializers.IntegerField(allow_null=True),
        "schema": serializers.CharField(allow_null=True),
        "table": serializers.CharField(allow_null=True),
        "kind": serializers.CharField(),
        "severity": serializers.CharField(),
        "score": serializers.FloatField(),
        "message": serializers.CharField(),
        "fix": FIX,
    },
    many=True,
)
HISTORY = inline_serializer(
    "History",
    {
        "metric": serializers.CharField(),
        "resolution": serializers.ChoiceField(
            choices=["poll", "5min", "hour", "day"],
            help_text="poll: every poll in the window (at most 500); else one point per "
            "bucket of that width, the finest that keeps the window within 1,000 points",
        ),
        "complete": serializers.BooleanField(
            help_text="false while the periodic task is still rolling up the older part of "
            "the window (after an upgrade, or once it was stopped for long): that part has "
            "no points yet"
        ),
        "partitions": serializers.ListField(
            child=serializers.CharField(),
            help_text=f"the series: at most {MAX_SERIES} partitions, then `other` when "
            "`other` is above 0",
        ),
        "points": serializers.ListField(child=serializers.ListField()),
        "other": serializers.IntegerField(
            help_text="how many partitions the last series, `other`, sums (0: none, every "
            "partition has its own series)"
        ),
        "series_cap": serializers.IntegerField(
            help_text=f"partitions named in one answer, at most ({MAX_SERIES})"
        ),
        "cell_cap": serializers.IntegerField(
            help_text=f"points times series in one answer, at most ({MAX_CELLS})"
        ),
    },
)


PER_POLL_SECONDS = 24 * 3600  # an entry outlives its poll only until it is evicted


def per_poll(request, server_id: int, name: str, build, listing: Listing):
    """A list that only a poll changes, rendered once per poll (per process): the key
    holds the server's latest snapshot (id and time), so the next poll's figures are a
    new key. Filters and ordering (`listing`) apply to the cached rows. The answer's
    ETag names the snapshot and the query, its Last-Modified is the snapshot's time:
    a client that has it gets a 304. Other formats (the browsable API, CSV) are built
    afresh."""
    params = {k: v for k, v in request.query_params.items() if k != "format"}
    listing.check(params)
    latest = (
        ServerSnapshot.objects.latest_for(server_id).values_list("id", "taken_at", named=True)
    ).first()
    stamp = f"{latest.id}@{latest.taken_at.timestamp()}" if latest else "never"
    key = f"partdash:{name}:{server_id}:{stamp}"
    query = hashlib.sha256(request.get_full_path().encode()).hexdigest()[:16]
    etag = f'"{key.removeprefix("partdash:")}:{query}"'
    modified = latest.taken_at.timestamp() if latest else None
    unchanged = get_conditional_response(request, etag=etag, last_modified=modified)
    if unchanged is not None:
        return unchanged
    if request.accepted_renderer.format != "json":
        response = Response(listing.select(build(), params))
    elif not params:
        body = cache.get(key)
        if body is None:
            body = JSONRenderer().render(build())
            cache.set(key, body, PER_POLL_SECONDS)
        response = HttpResponse(body, content_type="application/json")
    else:
        rows = cache.get(f"{key}:rows")
        if rows is None:
            rows = build()
            cache.set(f"{key}:rows", rows, PER_POLL_SECONDS)
        response = Response(listing.select(rows, params))
    response["ETag"] = etag
    if modified is not None:
        response["Last-Modified"] = http_date(modified)
    return response


class ServerViewSet(viewsets.ModelViewSet):
    """Servers; the list is whole unless `?limit=`/`?offset=` ask for a page;
    `?status=`, `?group=`, `?tag=` narrow it, `?ordering=worst` puts the servers with
    firing critical alerts first (partdash/api/fleet.py)."""

    queryset = Server.objects.all()
    serializer_class = ServerSerializer
    schema = PartdashSchema()
    pagination_class = OptionalLimitOffset

    @extend_schema(parameters=[FleetQuery])
    def list(self, request, *args, **kwargs) -> Response:
        query = FleetQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        servers = query.narrow(self.filter_queryset(self.get_queryset()))
        page = self.paginate_queryset(servers)
        rows = list(page if page is not None else servers)
        context = {
            **self.get_serializer_context(),
            "findings": fleet_findings(rows),
            "working_sets": fleet_working_sets(rows),
        }
        data = self.get_serializer_class()(rows, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    @extend_schema(request=None, responses={202: QUEUED, 409: QUEUED, 503: QUEUED})
    @action(detail=True, methods=["post"])
    def poll(self, request, pk=None) -> Response:
        server = self.get_object()
        if not server.enabled:
            return Response(
                {"queued": False, "detail": "server is disabled"}, status.HTTP_409_CONFLICT
            )
        outcome = poll_now(server.pk)
        audit.record("poll_now", server)
        if outcome is PollRequest.QUEUED:
            return Response(
                {"queued": True, "detail": "a poll was queued"}, status.HTTP_202_ACCEPTED
            )
        if outcome is PollRequest.ALREADY_QUEUED:
            return Response(
                {"queued": True, "detail": "a poll is already queued"}, status.HTTP_202_ACCEPTED
            )
        return Response(
            {"queued": False, "detail": "the task broker is unreachable; try again"},
            status.HTTP_503_SERVICE_UNAVAILABLE,
        )

    @extend_schema(responses=TableSerializer(many=True), parameters=TABLES.openapi())
    @action(detail=True, methods=["get"], renderer_classes=WITH_CSV)
    def tables(self, request, pk=None) -> Response:
        server = self.get_object()
        self.csv_name = f"{server.name}-tables"
        tables = PartitionedTable.objects.live().filter(server=server)
        return per_poll(request, server.pk, "tables", lambda: table_rows(tables), TABLES)

    @extend_schema(responses=SERVER_HEALTH)
    @action(detail=True, methods=["get"])
    def health(self, request, pk=None) -> Response:
        """Capabilities, coverage (each signal measured or not, why, and what enables it),
        pressure and server-wide compression as of the latest poll; its
        warnings, one per distinct fix, each with every table concerned; how many of the
        partitioned tables the server lists are hidden from the account; the partitioned
        tables of engines partdash does not monitor (MyISAM, Aria, MEMORY...)."""
        server = self.get_object()
        snapshot = latest_snapshot(server.pk)
        pressure = stored_pressure(snapshot.pressure if snapshot else None)
        cmp_rows = [
            {
                **row,
                "failure_rate": failure_rate(row.get("compress_ops"), row.get("compress_ops_ok")),
            }
            for row in (snapshot.innodb_cmp if snapshot else [])
        ]
        warnings = [Shortfall.from_dict(w) for w in (snapshot.warnings if snapshot else [])]
        return Response(
            {
                "snapshot_at": snapshot.taken_at if snapshot else None,
                "capabilities": capabilities(snapshot),
                "coverage": coverage_of(snapshot),
                "pressure": pressure or None,
                "innodb_cmp": cmp_rows,
                "partitioned_tables": _partitioned_tables(server, snapshot),
                "hidden_tables": sum(w.count for w in warnings if w.cause == HIDDEN),
                "unpruned_tables": statement_digests.unpruned_tables(server),
                "warnings": [warning.as_dict() for warning in warnings],
                "unmonitored": list(server.unmonitored.values(*UNMONITORED_FIELDS)),
            }
        )


def _partitioned_tables(server: Server, snapshot) -> int | None:
    """As the server's `partitioned_tables`: those of other engines (not monitored) too."""
    if snapshot is None or snapshot.partitioned_tables is None:
        return None
    return snapshot.partitioned_tables + (server.unmonitored_tables or 0)


DRIFT = inline_serializer(
    "TableDrift",
    {
        "group": serializers.CharField(),
        "group_id": serializers.IntegerField(),
        "kind": serializers.CharField(),
        "columns": serializers.ListField(child=serializers.DictField()),
        "rows": serializers.ListField(child=serializers.DictField()),
        "more_rows": serializers.IntegerField(),
    },
    many=True,
)


class TableViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    # The model whose permissions a write needs (the configured permission class reads
    # it); what is served is `get_queryset`'s.
    queryset = PartitionedTable.objects.all()
    serializer_class = TableDetailSerializer
    http_method_names = ["get", "patch", "head", "options"]

    @extend_schema(request=TableExportSerializer, responses=TableDetailSerializer)
    def partial_update(self, request, pk=None) -> Response:
        """Opt a table in to per-partition series in /metrics, or out (operators)."""
        table = self.get_object()
        before = table.export_partitions
        change = TableExportSerializer(table, data=request.data, partial=True)
        change.is_valid(raise_exception=True)
        change.save()
        if table.export_partitions != before:  # tables are the polls' rows: not registered
            changes = {"export_partitions": [before, table.export_partitions]}
            audit.record("update", table, changes=changes)
        return Response(self.get_serializer(table).data)

    def get_queryset(self):
        return PartitionedTable.objects.select_related("server")

    def get_object(self) -> PartitionedTable:
        """A live table; a dropped one is a 404 saying when, on every route of it."""
        table = super().get_object()
        if table.dropped_at is not None:
            raise NotFound(f"table dropped at {iso(table.dropped_at)}")
        return table

    @extend_schema(responses=PartitionSerializer(many=True), parameters=PARTITIONS.openapi())
    @action(detail=True, methods=["get"], renderer_classes=WITH_CSV)
    def partitions(self, request, pk=None) -> Response:
        table = self.get_object()
        self.csv_name = f"{table.server.name}-{table.schema}.{table.name}-partitions"

        def build() -> list[dict]:
            snapshot = latest_snapshot(table.server_id)
            variables = snapshot.variables if snapshot else {}
            page_size = as_number(variables.get("innodb_page_size")) or 16384
            return partition_rows(table, page_size, snapshot.taken_at if snapshot else None)

        return per_poll(request, table.server_id, f"partitions:{table.pk}", build, PARTITIONS)

    @extend_schema(responses=StatementSerializer(many=True))
    @action(detail=True, methods=["get"])
    def statements(self, request, pk=None) -> Response:
        """The statement digests that read this table, worst first: those reading every
        partition, then those partdash cannot tell, some, one; the costliest first."""
        table = self.get_object()
        rows = statement_digests.worst_first(table.statements.all())
        return Response(StatementSerializer(rows, many=True).data)

    @extend_schema(responses=DRIFT)
    @action(detail=True, methods=["get"])
    def drift(self, request, pk=None) -> Response:
        """The table's copies on the members of its server's groups, side by side."""
        return Response(side_by_side(self.get_object()))

    @extend_schema(
        parameters=[
            OpenApiParameter("metric", enum=list(METRICS), required=True),
            OpenApiParameter("since", str, description="ISO 8601; default 24 hours ago"),
            OpenApiParameter("until", str, description="ISO 8601, after since; default now"),
            OpenApiParameter(
                "partitions",
                str,
                many=True,
                description=f"the partitions to show (at most {MAX_SERIES}; names as the "
                "answer gives them), repeated or comma-separated; default: the busiest",
            ),
        ],
        responses=HISTORY,
    )
    @action(detail=True, methods=["get"])
    def history(self, request, pk=None) -> Response:
        query = HistoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        table = self.get_object()
        window = query.validated_data
        names = request.query_params.getlist("partitions") or None
        try:
            answer = folded_history(
                table, window["metric"], window["since"], window["until"], names
            )
        except HistoryRequestError as error:
            raise serializers.ValidationError({"partitions": str(error)}) from None
        return Response(answer)


def _same(stored, wanted: str) -> bool:
    return str(stored or "").casefold() == wanted.casefold()


class FindingsQuery(serializers.Serializer):
    """What `/findings/` filters on, as the fleet page does."""

    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=500, help_text="at most this many"
    )
    server = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="a server's id"
    )
    schema = serializers.CharField(required=False, max_length=64)
    table = serializers.CharField(required=False, max_length=64, help_text="a substring")
    kind = serializers.CharField(required=False, max_length=64, help_text="e.g. runway, skew")
    severity = serializers.CharField(required=False, max_length=16)
    offset = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**31 - 1,
        help_text="asks for a page: `{count, next, previous, results}` of `limit` findings",
    )

    def matches(self, finding: dict) -> bool:
        wanted = self.validated_data
        return (
            ("server" not in wanted or finding["server_id"] == wanted["server"])
            and ("schema" not in wanted or _same(finding["schema"], wanted["schema"]))
            and ("kind" not in wanted or _same(finding["kind"], wanted["kind"]))
            and ("severity" not in wanted or _same(finding["severity"], wanted["severity"]))
            and (
                "table" not in wanted
                or wanted["table"].casefold() in str(finding["table"] or "").casefold()
            )
        )


class FindingsView(generics.GenericAPIView):
    """The worst findings across the fleet, worst first (`?limit=`, default 50): the
    tables', and the servers' own (`table_id` null); `server`, `schema`, `table`
    (a substring), `kind` and `severity` narrow them. `?offset=` asks for a page, in
    the envelope of the other paged lists; `limit` alone keeps its plain list."""

    pagination_class = OptionalLimitOffset  # the answer's two shapes in the OpenAPI document

    @extend_schema(parameters=[FindingsQuery], responses=FINDINGS)
    def get(self, request) -> Response:
        query = FindingsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        limit = query.validated_data["limit"]
        tables, servers = PartitionedTable.objects.all(), Server.objects.all()
        if "server" in query.validated_data:
            tables = tables.filter(server_id=query.validated_data["server"])
            servers = servers.filter(pk=query.validated_data["server"])
        narrowed = set(query.validated_data) - {"limit", "server", "offset"}
        if "offset" in query.validated_data:  # a page, and how many findings there are
            return self._page(request, tables, servers, query, narrowed)
        # Narrowed by what only the findings say: rank them all, then keep `limit`. The
        # fixes are built for those kept only.
        found = worst_findings(tables, None if narrowed else limit, fixed=False)
        found += server_findings(servers, fixed=False)
        return Response(with_fixes(ranked([f for f in found if query.matches(f)], limit)))

    def _page(self, request, tables, servers, query: FindingsQuery, narrowed: set) -> Response:
        own = server_findings(servers, fixed=False)
        if narrowed:
            # Narrowed by what only the findings say: every one ranked, to count them.
            found = worst_findings(tables, None, fixed=False) + own
            matching = [f for f in found if query.matches(f)]
            page = self.paginate_queryset(ranked(matching, len(matching)))
            return self.get_paginated_response(with_fixes(page))
        # Counted by the database; the tables read only as far as the page reaches.
        paginator = self.paginator
        limit, offset = paginator.get_limit(request), paginator.get_offset(request)
        reach = offset + limit
        page = ranked(worst_findings(tables, reach, fixed=False) + own, reach)[offset:]
        paginator.request, paginator.limit, paginator.offset = request, limit, offset
        paginator.count = finding_count(tables) + len(own)
        return self.get_paginated_response(with_fixes(page))
