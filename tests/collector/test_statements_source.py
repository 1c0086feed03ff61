"""The statement digests source on MySQL 5.7 and 8, against recorded result sets: read
when due, with the sample text in memory only, EXPLAINed on MySQL 8 where asked."""

import logging

import pymysql
import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.mysql.dialects import MYSQL8
from partdash.mysql.sources.explain import PlanRead, explain
from tests.recorded_mysql import BY_CUSTOMER, BY_DAY, RecordedSession, mysql57, mysql80


def digest_queries(session: RecordedSession) -> list[tuple[str, tuple]]:
    return [(sql, args) for sql, args in session.queries if "summary_by_digest" in sql]


def test_a_poll_not_due_reads_no_digest():
    session = RecordedSession(*mysql80())
    collection = collect(session, CollectRequest(known={}))

    assert digest_queries(session) == []
    assert collection.statements is None
    assert collection.sources["statements"] is True  # as the last read found it


@pytest.mark.parametrize(
    ("recording", "sample"), [(mysql80, "QUERY_SAMPLE_TEXT"), (mysql57, "NULL")]
)
def test_a_due_poll_reads_the_digests_seen_since_with_a_cap(recording, sample, settings):
    settings.PARTDASH_STATEMENTS_MAX_ROWS = 77
    session = RecordedSession(*recording())
    collection = collect(session, CollectRequest(known={}, statements_since=1795160000))

    ((sql, args),) = digest_queries(session)
    assert f"UNIX_TIMESTAMP(LAST_SEEN), {sample} FROM" in sql
    assert "LAST_SEEN >= FROM_UNIXTIME(%s)" in sql and args == (1795160000, 77)
    assert [d.digest for d in collection.statements] == [BY_CUSTOMER, BY_DAY]
    customer = collection.statements[0]
    assert (customer.calls, customer.rows_examined, customer.micros) == (120, 150000, 4_200_000)
    assert customer.text == "SELECT * FROM `orders` WHERE `customer` = ?"
    assert all(d.sample is None for d in collection.statements)  # never kept
    assert collection.statements_watermark == collection.facts.clock
    assert collection.plans == {}  # not opted in


def test_mysql8_explains_the_samples_of_an_opted_in_server():
    session = RecordedSession(*mysql80())
    collection = collect(session, CollectRequest(known={}, statements_since=0, explain=True))

    assert collection.plans == {
        BY_CUSTOMER: [PlanRead(None, "orders", 3)],
        BY_DAY: [PlanRead("shop", "orders", 1)],
    }
    limits = [args for sql, args in session.queries if "MAX_EXECUTION_TIME" in sql]
    assert limits[0] == (1000,) and limits[1] != (1000,)  # lowered, then set back
    assert all(d.sample is None for d in collection.statements)
    assert "customer = 42" not in repr(collection)


def test_a_digest_consumer_off_is_said_with_its_fix():
    flavor, version, results = mysql80()
    results |= {
        "events_statements_summary_by_digest": [],
        "performance_schema.setup_consumers": [("NO",)],
    }
    collection = collect(
        RecordedSession(flavor, version, results), CollectRequest(statements_since=0)
    )

    (line,) = [line for line in collection.lines if "statements_digest" in line]
    assert "the statements_digest consumer is OFF" in line
    assert "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES'" in line
    assert collection.sources["statements"] is False


@pytest.mark.parametrize(
    "sample",
    [
        "INSERT INTO orders VALUES (1, 2)",
        "SELECT my_function(id) FROM orders",
        "SELECT 1; DROP TABLE orders",
        "SELECT * FROM orders INTO OUTFILE '/tmp/orders'",
        "CALL archive_orders()",
        "SELECT * FROM orders WHERE",  # a sample cut short
    ],
)
def test_only_one_select_update_or_delete_calling_known_functions_is_explained(sample):
    session = RecordedSession("mysql", "8.0.36", {})  # any query would fail the test

    assert explain(session, MYSQL8, sample, "shop", 1000) is None
    assert session.queries == []


def test_an_update_is_explained_as_the_select_of_its_where():
    flavor, version, results = mysql80()
    session = RecordedSession(flavor, version, results)
    results["EXPLAIN FORMAT=JSON SELECT * FROM orders WHERE customer = 42"] = [
        ('{"query_block": {"table": {"table_name": "orders", "partitions": ["p2026"]}}}',)
    ]

    plan = explain(session, MYSQL8, "UPDATE orders SET v = 1 WHERE customer = 42", "shop", 500)

    assert plan == [PlanRead(None, "orders", 1)]  # (None: the default schema)
    assert not any(sql.startswith("EXPLAIN FORMAT=JSON UPDATE") for sql, _ in session.queries)


def test_a_refused_explain_is_logged_by_its_code_never_its_text(caplog):
    flavor, version, results = mysql80()

    def refuse(args):
        raise pymysql.err.ProgrammingError(1064, "syntax error near 'secret-literal-42'")

    results["EXPLAIN FORMAT=JSON SELECT * FROM orders WHERE customer"] = refuse
    session = RecordedSession(flavor, version, results)
    caplog.set_level(logging.DEBUG)

    sample = "SELECT * FROM orders WHERE customer = 'secret-literal-42'"
    assert explain(session, MYSQL8, sample, "shop", 1000) is None

    assert "1064" in caplog.text and "secret-literal-42" not in caplog.text
