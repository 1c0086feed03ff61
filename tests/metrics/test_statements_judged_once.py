"""Storing a read's digests (`metrics.statements.store`) on stored tables: a digest is
judged against a table once, its counters updated by later reads, and judged again only
once the table's layout changed or EXPLAIN counted it; statements that read nothing
(DDL, INSERT ... VALUES) and tables a digest does not name get no row."""

import pytest

from partdash.metrics import statements
from partdash.metrics.models import StatementDigest
from partdash.mysql.sources.explain import PlanRead
from partdash.mysql.sources.statements import Digest
from tests import builders

pytestmark = pytest.mark.django_db

BY_DAY = "SELECT * FROM `shop` . `orders` WHERE `d` = ?"
BY_CUSTOMER = "SELECT * FROM `orders` WHERE `customer` = ?"


@pytest.fixture
def orders():
    server = builders.server()
    table = builders.table(server, expression="to_days(`d`)", layout="a" * 40)
    for ordinal, bound in enumerate(("739000", "739001", "739002", "MAXVALUE"), start=1):
        builders.partition(table, f"p{ordinal}", ordinal, description=bound)
    builders.table(server, name="customers", method="HASH", expression="`id`")
    return table


def digest(text: str, calls: int = 10, name: str = "d1", schema: str | None = "shop") -> Digest:
    return Digest(name * 16, text, schema, calls, calls * 4, calls * 1000, 0, 1, 2)


def test_a_digest_is_judged_once_and_its_counters_follow(orders):
    statements.store(orders.server, [digest(BY_CUSTOMER), digest(BY_DAY, name="d2")], {})
    by_customer = StatementDigest.objects.get(digest="d1" * 16)
    assert (by_customer.table, by_customer.prunes, by_customer.partitions_read) == (
        orders,
        "all",
        4,
    )
    assert StatementDigest.objects.get(digest="d2" * 16).prunes == "one"

    StatementDigest.objects.filter(pk=by_customer.pk).update(why="judged before")
    statements.store(orders.server, [digest(BY_CUSTOMER, calls=25)], {})

    again = StatementDigest.objects.get(pk=by_customer.pk)
    assert (again.calls, again.rows_examined, again.seconds) == (25, 100, 0.025)
    assert again.why == "judged before"  # kept: the layout did not change

    orders.layout = "b" * 40
    orders.save()
    statements.store(orders.server, [digest(BY_CUSTOMER, calls=30)], {})
    assert StatementDigest.objects.get(pk=by_customer.pk).why != "judged before"


def test_explain_counts_replace_the_parsed_verdict(orders):
    plan = {"d1" * 16: [PlanRead(None, "orders", 1)]}
    statements.store(orders.server, [digest(BY_CUSTOMER)], plan)

    row = StatementDigest.objects.get()
    assert (row.how, row.prunes, row.partitions_read, row.partitions_total) == (
        "explained",
        "one",
        1,
        4,
    )


def test_what_reads_no_table_is_not_stored(orders):
    written = statements.store(
        orders.server,
        [
            digest("INSERT INTO `orders` VALUES (...)"),
            digest("ALTER TABLE `orders` ADD PARTITION ( PARTITION `p5` )", name="d2"),
            digest("SELECT * FROM `other` WHERE `orders` = ?", name="d3"),
            digest(BY_CUSTOMER, name="d4", schema="elsewhere"),
        ],
        {},
    )

    assert written == set() and not StatementDigest.objects.exists()
