"""The schema and name of each table as search compares them (no accents, no case), for
the tables stored before: later ones are folded as they are saved."""

from django.db import migrations, models

from partdash.lib.folding import folded


def fold_stored_names(apps, schema_editor) -> None:
    PartitionedTable = apps.get_model("metrics", "PartitionedTable")
    changed = []
    for table in PartitionedTable.objects.only("id", "schema", "name").iterator(chunk_size=2000):
        table.folded_schema, table.folded_name = folded(table.schema), folded(table.name)
        changed.append(table)
    PartitionedTable.objects.bulk_update(changed, ["folded_schema", "folded_name"], 2000)


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0007_unmonitored_tables"),
    ]

    operations = [
        migrations.AddField(
            model_name="partitionedtable",
            name="folded_name",
            field=models.CharField(blank=True, editable=False, max_length=200),
        ),
        migrations.AddField(
            model_name="partitionedtable",
            name="folded_schema",
            field=models.CharField(blank=True, editable=False, max_length=200),
        ),
        migrations.RunPython(fold_stored_names, migrations.RunPython.noop),
    ]
