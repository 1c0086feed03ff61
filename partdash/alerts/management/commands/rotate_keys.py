"""`manage.py rotate_keys`: re-encrypt every stored secret under the first key: the
servers' passwords and the alert channels' URLs. (Here rather than in servers/: the
channels are alerts', above it.)"""

from django.db import transaction

from partdash.alerts.models import Channel
from partdash.lib import secrets
from partdash.lib.commands import PartdashCommand
from partdash.servers.models import Server


class Command(PartdashCommand):
    help = (
        "Re-encrypt stored passwords and alert channel URLs with the first key of "
        "PARTDASH_ENCRYPTION_KEYS."
    )

    def handle(self, *args, **options) -> None:
        rotated = {"password(s)": 0, "channel URL(s)": 0}
        stored = (
            ("password(s)", Server, "password_token"),
            ("channel URL(s)", Channel, "url_token"),
        )
        with transaction.atomic():
            for what, model, field in stored:
                for row in model.objects.exclude(**{field: ""}).select_for_update():
                    try:
                        token = secrets.rotate(getattr(row, field))
                    except secrets.SecretError as exc:
                        self.fail(f"{row.name}: {exc}; nothing was changed", code=1)
                    model.objects.filter(pk=row.pk).update(**{field: token})
                    rotated[what] += 1
        channels = rotated["channel URL(s)"]
        also = f" and {channels} channel URL(s)" if channels else ""
        self.stdout.write(
            f"re-encrypted {rotated['password(s)']} password(s){also} with the primary key"
        )
