"""The statement digests source on a real MariaDB with performance_schema ON: what a
poll reads of events_statements_summary_by_digest (the digest text with `?`, the
counters), and, for a server opted in, the partitions EXPLAIN PARTITIONS lists for a
recent run of each statement (the statement history's consumer ON), as the server's own
EXPLAIN of that run lists them; with the statements_digest consumer OFF, the poll, Test
connection and the capability panel give the same fix, on every poll."""

import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.mysql.catalogue import DIGEST_CONSUMER_FIX
from partdash.mysql.connection import open_session, target_for
from partdash.mysql.probe import probe
from partdash.polling.service import poll_server
from tests.mysql.test_catalogue import pairs, poll_pairs
from tests.services import MariaDB
from tests.sql import new_schema_on, run

pytestmark = pytest.mark.django_db

OPTIONS = {
    "performance_schema": "ON",
    "performance_schema_consumer_events_statements_current": "ON",
    "performance_schema_consumer_events_statements_history_long": "ON",
}
DAYS = (
    "CREATE TABLE days (d DATE NOT NULL, customer INT NOT NULL, v INT, "
    "PRIMARY KEY (d, customer)) PARTITION BY RANGE (TO_DAYS(d)) ("
    + ", ".join(
        f"PARTITION p{i} VALUES LESS THAN (TO_DAYS('2026-01-{i + 2:02d}'))" for i in range(6)
    )
    + ", PARTITION pmax VALUES LESS THAN MAXVALUE)"
)
FILL = "INSERT INTO days SELECT '2026-01-01' + INTERVAL (seq % 7) DAY, seq, seq FROM seq_1_to_700"


@pytest.fixture(scope="module")
def instance():
    with MariaDB(OPTIONS) as server:
        yield server


def explain_count(instance, schema: str, statement: str) -> int:
    ((*_, partitions),) = [
        (row[2], row[3]) for row in run(instance, schema, f"EXPLAIN PARTITIONS {statement}")
    ]
    return len(partitions.split(","))


def by_text(collection, fragment: str):
    (digest,) = [d for d in collection.statements if fragment in d.text]
    return digest


def test_a_poll_reads_the_digests_and_explains_a_recent_run_of_each(instance, make_server):
    schema = new_schema_on(instance)
    run(instance, schema, DAYS, FILL)
    by_customer = [f"SELECT * FROM days WHERE customer = {n}" for n in range(1, 9)]
    by_day = [f"SELECT * FROM days WHERE d = '2026-01-0{n}'" for n in range(1, 6)]
    run(instance, schema, *by_customer, *by_day)
    server = make_server(instance, name="digests", explain_statements=True)

    with open_session(target_for(server)) as session:
        collection = collect(session, CollectRequest(statements_since=0, explain=True))

    customer = by_text(collection, "`customer` = ?")
    day = by_text(collection, "`d` = ?")
    assert customer.text.rstrip() == "SELECT * FROM `days` WHERE `customer` = ?"
    assert (customer.calls, day.calls) == (8, 5)
    assert customer.rows_examined == 8 * 700 and customer.micros > 0
    assert customer.schema == schema and customer.last_seen >= customer.first_seen > 0
    assert "= 1" not in repr(collection.statements)  # no literal kept
    ((read,),) = [collection.plans[customer.digest]]
    assert (read.table, read.partitions) == (
        "days",
        explain_count(instance, schema, by_customer[0]),
    )
    assert read.partitions == 7
    ((read,),) = [collection.plans[day.digest]]
    assert read.partitions == explain_count(instance, schema, by_day[-1]) == 1


def test_only_digests_seen_since_the_watermark_are_read(instance, make_server):
    schema = new_schema_on(instance)
    run(instance, schema, DAYS, "SELECT COUNT(*) FROM days WHERE v = 3")
    server = make_server(instance, name="watermark")
    with open_session(target_for(server)) as session:
        first = collect(session, CollectRequest(statements_since=0))
        later = collect(session, CollectRequest(statements_since=first.facts.clock + 3600))

    assert any("`v` = ?" in d.text for d in first.statements)
    assert later.statements == []
    assert later.plans == {}  # not opted in


def test_a_digest_consumer_off_is_one_fix_in_the_poll_test_connection_and_the_panel(
    make_server, admin_client
):
    options = {"performance_schema": "ON", "performance_schema_consumer_statements_digest": "OFF"}
    with MariaDB(options) as instance:
        server = make_server(instance, name="no-digests")
        first = poll_server(server)  # reads the digests: none, and the consumer is OFF
        second = poll_server(server)  # not due: says what the read found
        tested = probe(target_for(server))
    panel = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()["capabilities"]

    expected = {("statements", DIGEST_CONSUMER_FIX)}
    assert poll_pairs(server) == pairs(tested.sources) == pairs(panel) == expected
    (statements,) = [entry for entry in panel if entry["source"] == "statements"]
    assert (statements["state"], statements["causes"]) == ("missing", ["setting"])
    line = "the statements_digest consumer is OFF (which statements read every partition): "
    assert first.warnings == second.warnings == [line + DIGEST_CONSUMER_FIX]
