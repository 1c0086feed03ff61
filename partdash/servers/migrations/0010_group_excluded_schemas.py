from django.db import migrations, models

import partdash.servers.models


class Migration(migrations.Migration):
    """Each group's schemas left out of its comparison; existing groups get the default
    (partdash_demo and the servers' own schemas)."""

    dependencies = [
        ("servers", "0009_server_groups"),
    ]

    operations = [
        migrations.AddField(
            model_name="servergroup",
            name="excluded_schemas",
            field=models.CharField(
                blank=True,
                default="partdash_demo, sys, mysql, performance_schema, information_schema",
                help_text=(
                    "Schemas left out of the comparison, comma-separated, with * ? [..] "
                    "wildcards, any case (demo_*, sys); empty: every schema is compared."
                ),
                max_length=1000,
                validators=[partdash.servers.models.validate_schema_patterns],
            ),
        ),
    ]
