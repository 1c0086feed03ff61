"""The search page: tables across the fleet whose `schema.table` contains `?q=`, ignoring
accents and case (`partdash.metrics.search`)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from partdash.metrics.search import DEFAULT_LIMIT, MAX_QUERY_LENGTH, search_tables


@login_required
def search(request: HttpRequest) -> HttpResponse:
    """Server-rendered, so a result list can be bookmarked and shared as a URL."""
    text = request.GET.get("q", "").strip()
    context = {"q": text, "limit": DEFAULT_LIMIT, "found": None, "error": ""}
    if len(text) > MAX_QUERY_LENGTH or "\x00" in text:
        context["error"] = f"Search for at most {MAX_QUERY_LENGTH} characters."
        return render(request, "dashboard/search.html", context, status=400)
    if text:
        context["found"] = search_tables(text, DEFAULT_LIMIT)
    return render(request, "dashboard/search.html", context)
