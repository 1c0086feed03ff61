from rest_framework.routers import DefaultRouter

from partdash.api.views import ServerViewSet

router = DefaultRouter()
router.register("servers", ServerViewSet)

urlpatterns = router.urls
