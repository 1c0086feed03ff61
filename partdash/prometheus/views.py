"""/metrics for Prometheus: the exposition behind an API token (any signed-in role)."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from partdash.lib.single_flight import SingleFlight
from partdash.prometheus.exposition import exposition
from partdash.servers.models import Server


class PlainTextRenderer(BaseRenderer):
    """Errors (401, 429) as one line of text, as a scraper logs them."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        detail = data.get("detail", data) if isinstance(data, dict) else data
        return f"{detail}\n".encode()


# Scrapes of the same servers asked for while one is being written share it: at 1,000
# servers a whole scrape is a second of a core, and 8 at once each paid it in turn.
SCRAPES: SingleFlight[bytes] = SingleFlight()


class MetricsView(APIView):
    """Prometheus text exposition of every server, table and alert partdash knows.
    Authentication is DRF's configured one (`Authorization: Token KEY`), so /metrics
    takes whatever token the API takes; every authenticated role may read it."""

    permission_classes = [IsAuthenticated]
    renderer_classes = [PlainTextRenderer]

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # Prometheus asks for OpenMetrics first and text/plain after; the answer is the
        # text format whatever it asks.
        renderer = self.get_renderers()[0]
        return renderer, renderer.media_type

    def get_authenticate_header(self, request: Request) -> str | None:
        """The first scheme that names itself (Token), so a missing token answers 401
        with `WWW-Authenticate` even where the session comes first in the settings."""
        for authenticator in self.get_authenticators():
            header = authenticator.authenticate_header(request)
            if header:
                return header
        return None

    @extend_schema(
        responses={200: OpenApiResponse(description="Prometheus text format 0.0.4")},
        exclude=True,
    )
    def get(self, request: Request) -> HttpResponse:
        # Text format 0.0.4: every name here is a classic one, and Prometheus 2 and 3
        # alike parse it. `?server=NAME` (repeatable): those servers' series alone.
        names = request.query_params.getlist("server") or None
        if names is not None:
            unknown = set(names) - set(
                Server.objects.filter(name__in=names).values_list("name", flat=True)
            )
            if unknown:
                return HttpResponse(
                    f"no server named {', '.join(sorted(unknown))}\n",
                    status=404,
                    content_type="text/plain; charset=utf-8",
                )
        key = None if names is None else tuple(sorted(set(names)))
        body = SCRAPES.run(key, lambda: exposition(names))
        return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
