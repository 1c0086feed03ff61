from django.apps import AppConfig


class PollingConfig(AppConfig):
    """The conductor above the stages: scheduling, the Celery tasks, the poll service
    (collect, store, analyse, evaluate alerts) and `manage.py poll`. It has no models;
    it hooks itself onto the servers it polls (a saved server is polled at once, the
    admin's Poll now), so `servers` knows nothing of polling."""

    name = "partdash.polling"
    label = "polling"
    verbose_name = "Polling"

    def ready(self) -> None:
        from partdash.polling import signals  # noqa: F401  (connects post_save)
