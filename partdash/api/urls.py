from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from partdash.api.alerts import (
    AlertRuleViewSet,
    AlertViewSet,
    ChannelViewSet,
    MaintenanceWindowViewSet,
    NotificationViewSet,
    SilenceViewSet,
)
from partdash.api.audit import AuditView
from partdash.api.errors import unknown_route
from partdash.api.groups import ServerGroupViewSet
from partdash.api.plan import MaintenancePlanView, ServerPlanScriptView
from partdash.api.retention import RetentionPolicyViewSet
from partdash.api.search import SearchView
from partdash.api.views import FindingsView, ServerViewSet, TableViewSet

# Ids are 1 to 18 digits (within a 64-bit column): anything else is no route, a JSON 404.
ID = r"[0-9]{1,18}"


class IdRouter(DefaultRouter):
    def get_lookup_regex(self, viewset, lookup_prefix=""):
        kwarg = getattr(viewset, "lookup_url_kwarg", None) or getattr(viewset, "lookup_field", "pk")
        return f"(?P<{lookup_prefix}{kwarg}>{getattr(viewset, 'lookup_value_regex', ID)})"


router = IdRouter()
router.register("servers", ServerViewSet)
router.register("server-groups", ServerGroupViewSet)
router.register("tables", TableViewSet, basename="table")
router.register("alerts", AlertViewSet, basename="alert")
router.register("alert-rules", AlertRuleViewSet)
router.register("silences", SilenceViewSet)
router.register("channels", ChannelViewSet)
router.register("maintenance-windows", MaintenanceWindowViewSet)
router.register("notifications", NotificationViewSet)
router.register("retention-policies", RetentionPolicyViewSet)

urlpatterns = [
    path("findings/", FindingsView.as_view(), name="findings"),
    path("audit/", AuditView.as_view(), name="audit"),
    path("search/", SearchView.as_view(), name="api-search"),
    path("maintenance-plan/", MaintenancePlanView.as_view(), name="maintenance-plan"),
    re_path(
        rf"^servers/(?P<pk>{ID})/maintenance-plan\.sql$",
        ServerPlanScriptView.as_view(),
        name="server-maintenance-plan-sql",
    ),
    *router.urls,
    re_path(r"^.*$", unknown_route),
]
