"""Which tables a retention policy reaches on a real MariaDB with lower_case_table_names=0,
where `events` and `Events` are two tables and a schema may be named `s.keep`: a pattern's
schema part matches the schema and its table part the table, each alone, and case counts.
Before, `s.events` also proposed DROP PARTITION on `s.Events`, and `s.*` on `s.keep`."""

import pytest

from partdash.lib.quoting import identifier
from partdash.metrics.models import PartitionedTable, RetentionPolicy
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db


def range_table(schema: str, name: str) -> list[str]:
    """Three bounded partitions of ten rows each, then a catch-all."""
    table = f"{identifier(schema)}.{identifier(name)}"
    return [
        f"CREATE TABLE {table} (id INT PRIMARY KEY) PARTITION BY RANGE (id) ("
        "PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), "
        "PARTITION p2 VALUES LESS THAN (30), PARTITION pmax VALUES LESS THAN MAXVALUE)",
        f"INSERT INTO {table} SELECT seq FROM seq_0_to_29",
        f"ANALYZE TABLE {table}",
    ]


@pytest.fixture
def dotted_schema(mariadb, new_schema):
    """A schema and its dotted sibling `<schema>.keep` (dropped after the test)."""
    schema = new_schema(mariadb)
    dotted = f"{schema}.keep"
    mariadb.execute(f"CREATE DATABASE {identifier(dotted)}")
    yield schema, dotted
    mariadb.execute(f"DROP DATABASE IF EXISTS {identifier(dotted)}")


def retention_of(server, schema: str, name: str) -> dict | None:
    table = PartitionedTable.objects.get(server=server, schema=schema, name=name)
    return table.health.get("retention")


def test_policies_reach_the_schema_and_table_they_name_case_and_all(
    mariadb, dotted_schema, make_server
):
    schema, dotted = dotted_schema
    statements = range_table(schema, "events") + range_table(schema, "Events")
    run(mariadb, schema, *statements, *range_table(dotted, "events"))
    server = make_server(mariadb)
    exact = RetentionPolicy.objects.create(pattern=f"{schema}.events", keep_partitions=1)
    whole = RetentionPolicy.objects.create(pattern=f"{schema}.*", keep_partitions=2)
    report = poll_server(server)
    assert report.ok, report.error
    assert server.snapshots.first().variables["lower_case_table_names"] == "0"

    events = retention_of(server, schema, "events")
    assert events["policy_id"] == exact.pk  # the most specific, as before
    # `Events` is another table here: `s.events` does not reach it, `s.*` does.
    assert retention_of(server, schema, "Events")["policy_id"] == whole.pk
    # `<schema>.keep` is another schema: `<schema>.*` does not reach into it.
    assert retention_of(server, dotted, "events") is None

    findings = {
        (t.schema, t.name): [f for f in t.health["findings"] if f["kind"] == "retention"]
        for t in PartitionedTable.objects.filter(server=server, schema__in=[schema, dotted])
    }
    assert findings[(dotted, "events")] == []
    (drop,) = findings[(schema, "Events")]
    assert drop["fix"]["sql"] == f"ALTER TABLE `{schema}`.`Events` DROP PARTITION `p0`"
