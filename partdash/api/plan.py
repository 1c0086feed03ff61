"""The maintenance plan (`partdash.metrics.plan`): every fix due across the fleet as JSON
or CSV (`/api/v1/maintenance-plan/`), and one server's as a SQL script to download
(`/api/v1/servers/{id}/maintenance-plan.sql`). Viewers read both: a plan holds the
statements the findings already show, and no secret."""

import re
from datetime import datetime

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from partdash.accounts import audit
from partdash.api.export import WITH_CSV
from partdash.api.plan_script import script
from partdash.metrics.plan import Plan, fleet_plan, plan_items
from partdash.servers.models import Server

SAFETIES = ["instant", "copies", "blocks", "destroys", "none"]


class PlanQuery(serializers.Serializer):
    """What `/maintenance-plan/` narrows on."""

    server = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="a server's id"
    )
    kind = serializers.CharField(required=False, max_length=64, help_text="e.g. runway")
    safety = serializers.ChoiceField(
        choices=SAFETIES, required=False, help_text="none: advice only (no statement)"
    )
    as_of = serializers.DateTimeField(
        required=False,
        help_text="the generated_at of a plan you hold: items whose table changed since "
        "(or was dropped) are marked stale",
    )


class ScriptQuery(serializers.Serializer):
    as_of = serializers.DateTimeField(
        required=False, help_text="as on /maintenance-plan/: marks stale items (comments)"
    )


PLAN_ITEMS = inline_serializer(
    "PlanItem",
    {
        "server": serializers.IntegerField(),
        "server_name": serializers.CharField(),
        "schema": serializers.CharField(allow_null=True),
        "table": serializers.CharField(allow_null=True),
        "table_id": serializers.IntegerField(allow_null=True),
        "kind": serializers.CharField(),
        "severity": serializers.CharField(),
        "score": serializers.FloatField(),
        "message": serializers.CharField(),
        "urgency": serializers.CharField(help_text='e.g. "3.2 days left", "40 days overdue"'),
        "advice": serializers.CharField(),
        "sql": serializers.CharField(allow_null=True),
        "safety": serializers.ChoiceField(choices=SAFETIES[:4], allow_null=True),
        "rows": serializers.IntegerField(allow_null=True),
        "bytes": serializers.IntegerField(allow_null=True),
        "analyze_after": serializers.CharField(
            allow_null=True,
            help_text="the ANALYZE to run after `sql`: it rewrites partitions, whose "
            "statistics the server leaves at 0 rows until analysed",
        ),
        "as_of": serializers.DateTimeField(allow_null=True),
        "poll": serializers.CharField(allow_null=True),
        "stale": serializers.BooleanField(),
        "statement": serializers.IntegerField(
            allow_null=True,
            help_text="the number of the server's statement that clears this finding",
        ),
        "superseded": serializers.BooleanField(
            help_text="its own statement was merged into the table's combined fix "
            "(`statement`): its `sql` is null, run that one"
        ),
    },
    many=True,
)
PLAN_STATEMENTS = inline_serializer(
    "PlanStatement",
    {
        "number": serializers.IntegerField(),
        "section": serializers.ChoiceField(
            choices=["instant", "copies", "statistics", "destroys"],
            help_text="the script runs them in this order: what destroys data last",
        ),
        "schema": serializers.CharField(allow_null=True),
        "table": serializers.CharField(allow_null=True),
        "table_id": serializers.IntegerField(allow_null=True),
        "sql": serializers.CharField(),
        "safety": serializers.ChoiceField(choices=SAFETIES[:4]),
        "rows": serializers.IntegerField(allow_null=True),
        "bytes": serializers.IntegerField(allow_null=True),
        "clears": inline_serializer(
            "ClearedFinding",
            {
                "kind": serializers.CharField(),
                "severity": serializers.CharField(),
                "message": serializers.CharField(),
            },
            many=True,
        ),
    },
    many=True,
)
PLAN = inline_serializer(
    "MaintenancePlan",
    {
        "generated_at": serializers.DateTimeField(),
        "as_of": serializers.DateTimeField(allow_null=True),
        "servers": inline_serializer(
            "ServerPlan",
            {
                "server": serializers.IntegerField(),
                "name": serializers.CharField(),
                "host": serializers.CharField(),
                "port": serializers.IntegerField(),
                "poll": serializers.CharField(allow_null=True),
                "taken_at": serializers.DateTimeField(allow_null=True),
                "items": PLAN_ITEMS,
                "statements": PLAN_STATEMENTS,
            },
            many=True,
        ),
    },
)


def _narrowed(plan: Plan, wanted: dict) -> Plan:
    """The plan with only the items of the wanted safety class ("none": advice only)."""
    if "safety" not in wanted:
        return plan
    safety = None if wanted["safety"] == "none" else wanted["safety"]
    for server in plan["servers"]:
        server["items"] = [item for item in server["items"] if item["safety"] == safety]
    return plan


class MaintenancePlanView(APIView):
    """Every fix due, per server, most urgent first (runway, retention, drift,
    fragmentation, statistics, then the rest; critical before warning, then score), each
    with its safety class, the rows and bytes it rewrites, and whether it is stale; and
    each server's `statements`, its tables' fixes composed, in the order to run them.
    `?server=ID` narrows to one server, `kind` and `safety` to some items; `?as_of=` (a
    plan's `generated_at`) marks stale the items whose table changed since. CSV
    (`?format=csv`): one row per item."""

    renderer_classes = WITH_CSV
    csv_name = "partdash-plan"

    @extend_schema(parameters=[PlanQuery], responses=PLAN)
    def get(self, request) -> Response:
        query = PlanQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        wanted = query.validated_data
        servers = Server.objects.order_by("name")
        if "server" in wanted:
            servers = servers.filter(pk=wanted["server"])
            if not servers.exists():
                raise NotFound("no such server")
        kinds = {wanted["kind"].casefold()} if "kind" in wanted else None
        plan = _narrowed(fleet_plan(servers, wanted.get("as_of"), kinds), wanted)
        if request.accepted_renderer.format == "csv":
            target = servers.first() if "server" in wanted else Server
            audit.record("plan_download", target, name="" if "server" in wanted else "fleet")
            return Response(plan_items(plan))
        return Response(plan)


class PlainTextRenderer(BaseRenderer):
    """A script as is; an error's detail as one line."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if isinstance(data, dict) and "detail" in data:
            data = str(data["detail"])
        return str(data).encode()


def script_name(server: Server, generated_at: datetime) -> str:
    """partdash-plan-SERVER-YYYYMMDD-HHMM.sql, the name safe in a header and a shell."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", server.name)
    return f"partdash-plan-{name}-{generated_at:%Y%m%d-%H%M}.sql"


class ServerPlanScriptView(APIView):
    """One server's plan as a SQL script to review, then run with `mariadb < FILE`: a
    header saying what it does, when it was generated and from which poll, then each fix
    in urgency order; advice-only and stale items as comments. partdash never runs it."""

    renderer_classes = [JSONRenderer, PlainTextRenderer]

    @extend_schema(
        parameters=[ScriptQuery],
        responses={(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request, pk: int) -> HttpResponse:
        query = ScriptQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        server = Server.objects.filter(pk=pk).first()
        if server is None:
            raise NotFound("no such server")
        plan = fleet_plan([server], query.validated_data.get("as_of"))
        generated_at = plan["generated_at"]
        response = HttpResponse(
            script(plan["servers"][0], generated_at), content_type="text/plain; charset=utf-8"
        )
        name = script_name(server, generated_at)
        audit.record("plan_download", server)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
