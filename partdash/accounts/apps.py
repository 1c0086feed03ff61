from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "partdash.accounts"
    label = "accounts"
    verbose_name = "Users and API tokens"

    def ready(self) -> None:
        from partdash.accounts import audit

        audit.connect()
