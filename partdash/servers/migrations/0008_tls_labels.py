# Labels only ("TLS mode", not Django's "Tls mode" from the field name): no schema change.

from django.db import migrations, models

TLS_MODES = [
    ("disabled", "Disabled"),
    ("preferred", "Preferred (encrypt, no verification)"),
    ("verify_ca", "Verify CA"),
    ("verify_identity", "Verify CA and host name"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("servers", "0007_server_tls_certificate"),
    ]

    operations = [
        migrations.AlterField(
            model_name="server",
            name="tls_checked_at",
            field=models.DateTimeField(
                blank=True, editable=False, null=True, verbose_name="TLS checked at"
            ),
        ),
        migrations.AlterField(
            model_name="server",
            name="tls_mode",
            field=models.CharField(
                choices=TLS_MODES, default="preferred", max_length=20, verbose_name="TLS mode"
            ),
        ),
        migrations.AlterField(
            model_name="server",
            name="tls_offered",
            field=models.BooleanField(
                blank=True, editable=False, null=True, verbose_name="TLS offered"
            ),
        ),
    ]
