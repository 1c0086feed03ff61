"""Statement digests through a whole poll on a real MariaDB with performance_schema ON:
stored per table with the verdict of `health.pruning` (or the server's EXPLAIN, opted
in), read again only when due and only what was seen since, served by
`/api/v1/tables/{id}/statements/` worst first, and never holding a literal."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.metrics.models import PartitionedTable, StatementDigest, StatementRead
from partdash.polling.service import poll_server
from tests.collector.test_statements_on_mariadb import DAYS, FILL, OPTIONS
from tests.services import MariaDB
from tests.sql import new_schema_on, run

pytestmark = pytest.mark.django_db

HASHED = (
    "CREATE TABLE keyed (id INT NOT NULL PRIMARY KEY, customer INT, v INT) "
    "PARTITION BY HASH (id) PARTITIONS 4"
)
FILL_KEYED = "INSERT INTO keyed SELECT seq, seq % 50, seq FROM seq_1_to_400"
BY_CUSTOMER = [f"SELECT * FROM days WHERE customer = {n}" for n in range(1, 6)]
BY_DAY = [f"SELECT * FROM days WHERE d = '2026-01-0{n}'" for n in range(1, 6)]
BY_KEY = [f"SELECT v FROM keyed WHERE id = {n}" for n in range(10, 15)]
UPDATE_BY_KEY = [f"UPDATE keyed SET v = v + 1 WHERE id = {n}" for n in range(20, 25)]
DELETE_BY_CUSTOMER = [f"DELETE FROM keyed WHERE customer = {n}" for n in range(60, 63)]
LITERALS = ("'2026-01-0", "customer = 1", "id = 10")


@pytest.fixture(scope="module")
def instance():
    with MariaDB(OPTIONS) as server:
        yield server


def workload(instance, schema: str) -> None:
    run(instance, schema, DAYS, FILL, HASHED, FILL_KEYED)
    run(instance, schema, *BY_CUSTOMER, *BY_DAY, *BY_KEY)


def stored(schema: str, table: str) -> dict[str, StatementDigest]:
    rows = StatementDigest.objects.filter(table__schema=schema, table__name=table)
    # MariaDB quotes some names and writes others as keywords (`ID`): compared bare.
    return {" ".join(row.text.replace("`", "").lower().split()): row for row in rows}


def explain_count(instance, schema: str, statement: str) -> int:
    ((*_, partitions),) = [
        (r[2], r[3]) for r in run(instance, schema, f"EXPLAIN PARTITIONS {statement}")
    ]
    return len(partitions.split(","))


def test_a_poll_stores_each_digest_per_table_with_its_verdict(instance, make_server, viewer_api):
    schema = new_schema_on(instance)
    workload(instance, schema)
    server = make_server(instance, name="stmts")

    report = poll_server(server)

    assert report.ok, report.error
    days, keyed = stored(schema, "days"), stored(schema, "keyed")
    customer, day, key = (
        days["select * from days where customer = ?"],
        days["select * from days where d = ?"],
        keyed["select v from keyed where id = ?"],
    )
    assert (customer.prunes, customer.partitions_read, customer.partitions_total) == ("all", 7, 7)
    assert (day.prunes, day.partitions_read) == ("one", 1)
    assert (key.prunes, key.partitions_read, key.partitions_total) == ("one", 1, 4)
    assert {row.how for row in (customer, day, key)} == {"parsed"}
    assert (customer.calls, day.calls, key.calls) == (5, 5, 5)
    assert customer.rows_examined == 5 * 700 and customer.seconds > 0
    for statement, count in ((BY_CUSTOMER[0], 7), (BY_DAY[0], 1), (BY_KEY[0], 1)):
        assert explain_count(instance, schema, statement) == count  # the verdicts' truth
    every_text = " ".join(StatementDigest.objects.values_list("text", flat=True))
    assert not any(literal in every_text for literal in LITERALS)

    table = PartitionedTable.objects.get(server=server, schema=schema, name="days")
    answer = viewer_api.get(f"/api/v1/tables/{table.pk}/statements/")
    assert answer.status_code == 200
    listed = answer.json()
    assert [row["prunes"] for row in listed][:1] == ["all"]  # worst first
    assert listed[0]["digest"] == customer.digest and listed[0]["partitions_total"] == 7
    assert set(listed[0]) >= {
        "digest", "text", "calls", "rows_examined", "seconds", "partitions_read",
        "partitions_total", "prunes", "how", "last_seen",
    }  # fmt: skip


def test_digests_are_read_again_only_when_due_and_only_those_seen_since(
    instance, make_server, settings
):
    schema = new_schema_on(instance)
    workload(instance, schema)
    server = make_server(instance, name="due")
    poll_server(server)
    first = StatementRead.objects.get(server=server)
    customer = stored(schema, "days")["select * from days where customer = ?"]

    run(instance, schema, *BY_CUSTOMER)
    poll_server(server)  # within PARTDASH_STATEMENTS_EVERY_SECONDS: not read
    assert StatementRead.objects.get(server=server).read_at == first.read_at
    assert StatementDigest.objects.get(pk=customer.pk).calls == 5

    StatementRead.objects.filter(server=server).update(
        read_at=timezone.now() - timedelta(seconds=settings.PARTDASH_STATEMENTS_EVERY_SECONDS)
    )
    poll_server(server)
    again = StatementRead.objects.get(server=server)
    assert again.read_at > first.read_at and again.watermark >= first.watermark
    assert StatementDigest.objects.get(pk=customer.pk).calls == 10


def test_an_opted_in_server_counts_from_explain(instance, make_server):
    schema = new_schema_on(instance)
    workload(instance, schema)
    run(instance, schema, *UPDATE_BY_KEY, *DELETE_BY_CUSTOMER)
    server = make_server(instance, name="explained", explain_statements=True)
    contents = "SELECT COUNT(*), SUM(v) FROM keyed"
    before = run(instance, schema, contents)

    poll_server(server)

    days, keyed = stored(schema, "days"), stored(schema, "keyed")
    customer, day, key = (
        days["select * from days where customer = ?"],
        days["select * from days where d = ?"],
        keyed["select v from keyed where id = ?"],
    )
    update = keyed["update keyed set v = v + ? where id = ?"]
    delete = keyed["delete from keyed where customer = ?"]
    assert {row.how for row in (customer, day, key, update, delete)} == {"explained"}
    assert (update.prunes, update.partitions_read) == ("one", 1)
    assert (delete.prunes, delete.partitions_read) == ("all", 4)
    assert run(instance, schema, contents) == before  # explained, never run
    assert (customer.prunes, customer.partitions_read) == ("all", 7)
    assert (day.prunes, day.partitions_read) == ("one", explain_count(instance, schema, BY_DAY[-1]))
    assert (key.prunes, key.partitions_read) == ("one", 1)
