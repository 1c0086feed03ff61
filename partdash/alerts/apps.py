from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "partdash.alerts"
    label = "alerts"
    verbose_name = "Alerts"
