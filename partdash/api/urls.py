from django.urls import path
from rest_framework.routers import DefaultRouter

from partdash.api.alerts import (
    AlertRuleViewSet,
    AlertViewSet,
    NotificationViewSet,
    SilenceViewSet,
)
from partdash.api.search import SearchView
from partdash.api.views import FindingsView, ServerViewSet, TableViewSet

router = DefaultRouter()
router.register("servers", ServerViewSet)
router.register("tables", TableViewSet, basename="table")
router.register("alerts", AlertViewSet, basename="alert")
router.register("alert-rules", AlertRuleViewSet)
router.register("silences", SilenceViewSet)
router.register("notifications", NotificationViewSet)

urlpatterns = [
    path("findings/", FindingsView.as_view(), name="findings"),
    path("search/", SearchView.as_view(), name="api-search"),
    *router.urls,
]
