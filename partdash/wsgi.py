"""WSGI entry point (gunicorn partdash.wsgi)."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partdash.settings")
application = get_wsgi_application()


def _settle() -> None:
    """Load the URLs and the views they name now rather than at the first request, then
    move everything loaded out of the cyclic collector's reach for the process's life
    (`gc.freeze`): its full collections walked all of Django's and partdash's objects
    each time, and at 1,000 servers one request in twenty paid 100-200 ms for it (the
    findings, the alert counts, the fleet page's HTML, measured in process)."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (imported for its effect)
    gc.collect()
    gc.freeze()


_settle()
