"""A channel keeps what may be shown of its URL (scheme and host) beside the encrypted URL,
so the admin shows a channel without decrypting it (issue 37, point 3)."""

from django.db import migrations, models


def show_existing(apps, schema_editor) -> None:
    from partdash.lib import secrets
    from partdash.lib.redacted import scheme_and_host

    Channel = apps.get_model("alerts", "Channel")
    for channel in Channel.objects.exclude(url_token=""):
        try:
            url = secrets.decrypt(channel.url_token)
        except secrets.SecretError:
            continue  # its key is gone: shown blank, as before it sends nothing
        channel.url_shown = scheme_and_host(url)
        channel.save(update_fields=["url_shown"])


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0010_channel_errors_as_classes"),
    ]

    operations = [
        migrations.AddField(
            model_name="channel",
            name="url_shown",
            field=models.CharField(blank=True, editable=False, max_length=300),
        ),
        migrations.RunPython(show_existing, migrations.RunPython.noop),
    ]
