"""REST endpoints under /api/v1/."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from partdash.api.serializers import ServerSerializer
from partdash.collector.scheduling import request_poll
from partdash.servers.models import Server

QUEUED = inline_serializer(
    "PollQueued", {"queued": serializers.BooleanField(), "detail": serializers.CharField()}
)


class ServerViewSet(viewsets.ModelViewSet):
    queryset = Server.objects.all()
    serializer_class = ServerSerializer

    @extend_schema(request=None, responses={202: QUEUED, 503: QUEUED})
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
