"""django-axes in front of the model backend, for logins that come with a request."""

from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone


class LockoutBackend(AxesStandaloneBackend):
    """Every web login (/login/, /admin/login/) passes its request, and is counted and
    locked out by axes: per user name and address (AXES_LOCKOUT_PARAMETERS), so a
    stranger guessing `dba` from a shared address does not lock `admin` out of it. An
    address failing for many names is refused too, at a higher count
    (`address_locked_out`). `authenticate()` without a request (a shell, the test
    client's `login()`) cannot be attributed to an address: it is left to the model
    backend."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        if address_locked_out(request):
            request.axes_locked_out = True
            request.partdash_address_locked_out = True
            raise AxesBackendPermissionDenied("too many failed logins from this address")
        return super().authenticate(request, username, password, **kwargs)


def address_failures(address: str | None) -> int:
    """Failed logins from `address` whatever the user name, within the cool-off (axes
    keeps one row per name, address and browser, its count and its latest failure)."""
    if not address:
        return 0
    since = timezone.now() - timedelta(hours=settings.AXES_COOLOFF_TIME)
    attempts = AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=since)
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


def address_locked_out(request) -> bool:
    """Whether the address has failed PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT times across
    user names: password spraying, refused for every name from that address."""
    limit = settings.PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT
    return bool(limit) and address_failures(client_address(request)) >= limit


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
