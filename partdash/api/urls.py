from django.urls import path
from rest_framework.routers import DefaultRouter

from partdash.api.views import FindingsView, ServerViewSet, TableViewSet

router = DefaultRouter()
router.register("servers", ServerViewSet)
router.register("tables", TableViewSet, basename="table")

urlpatterns = [path("findings/", FindingsView.as_view(), name="findings"), *router.urls]
