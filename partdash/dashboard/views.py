"""Server-rendered pages; each loads one small JS module that reads the JSON API."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static

from partdash.health.fixes import safety_words
from partdash.metrics.drift import side_by_side
from partdash.metrics.models import PartitionedTable
from partdash.metrics.plan import table_statements
from partdash.servers.choices import ServerStatus
from partdash.servers.models import Server, ServerGroup, split_tags

TABLES_PER_PAGE = 50


def page_size(request: HttpRequest) -> int:
    """Rows per page of a client-side table: `?page_size=N` (1 to 1000), else 50."""
    try:
        size = int(request.GET.get("page_size", TABLES_PER_PAGE))
    except ValueError:
        return TABLES_PER_PAGE
    return size if 1 <= size <= 1000 else TABLES_PER_PAGE


@login_required
def fleet(request: HttpRequest) -> HttpResponse:
    """Every monitored server at a glance, a page at a time and worst first (fleet.js
    reads the server list's filters and pages), then the worst tables across the fleet."""
    tags = {
        tag for tags in Server.objects.values_list("tags", flat=True) for tag in split_tags(tags)
    }
    context = {
        "server_count": Server.objects.count(),
        "statuses": ServerStatus.choices,
        "groups": ServerGroup.objects.values_list("name", flat=True),
        "tags": sorted(tags, key=str.casefold),
    }
    return render(request, "dashboard/fleet.html", context)


@login_required
def server(request: HttpRequest, server_id: int) -> HttpResponse:
    """One server: capabilities, pressure and its partitioned tables."""
    context = {"server": get_object_or_404(Server, pk=server_id), "page_size": page_size(request)}
    return render(request, "dashboard/server.html", context)


TABLE_ALERTS = 20  # the latest alerts the table page lists


PAGE_DRIFT_ROWS = 200  # partitions side by side on the page; past it, only those differing


@login_required
def table(request: HttpRequest, table_id: int) -> HttpResponse:
    """One partitioned table: skew, per-partition sizes and activity, compression, runway."""
    partitioned = get_object_or_404(PartitionedTable.objects.select_related("server"), pk=table_id)
    alerts = partitioned.alerts.order_by("-started_at", "-pk")[:TABLE_ALERTS]
    groups = side_by_side(partitioned) if partitioned.dropped_at is None else []
    for group in groups:  # a long table shows only where its copies differ
        group["in_line"] = all(c["in_line"] for c in group["columns"])
        if len(group["rows"]) > PAGE_DRIFT_ROWS:
            shown = [row for row in group["rows"] if not row["same"]][:PAGE_DRIFT_ROWS]
            group["hidden_same"] = len(group["rows"]) - len(shown) + group["more_rows"]
            group["rows"], group["more_rows"] = shown, 0
    context = {"table": partitioned, "alerts": alerts, "groups": groups}
    context["combined"], context["combined_items"] = combined_fix(partitioned)
    return render(request, "dashboard/table.html", context)


def combined_fix(partitioned: PartitionedTable) -> tuple[list, list]:
    """The table's findings fixed together, as the maintenance plan runs them; nothing
    for a dropped table, or one statement alone (its finding already shows it)."""
    if partitioned.dropped_at is not None or not partitioned.score:
        return [], []
    statements, items = table_statements(partitioned)
    merged = any(item["superseded"] for item in items)
    if len(statements) < 2 and not merged:
        return [], []
    for statement in statements:
        statement["safety_words"] = safety_words(  # type: ignore[typeddict-unknown-key]
            statement["safety"], statement["rows"], statement["bytes"]
        )
    return statements, [item for item in items if item["superseded"] or not item["sql"]]


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page, the admin's included."""
    return redirect(static("favicon.svg"), permanent=True)
