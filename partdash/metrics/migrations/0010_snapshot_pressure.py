from django.db import migrations


class Migration(migrations.Migration):
    """`ServerSnapshot.health` held the server's pressure: named for what it holds. A
    rename, so the stored pressure is kept."""

    dependencies = [
        ("metrics", "0009_history_rollups"),
    ]

    operations = [
        migrations.RenameField(
            model_name="serversnapshot",
            old_name="health",
            new_name="pressure",
        ),
    ]
