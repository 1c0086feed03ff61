"""Tables stored before names were folded for search are folded by the migration that
added the columns (metrics 0008); later ones as they are saved."""

import importlib

import pytest
from django.apps import apps

from partdash.metrics.models import PartitionedTable
from tests import builders

pytestmark = pytest.mark.django_db

migration = importlib.import_module("partdash.metrics.migrations.0008_table_folded_names")


def test_a_saved_table_is_folded():
    table = builders.table(builders.server("db1"), schema="Données", name="Commandes_Été")
    assert (table.folded_schema, table.folded_name) == ("donnees", "commandes_ete")


def test_the_migration_folds_the_tables_stored_before_it():
    server = builders.server("db1")
    builders.table(server, schema="Ventes", name="commandes_été")
    builders.table(server, schema="shop", name="ﬁscal_straße")
    PartitionedTable.objects.update(folded_schema="", folded_name="")  # as stored before

    migration.fold_stored_names(apps, None)

    assert sorted(PartitionedTable.objects.values_list("folded_schema", "folded_name")) == [
        ("shop", "fiscal_strasse"),
        ("ventes", "commandes_ete"),
    ]
