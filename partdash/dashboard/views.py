"""Server-rendered pages; each loads one small JS module that reads the JSON API."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from partdash.servers.models import Server


@login_required
def fleet(request):
    """Every monitored server at a glance."""
    return render(request, "dashboard/fleet.html", {"server_count": Server.objects.count()})
