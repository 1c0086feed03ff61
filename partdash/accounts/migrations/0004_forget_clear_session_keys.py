"""Sessions stored under their key in clear (Django's keys: 32 characters) are deleted:
from now on a row holds the key's 40-digit hash (partdash.accounts.sessions), and a row
in clear would let whoever holds a copy of the database log in. Their users log in again."""

from django.db import migrations
from django.db.models.functions import Length

HASHED_KEY_LENGTH = 40


def forget_clear_keys(apps, schema_editor) -> None:
    Session = apps.get_model("sessions", "Session")
    Session.objects.annotate(width=Length("session_key")).exclude(width=HASHED_KEY_LENGTH).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_hash_authtoken_keys"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forget_clear_keys, migrations.RunPython.noop)]
