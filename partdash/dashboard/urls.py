from django.urls import path

from partdash.dashboard import views

urlpatterns = [
    path("", views.fleet, name="fleet"),
    path("servers/<int:server_id>/", views.server, name="server"),
    path("tables/<int:table_id>/", views.table, name="table"),
]
