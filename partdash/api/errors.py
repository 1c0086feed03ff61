"""Every answer under /api/ is JSON, the errors included: unknown routes are a JSON 404,
and an unexpected exception a logged JSON 500 (none should happen: each is a bug)."""

import logging

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import JsonResponse
from rest_framework.views import exception_handler

log = logging.getLogger(__name__)


def api_exception_handler(exc, context):
    """DRF's handler; a body over DATA_UPLOAD_MAX_MEMORY_SIZE (Django raises it as DRF
    reads the body) a 413; then a JSON 500 for what it does not know."""
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


def unknown_route(request, *args, **kwargs) -> JsonResponse:
    """A JSON 404 for a path under /api/v1/ that no route matches (a non-numeric or
    oversized id included: ids are 1 to 18 digits, within a 64-bit column)."""
    return JsonResponse({"detail": f"no such API route: {request.path}"}, status=404)
