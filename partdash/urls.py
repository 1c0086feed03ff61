"""Top-level routes: dashboard pages, the admin, the REST API and its schema."""

from django.contrib import admin
from django.templatetags.static import static
from django.views.generic import RedirectView
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

urlpatterns = [
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("api/v1/", include("partdash.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("", include("partdash.dashboard.urls")),
]
