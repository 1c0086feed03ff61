"""The page a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE)."""

import math

from axes.helpers import get_cool_off, get_failure_limit
from django.shortcuts import render


def locked_out(request, original_response=None, credentials=None):
    """429 and "try again in N minutes", N the whole cool-off (axes counts it from the
    latest failure, which is this one or one just before)."""
    cool_off = get_cool_off(request)
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username": (credentials or {}).get("username", ""),
        "minutes": math.ceil(cool_off.total_seconds() / 60) if cool_off else 0,
    }
    return render(request, "dashboard/locked_out.html", context, status=429)
