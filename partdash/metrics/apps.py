from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "partdash.metrics"
    label = "metrics"
    verbose_name = "Snapshots"

    def ready(self) -> None:
        from partdash.accounts import audit
        from partdash.lib import store_sessions
        from partdash.metrics import checks, policies  # noqa: F401 (checks: registered)
        from partdash.metrics.models import RetentionPolicy

        policies.connect()
        store_sessions.connect()
        audit.register(RetentionPolicy)
