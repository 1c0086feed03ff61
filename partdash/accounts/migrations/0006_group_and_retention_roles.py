"""Server groups and retention policies join the roles (docs/access.md): viewers see
them, operators and admins add, change and delete them, as they do alert rules."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

MODELS = {"servers": ("servergroup",), "metrics": ("retentionpolicy",)}
VERBS = {"viewers": ("view",), "operators": ("view", "add", "change", "delete")}
VERBS["admins"] = VERBS["operators"]


def grant(apps, schema_editor) -> None:
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for label in MODELS:
        config = apps.get_app_config(label)
        original = getattr(config, "models_module", None)  # unset in a migration
        config.models_module = original or True
        create_permissions(config, verbosity=0)
        config.models_module = original
    for role, verbs in VERBS.items():
        group, _ = Group.objects.get_or_create(name=role)
        for label, models in MODELS.items():
            for model in models:
                for verb in verbs:
                    group.permissions.add(
                        Permission.objects.get(
                            content_type__app_label=label, codename=f"{verb}_{model}"
                        )
                    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_channel_roles"),
        ("servers", "0009_server_groups"),
        ("metrics", "0012_retention_policy"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
