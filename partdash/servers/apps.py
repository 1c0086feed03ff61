from django.apps import AppConfig


class ServersConfig(AppConfig):
    name = "partdash.servers"
    label = "servers"
    verbose_name = "Monitored servers"

    def ready(self) -> None:
        from partdash.servers import checks  # noqa: F401
