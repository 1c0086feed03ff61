"""The `pruning` finding after a real poll (issue 40's proof, through the product): on a
MariaDB with performance_schema ON, the proof's workload runs, then one poll reads the
digests, judges and stores them, and analyses the tables: the RANGE-by-day table and the
HASH table get a `pruning` finding naming exactly their statements that read every
partition, the third table, read only by day, gets none, /metrics counts them, and the
`pruning` alert fires on the two after a second poll (`for_polls` 2)."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from partdash.alerts.models import Alert
from partdash.metrics.models import PartitionedTable
from partdash.polling.service import poll_server
from partdash.prometheus.exposition import exposition
from tests.health.pruning_workload import SHAPES, run_workload

pytestmark = pytest.mark.django_db


def unpruned_texts(folded: dict[str, str], table: str) -> list[str]:
    return [
        " ".join(folded[name].split())
        for name, (on, _, expected) in SHAPES.items()
        if on == table and expected[0] == "all"
    ]


def test_a_poll_finds_the_tables_read_without_pruning(mariadb_ps, new_schema, make_server):
    schema = new_schema(mariadb_ps)
    folded = run_workload(mariadb_ps, schema)
    server = make_server(mariadb_ps, name="pruning")

    assert poll_server(server).ok

    tables = {
        t.name: t for t in PartitionedTable.objects.live().filter(server=server, schema=schema)
    }
    for name in ("orders", "carts"):
        health = tables[name].health
        (finding,) = [f for f in health["findings"] if f["kind"] == "pruning"]
        unpruned = unpruned_texts(folded, name)
        assert health["pruning"]["unpruned"] == len(unpruned)
        assert finding["message"].startswith(f"{len(unpruned)} statement(s) read all")
        for text in unpruned:
            assert text in finding["fix"]["advice"]
        assert finding["fix"]["sql"] is None
        assert {w["text"].strip() for w in health["pruning"]["worst"]} == {
            t.strip() for t in unpruned
        }
    visits = tables["visits"].health
    assert not [f for f in visits["findings"] if f["kind"] == "pruning"]
    assert visits["pruning"]["unpruned"] == 0 and visits["pruning"]["statements"] == 2

    families = {f.name: f for f in text_string_to_metric_families(exposition().decode())}
    counted = {
        s.labels["table"]: s.value
        for s in families["partdash_table_unpruned_statements"].samples
        if s.labels["schema"] == schema
    }
    assert counted == {"orders": 3.0, "carts": 1.0, "visits": 0.0}

    assert poll_server(server).ok
    fired = Alert.objects.filter(server=server, rule="pruning", state="firing", schema=schema)
    assert sorted(fired.values_list("table", flat=True)) == ["carts", "orders"]
    for alert in fired:
        share = tables[alert.table].health["pruning"]["share"]
        assert alert.value == pytest.approx(share)
        assert alert.severity == ("critical" if share >= 0.5 else "warning")
