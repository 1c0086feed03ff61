"""The page a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE)."""

import math

from axes.helpers import get_cool_off, get_failure_limit
from django.conf import settings
from django.shortcuts import render


def locked_out(request, original_response=None, credentials=None):
    """429 and "try again in N minutes", N the whole cool-off (axes counts it from the
    latest failure, which is this one or one just before). A lockout is per user name
    and address, so the name it gives is the one that failed (this login's); an address
    refused whatever the name is told so, naming nobody."""
    cool_off = get_cool_off(request)
    by_address = getattr(request, "partdash_address_locked_out", False)
    context = {
        "by_address": by_address,
        "failure_limit": settings.PARTDASH_LOGIN_ADDRESS_FAILURE_LIMIT
        if by_address
        else get_failure_limit(request, credentials),
        "username": "" if by_address else (credentials or {}).get("username", ""),
        "minutes": math.ceil(cool_off.total_seconds() / 60) if cool_off else 0,
    }
    return render(request, "dashboard/locked_out.html", context, status=429)
