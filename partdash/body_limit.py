"""Request bodies of at most PARTDASH_MAX_BODY_BYTES, whatever their type.

Django's DATA_UPLOAD_MAX_MEMORY_SIZE counts a form's fields but not the files of a
multipart body, which it streams to disk: 60 MB posted to /login/ was read and stored.
A body announced larger than the cap is refused with 413 before a byte of it is read."""

from django.conf import settings
from django.http import HttpResponse, JsonResponse


class BodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and length > limit:
            return too_large(request, limit)
        return self.get_response(request)


def too_large(request, limit: int) -> HttpResponse:
    detail = f"the body is larger than {limit} bytes"
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": detail}, status=413)
    else:
        response = HttpResponse(f"{detail}\n", status=413, content_type="text/plain")
    return response  # the server closes the connection: the body was not read
