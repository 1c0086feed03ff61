"""Keys of DRF's authtoken (partdash before hashed tokens) become hashed ApiTokens, and
leave the old table: it kept them in clear. The same keys keep working."""

import hashlib

from django.db import migrations
from django.utils import timezone

OLD_TABLE = "authtoken_token"


def hash_old_keys(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("accounts", "ApiToken")
    quoted = connection.ops.quote_name(OLD_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {connection.ops.quote_name('key')}, user_id FROM {quoted}")
        for key, user_id in cursor.fetchall():
            ApiToken.objects.get_or_create(
                key_hash=hashlib.sha256(key.encode()).hexdigest(),
                defaults={
                    "user_id": user_id,
                    "name": "from authtoken",
                    "prefix": key[:10],
                    "created_at": timezone.now(),
                },
            )
        cursor.execute(f"DELETE FROM {quoted}")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_roles")]

    operations = [migrations.RunPython(hash_old_keys, migrations.RunPython.noop)]
