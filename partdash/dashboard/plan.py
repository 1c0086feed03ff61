"""The fleet's maintenance plan page (`partdash.metrics.plan`): every fix due, per server,
most urgent first, server-rendered so a plan can be printed or shared as it was read;
each server's SQL script and the whole plan's CSV are the API's."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from partdash.health.fixes import safety_words
from partdash.metrics.plan import fleet_plan
from partdash.servers.models import Server


@login_required
def plan(request: HttpRequest) -> HttpResponse:
    """Servers with something due first; each item with its safety in words."""
    built = fleet_plan(Server.objects.order_by("name"))
    for server in built["servers"]:
        for item in server["items"]:
            item["safety_words"] = safety_words(  # type: ignore[typeddict-unknown-key]
                item["safety"], item["rows"], item["bytes"]
            )
            # A statement naming non-ASCII names is shown after SET NAMES utf8mb4, in the
            # block a DBA copies: in a session of another character set the server would
            # read those names as other characters (docs/maintenance-plan.md).
            item["set_names"] = not (item["sql"] or "").isascii()  # type: ignore[typeddict-unknown-key]
        for statement in server["statements"]:
            statement["safety_words"] = safety_words(  # type: ignore[typeddict-unknown-key]
                statement["safety"], statement["rows"], statement["bytes"]
            )
            statement["set_names"] = not statement["sql"].isascii()  # type: ignore[typeddict-unknown-key]
    due = sum(len(server["items"]) for server in built["servers"])
    return render(request, "dashboard/plan.html", {"plan": built, "due": due})
