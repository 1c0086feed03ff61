"""Channel errors stored before issue 37 may quote the far side (a banner, a service's
`error` field): viewers read them in /api/v1/notifications/ and alert histories. Since
0009 a channel's failure is stored as a class ("connection refused", "HTTP 401"); the
errors stored before are replaced by one that says the detail is withheld."""

from django.db import migrations
from django.db.models import Q

WITHHELD = "failed (the detail stored before partdash told failures as classes is withheld)"


def withhold_old_channel_errors(apps, schema_editor):
    Notification = apps.get_model("alerts", "Notification")
    by_channel = Q(channel__isnull=False) | ~Q(channel_name="")
    Notification.objects.filter(by_channel).exclude(last_error="").update(last_error=WITHHELD)


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0009_deliveries_outlive_their_channel"),
    ]

    operations = [
        migrations.RunPython(withhold_old_channel_errors, migrations.RunPython.noop),
    ]
