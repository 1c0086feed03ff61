from rest_framework.routers import DefaultRouter

from partdash.api.views import ServerViewSet, TableViewSet

router = DefaultRouter()
router.register("servers", ServerViewSet)
router.register("tables", TableViewSet, basename="table")

urlpatterns = router.urls
