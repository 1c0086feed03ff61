"""The three roles as groups (README, "Access"): viewers read; operators also register and
edit servers, poll, edit alert rules and silences, and choose the tables whose partitions
/metrics exports; admins also manage users and
tokens. Superusers hold every permission whatever their groups."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

VIEW = ["servers.view_server", "alerts.view_alertrule", "alerts.view_silence"]
VIEW += ["alerts.view_alert", "alerts.view_notification", "metrics.view_partitionedtable"]
OPERATE = [
    f"{app}.{verb}_{model}"
    for app, model in (("servers", "server"), ("alerts", "alertrule"), ("alerts", "silence"))
    for verb in ("add", "change", "delete")
] + ["servers.poll_server", "metrics.change_partitionedtable"]  # per-partition export
ADMINISTER = [
    f"{app}.{verb}_{model}"
    for app, model in (("auth", "user"), ("auth", "group"), ("accounts", "apitoken"))
    for verb in ("view", "add", "change", "delete")
]
ROLES = {
    "viewers": VIEW,
    "operators": VIEW + OPERATE,
    "admins": VIEW + OPERATE + ADMINISTER,
}


def create_roles(apps, schema_editor) -> None:
    # Permissions are made after migrations (post_migrate); a fresh database needs them now.
    for app_config in apps.get_app_configs():
        original = getattr(app_config, "models_module", None)  # unset in a migration
        app_config.models_module = original or True
        create_permissions(app_config, verbosity=0)
        app_config.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        for dotted in codenames:
            app_label, codename = dotted.split(".")
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("servers", "0003_server_poll_permission"),
        ("alerts", "0001_initial"),
        ("metrics", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
