from django.contrib.auth import views as auth_views
from django.urls import path

from partdash.accounts.views import LoginPage, tokens
from partdash.dashboard import alerts, plan, search, views

urlpatterns = [
    path("login/", LoginPage.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("tokens/", tokens, name="tokens"),
    path("", views.fleet, name="fleet"),
    path("servers/<int:server_id>/", views.server, name="server"),
    path("tables/<int:table_id>/", views.table, name="table"),
    path("alerts/", alerts.alerts, name="alerts"),
    path("alerts/silence/", alerts.silence, name="silence"),
    path("alerts/test/", alerts.send_test, name="send-test-alert"),
    path("alerts/ack/<str:token>/", alerts.acknowledge, name="ack-alert"),
    path("alerts/<int:alert_id>/", alerts.alert_history, name="alert"),
    path("search/", search.search, name="search"),
    path("plan/", plan.plan, name="plan"),
]
