"""Every answer under /api/ is JSON, the errors included: unknown routes are a JSON 404,
and an unexpected exception a logged JSON 500 (none should happen: each is a bug)."""

import logging

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from rest_framework.exceptions import NotFound
from rest_framework.views import exception_handler

log = logging.getLogger(__name__)


def api_exception_handler(exc, context):
    """DRF's handler; a body over DATA_UPLOAD_MAX_MEMORY_SIZE (Django raises it as DRF
    reads the body) a 413; then a JSON 500 for what it does not know. A missing object
    is "Not found.": Django's own message names the model class ("No PartitionedTable
    matches the given query."), which is partdash's code, not the reader's words."""
    if isinstance(exc, Http404):
        exc = NotFound()
    response = exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, RequestDataTooBig):
        return JsonResponse({"detail": "the body is too large"}, status=413)
    if isinstance(exc, SuspiciousOperation):
        return JsonResponse({"detail": str(exc)}, status=400)
    view = context.get("view")
    log.exception("unexpected error in %s", type(view).__name__ if view else "the API")
    return JsonResponse({"detail": "internal error; it has been logged"}, status=500)


def unknown_route(request, *args, **kwargs) -> HttpResponse:
    """A JSON 404 for a path under /api/ that no route matches (a non-numeric or
    oversized id included: ids are 1 to 18 digits, within a 64-bit column). A route
    without its trailing slash is redirected to it, as Django's APPEND_SLASH would
    (which this catch-all would otherwise stop): 301 for reads, 308 for writes."""
    if not request.path_info.endswith("/"):
        try:
            slashed = resolve(request.path_info + "/").func
        except Resolver404:
            slashed = None
        if slashed is not None and getattr(slashed, "__name__", "") != "unknown_route":
            return HttpResponsePermanentRedirect(
                request.get_full_path(force_append_slash=True),
                preserve_request=request.method not in ("GET", "HEAD"),
            )
    return JsonResponse({"detail": f"no such API route: {request.path}"}, status=404)
