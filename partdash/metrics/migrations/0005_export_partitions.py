from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0004_partition_recent"),
    ]

    operations = [
        migrations.AddField(
            model_name="partitionedtable",
            name="export_partitions",
            field=models.BooleanField(
                default=False, help_text="Show each partition's figures in /metrics."
            ),
        ),
    ]
