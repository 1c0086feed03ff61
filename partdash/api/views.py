"""REST endpoints under /api/v1/."""

from datetime import timedelta

from django.db.models import Q, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from partdash.api.serializers import (
    HistoryQuery,
    PartitionSerializer,
    ServerSerializer,
    TableSerializer,
)
from partdash.collector.scheduling import request_poll
from partdash.metrics.history import METRICS, table_history
from partdash.metrics.models import PartitionedTable
from partdash.servers.models import Server

QUEUED = inline_serializer(
    "PollQueued", {"queued": serializers.BooleanField(), "detail": serializers.CharField()}
)
HISTORY = inline_serializer(
    "History",
    {
        "metric": serializers.CharField(),
        "partitions": serializers.ListField(child=serializers.CharField()),
        "points": serializers.ListField(child=serializers.ListField()),
    },
)
LIVE = Q(partitions__dropped_at=None)


def tables_with_totals(queryset):
    """Live tables, each annotated with sums over its live partitions."""
    return queryset.filter(dropped_at=None).annotate(
        total_rows=Sum("partitions__rows", filter=LIVE),
        total_data_bytes=Sum("partitions__data_bytes", filter=LIVE),
        total_index_bytes=Sum("partitions__index_bytes", filter=LIVE),
        total_file_bytes=Sum("partitions__file_bytes", filter=LIVE),
    )


class ServerViewSet(viewsets.ModelViewSet):
    queryset = Server.objects.all()
    serializer_class = ServerSerializer

    @extend_schema(request=None, responses={202: QUEUED, 409: QUEUED, 503: QUEUED})
    @action(detail=True, methods=["post"])
    def poll(self, request, pk=None) -> Response:
        server = self.get_object()
        if not server.enabled:
            return Response(
                {"queued": False, "detail": "server is disabled"}, status.HTTP_409_CONFLICT
            )
        if request_poll(server.pk, force=True):
            return Response(
                {"queued": True, "detail": "a poll was queued"}, status.HTTP_202_ACCEPTED
            )
        return Response(
            {"queued": False, "detail": "the task broker is unreachable; try again"},
            status.HTTP_503_SERVICE_UNAVAILABLE,
        )

    @extend_schema(responses=TableSerializer(many=True))
    @action(detail=True, methods=["get"])
    def tables(self, request, pk=None) -> Response:
        server = self.get_object()
        tables = tables_with_totals(PartitionedTable.objects.filter(server=server))
        return Response(TableSerializer(tables, many=True).data)


class TableViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = TableSerializer

    def get_queryset(self):
        return tables_with_totals(PartitionedTable.objects.all())

    @extend_schema(responses=PartitionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def partitions(self, request, pk=None) -> Response:
        table = self.get_object()
        partitions = table.partitions.filter(dropped_at=None)
        context = {"table_rows": table.total_rows}
        return Response(PartitionSerializer(partitions, many=True, context=context).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("metric", enum=list(METRICS), required=True),
            OpenApiParameter("since", str, description="ISO 8601; default 24 hours ago"),
        ],
        responses=HISTORY,
    )
    @action(detail=True, methods=["get"])
    def history(self, request, pk=None) -> Response:
        query = HistoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        table = get_object_or_404(PartitionedTable, pk=pk)
        since = query.validated_data.get("since") or timezone.now() - timedelta(hours=24)
        return Response(table_history(table, query.validated_data["metric"], since))
