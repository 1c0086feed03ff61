from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "partdash.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        # The built-in transports register themselves (`transports.TRANSPORTS`).
        from partdash.accounts import audit
        from partdash.alerts import channel_kinds  # noqa: F401
        from partdash.alerts.models import (
            Acknowledgement,
            AlertRule,
            Channel,
            MaintenanceWindow,
            Silence,
        )

        audit.register(AlertRule, m2m=["channels"])
        audit.register(Silence)
        audit.register(Acknowledgement)
        audit.register(Channel, secrets=["url_token"], ignore=["announced_at"])
        audit.register(MaintenanceWindow, ignore=["upcoming_starts"])
