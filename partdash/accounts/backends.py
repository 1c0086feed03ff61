"""django-axes in front of the model backend, for logins that come with a request."""

from axes.backends import AxesStandaloneBackend
from django.conf import settings


class LockoutBackend(AxesStandaloneBackend):
    """Every web login (/login/, /admin/login/) passes its request, and is counted and
    locked out by axes. `authenticate()` without a request (a shell, the test client's
    `login()`) cannot be attributed to an address: it is left to the model backend."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_address(request) -> str | None:
    """The address a login is counted against (AXES_CLIENT_IP_CALLABLE): the connection's,
    or behind a trusted proxy (PARTDASH_TRUSTED_PROXY) the last X-Forwarded-For entry,
    the one the proxy appended; the entries before it are whatever the client sent."""
    if settings.PARTDASH_TRUSTED_PROXY:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
        if entries:
            return entries[-1]
    return request.META.get("REMOTE_ADDR")
