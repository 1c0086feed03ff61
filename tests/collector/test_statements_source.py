"""The statement digests source on MySQL 5.7 and 8, against recorded result sets: read
when due, with the sample text in memory only, EXPLAINed on MySQL 8 where asked."""

import pytest

from partdash.collector.collect import CollectRequest, collect
from partdash.mysql.sources.explain import PlanRead
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
