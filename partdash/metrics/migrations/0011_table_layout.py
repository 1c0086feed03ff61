from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0010_snapshot_pressure"),
    ]

    operations = [
        migrations.AddField(
            model_name="partitionedtable",
            name="layout",
            field=models.CharField(blank=True, max_length=40),
        ),
    ]
