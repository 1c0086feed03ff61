from django.urls import path

from partdash.dashboard import alerts, search, views

urlpatterns = [
    path("", views.fleet, name="fleet"),
    path("servers/<int:server_id>/", views.server, name="server"),
    path("tables/<int:table_id>/", views.table, name="table"),
    path("alerts/", alerts.alerts, name="alerts"),
    path("alerts/silence/", alerts.silence, name="silence"),
    path("search/", search.search, name="search"),
]
