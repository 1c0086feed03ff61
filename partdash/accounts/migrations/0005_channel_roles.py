"""Alert channels and maintenance windows join the roles (README, "Access"): viewers see
them (a channel's name, kind and rules; never its URL), operators add, change, delete
(and test) them, as they do alert rules and silences."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

MODELS = ("channel", "maintenancewindow")
VIEW = [f"view_{model}" for model in MODELS]
WRITE = [f"{verb}_{model}" for model in MODELS for verb in ("add", "change", "delete")]
ROLES = {"viewers": VIEW, "operators": VIEW + WRITE, "admins": VIEW + WRITE}


def grant(apps, schema_editor) -> None:
    alerts = apps.get_app_config("alerts")
    original = getattr(alerts, "models_module", None)  # unset in a migration
    alerts.models_module = original or True
    create_permissions(alerts, verbosity=0)
    alerts.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        for codename in codenames:
            group.permissions.add(
                Permission.objects.get(content_type__app_label="alerts", codename=codename)
            )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_forget_clear_session_keys"),
        ("alerts", "0003_channels_acks_windows"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
