"""Top-level routes: dashboard pages, the admin, the REST API, its schema and its docs."""

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from partdash.api.errors import unknown_route
from partdash.dashboard.views import favicon
from partdash.prometheus.views import MetricsView

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    # OpenID Connect sign-on (partdash.accounts.oidc): 404 unless PARTDASH_OIDC_ISSUER is set.
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("api/v1/", include("partdash.api.urls")),
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI from local static files (drf-spectacular-sidecar), for people who are
    # logged in: the login page rather than a bare 403. No Redoc: its bundle loads its
    # logo from its vendor's CDN whatever the settings, and its page Google's fonts. The
    # split view serves its start-up script as a file, so the page runs no inline script.
    path(
        "api/docs/",
        login_required(SpectacularSwaggerSplitView.as_view(url_name="schema")),
        name="api-docs",
    ),
    re_path(r"^api/", unknown_route),  # JSON, not the pages' 404
    path("", include("partdash.dashboard.urls")),
]
