"""`manage.py rotate_keys`: re-encrypt every stored password under the first key."""

from django.db import transaction

from partdash.lib import secrets
from partdash.lib.commands import PartdashCommand
from partdash.servers.models import Server


class Command(PartdashCommand):
    help = "Re-encrypt stored passwords with the first key of PARTDASH_ENCRYPTION_KEYS."

    def handle(self, *args, **options) -> None:
        rotated = 0
        with transaction.atomic():
            for server in Server.objects.exclude(password_token="").select_for_update():
                try:
                    token = secrets.rotate(server.password_token)
                except secrets.SecretError as exc:
                    self.fail(f"{server.name}: {exc}; nothing was changed", code=1)
                Server.objects.filter(pk=server.pk).update(password_token=token)
                rotated += 1
        self.stdout.write(f"re-encrypted {rotated} password(s) with the primary key")
