from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "partdash.dashboard"
    label = "dashboard"
