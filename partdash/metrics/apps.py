from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "partdash.metrics"
    label = "metrics"
    verbose_name = "Snapshots"

    def ready(self) -> None:
        from partdash.metrics import policies

        policies.connect()
