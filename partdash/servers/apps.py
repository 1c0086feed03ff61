from django.apps import AppConfig


class ServersConfig(AppConfig):
    name = "partdash.servers"
    label = "servers"
    verbose_name = "Monitored servers"

    def ready(self) -> None:
        from partdash.accounts import audit
        from partdash.servers import checks  # noqa: F401
        from partdash.servers.models import LATEST_POLL_FIELDS, Server, ServerGroup

        # What polls write (with UPDATEs of their own) is the server's state, not a change.
        audit.register(Server, secrets=["password_token"], ignore=list(LATEST_POLL_FIELDS))
        audit.register(ServerGroup, m2m=["servers"])
