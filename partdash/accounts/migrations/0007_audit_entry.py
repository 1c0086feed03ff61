"""The audit trail's entries (partdash.accounts.audit); admins read them (docs/access.md)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.db import migrations, models


def grant(apps, schema_editor) -> None:
    """Admins read the audit trail; viewers and operators do not."""
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    config = apps.get_app_config("accounts")
    original = getattr(config, "models_module", None)  # unset in a migration
    config.models_module = original or True
    create_permissions(config, verbosity=0)
    config.models_module = original
    admins, _ = Group.objects.get_or_create(name="admins")
    admins.permissions.add(
        Permission.objects.get(content_type__app_label="accounts", codename="view_auditentry")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_group_and_retention_roles"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "object_pk",
                    models.CharField(db_index=True, max_length=255, verbose_name="object pk"),
                ),
                (
                    "object_id",
                    models.BigIntegerField(
                        blank=True, db_index=True, null=True, verbose_name="object id"
                    ),
                ),
                ("object_repr", models.TextField(verbose_name="object representation")),
                ("serialized_data", models.JSONField(null=True)),
                (
                    "action",
                    models.PositiveSmallIntegerField(
                        choices=[(0, "create"), (1, "update"), (2, "delete"), (3, "access")],
                        db_index=True,
                        verbose_name="action",
                    ),
                ),
                ("changes_text", models.TextField(blank=True, verbose_name="change message")),
                ("changes", models.JSONField(null=True, verbose_name="change message")),
                (
                    "cid",
                    models.CharField(
                        blank=True,
                        db_index=True,
                        max_length=255,
                        null=True,
                        verbose_name="Correlation ID",
                    ),
                ),
                (
                    "remote_addr",
                    models.GenericIPAddressField(
                        blank=True, null=True, verbose_name="remote address"
                    ),
                ),
                (
                    "remote_port",
                    models.PositiveIntegerField(blank=True, null=True, verbose_name="remote port"),
                ),
                (
                    "timestamp",
                    models.DateTimeField(
                        db_index=True, default=django.utils.timezone.now, verbose_name="timestamp"
                    ),
                ),
                (
                    "additional_data",
                    models.JSONField(blank=True, null=True, verbose_name="additional data"),
                ),
                (
                    "actor_email",
                    models.CharField(
                        blank=True, max_length=254, null=True, verbose_name="actor email"
                    ),
                ),
                ("username", models.CharField(blank=True, db_index=True, max_length=150)),
                ("event", models.CharField(db_index=True, max_length=32)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="actor",
                    ),
                ),
                (
                    "content_type",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="contenttypes.contenttype",
                        verbose_name="content type",
                    ),
                ),
            ],
            options={
                "verbose_name": "audit entry",
                "verbose_name_plural": "audit trail",
                "ordering": ["-timestamp", "-id"],
                "get_latest_by": "timestamp",
                "abstract": False,
            },
        ),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
