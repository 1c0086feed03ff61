"""Server-rendered pages; each loads one small JS module that reads the JSON API."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.templatetags.static import static

from partdash.servers.models import Server


@login_required
def fleet(request):
    """Every monitored server at a glance."""
    return render(request, "dashboard/fleet.html", {"server_count": Server.objects.count()})


def favicon(request):
    """Browsers ask for /favicon.ico on every page, the admin's included."""
    return redirect(static("favicon.svg"), permanent=True)
