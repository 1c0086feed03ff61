"""Top-level routes: dashboard pages, the admin, the REST API and its schema."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from partdash.dashboard.views import favicon

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/v1/", include("partdash.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("", include("partdash.dashboard.urls")),
]
