"""`manage.py ensureadmin`: create the admin account once and print its password once."""

import os
import secrets

from django.contrib.auth import get_user_model

from partdash.accounts import audit
from partdash.lib.commands import PartdashCommand


class Command(PartdashCommand):
    help = "Create the superuser ($PARTDASH_ADMIN_USER, default admin) if it does not exist."

    @audit.from_command
    def handle(self, *args, **options) -> None:
        username = os.environ.get("PARTDASH_ADMIN_USER", "admin")
        users = get_user_model().objects
        if users.filter(username=username).exists():
            self.stdout.write(f"admin account {username!r} exists (password unchanged)")
            return
        password = os.environ.get("PARTDASH_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        users.create_superuser(username=username, email="", password=password)
        if os.environ.get("PARTDASH_ADMIN_PASSWORD"):
            self.stdout.write(
                f"created admin account {username!r} (password from PARTDASH_ADMIN_PASSWORD)"
            )
        else:
            self.stdout.write(f"created admin account {username!r} with password: {password}")
            self.stdout.write("this password is shown once; change it in the admin")
