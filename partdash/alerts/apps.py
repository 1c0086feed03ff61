from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "partdash.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        # The built-in transports register themselves (`transports.TRANSPORTS`).
        from partdash.alerts import channel_kinds  # noqa: F401
