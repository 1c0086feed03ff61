"""Which partitions a statement reads, judged from its digest text (the pure
`partdash.health.pruning.judge`), on plain strings."""

import pytest

from partdash.health.pruning import Layout, judge

DAYS = 60
# RANGE by day: p0 holds days below 739000, ... p59 below 739059, then the catch-all.
BY_DAY = Layout(
    "shop",
    "orders",
    "RANGE",
    "to_days(`d`)",
    tuple((f"p{i}", str(739000 + i)) for i in range(DAYS)) + (("pmax", "MAXVALUE"),),
)
BY_KEY = Layout("shop", "carts", "HASH", "`id`", tuple((f"p{i}", None) for i in range(16)))
BY_REGION = Layout(
    "shop",
    "stores",
    "LIST",
    "`region`",
    (("north", "1,2,3"), ("south", "4,5"), ("west", "6"), ("nowhere", "NULL")),
)
BY_DATE_COLUMNS = Layout(
    "shop",
    "events",
    "RANGE COLUMNS",
    "`day`",
    (("p2024", "'2025-01-01'"), ("p2025", "'2026-01-01'"), ("pmax", "MAXVALUE")),
)
BY_PAIR = Layout(
    "shop",
    "readings",
    "RANGE COLUMNS",
    "`site`,`at`",
    (
        ("p0", "5,'2025-01-01'"),
        ("p1", "5,'2026-01-01'"),
        ("p2", "10,'2025-01-01'"),
        ("p3", "MAXVALUE,MAXVALUE"),
    ),
)
BY_KEY_COLUMNS = Layout("shop", "sessions", "KEY", "`user`,`device`", (("p0", None), ("p1", None)))
SUBPARTITIONED = Layout(
    "shop",
    "ledger",
    "RANGE",
    "year(`d`)",
    (("p2024", "2025"), ("p2025", "2026"), ("pmax", "MAXVALUE")),
    subpartition_method="HASH",
    subpartition_expression="`account`",
    subpartitions_per_partition=4,
)


def verdict(text, layout=BY_DAY):
    found = judge(text, layout, default_schema="shop")
    return found.prunes, found.partitions_read


# -- RANGE through TO_DAYS ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `orders` WHERE `d` = ?", "one", 1),
        ("SELECT * FROM `orders` WHERE `d` = ? AND `customer` = ?", "one", 1),
        ("SELECT * FROM `orders` WHERE `d` BETWEEN ? AND ?", "some", None),
        ("SELECT COUNT ( * ) FROM `orders` WHERE `d` >= ? AND `d` < ?", "some", None),
        ("SELECT * FROM `orders` WHERE `d` > ?", "some", None),
        ("SELECT * FROM `orders` WHERE `d` IN (...)", "some", None),
        ("SELECT * FROM `orders` WHERE `d` IN (?, ...)", "some", None),
        ("SELECT * FROM `orders` WHERE `d` IN (?)", "one", 1),
        ("SELECT * FROM `orders` WHERE `d` = ? OR `d` = ?", "some", None),
        ("SELECT * FROM `orders` WHERE `customer` = ?", "all", DAYS + 1),
        ("SELECT * FROM `orders`", "all", DAYS + 1),
        ("SELECT `customer` , SUM ( `total` ) FROM `orders` GROUP BY `customer`", "all", 61),
        ("SELECT * FROM `orders` WHERE `d` = ? OR `customer` = ?", "all", DAYS + 1),
        ("SELECT * FROM `orders` WHERE ( `d` = ? OR `customer` = ? ) AND `d` = ?", "one", 1),
        ("SELECT * FROM `orders` WHERE DATE ( `d` ) = ?", "all", DAYS + 1),
        ("SELECT * FROM `orders` WHERE `d` <> ?", "all", DAYS + 1),
        ("SELECT * FROM `orders` WHERE `d` NOT IN (...)", "all", DAYS + 1),
        ("SELECT * FROM `orders` WHERE `d` IN ( SELECT `d` FROM `days` )", "unknown", None),
        ("SELECT * FROM `orders` WHERE `d` = ( SELECT MAX ( `d` ) FROM `days` )", "unknown", None),
        ("SELECT * FROM `orders` WHERE ( `d` , `id` ) IN ( ( ? , ? ) )", "unknown", None),
        ("SELECT * FROM `orders` WHERE `id` IN ( SELECT `order` FROM `lines` )", "all", 61),
        ("SELECT * FROM `orders` PARTITION ( `p3` , `p4` ) WHERE `customer` = ?", "some", 2),
        ("SELECT * FROM `orders` PARTITION ( `p3` , `p4` ) WHERE `d` = ?", "one", 1),
        ("UPDATE `orders` SET `state` = ? WHERE `d` = ? AND `id` = ?", "one", 1),
        ("DELETE FROM `orders` WHERE `d` < ?", "some", None),
        ("SELECT * FROM `orders` WHERE `d` IS NULL", "one", 1),
    ],
)
def test_range_by_day_digests(text, prunes, read):
    assert verdict(text) == (prunes, read)


def test_literal_bounds_count_the_partitions_they_cover():
    # TO_DAYS('2023-05-01') is 739006: p7 holds it.
    text = "SELECT * FROM `orders` WHERE `d` BETWEEN '2023-05-01' AND '2023-05-03'"
    assert verdict(text) == ("some", 3)
    assert verdict("SELECT * FROM `orders` WHERE `d` = '2023-05-01'") == ("one", 1)
    # TO_DAYS('2023-06-01') is 739037: p38 to p59 and the catch-all.
    assert verdict("SELECT * FROM `orders` WHERE `d` >= '2023-06-01'") == ("some", 23)


def test_a_range_through_a_function_with_an_open_end_is_not_counted():
    # `d > '2023-05-01'`: whether TO_DAYS(d) may equal 739006 depends on d's type.
    assert verdict("SELECT * FROM `orders` WHERE `d` > '2023-05-01'") == ("some", None)


# -- joins, aliases, USING, subqueries ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `orders` AS `o` WHERE `o`.`d` = ?", "one", 1),
        ("SELECT * FROM `shop`.`orders` `o` WHERE `o`.`d` = ?", "one", 1),
        (
            "SELECT * FROM `orders` `o` JOIN `customers` `c` ON `o`.`customer` = `c`.`id` "
            "AND `o`.`d` = ?",
            "one",
            1,
        ),
        (
            "SELECT * FROM `customers` `c` JOIN `orders` `o` ON `o`.`customer` = `c`.`id` "
            "WHERE `c`.`d` = ?",
            "all",
            DAYS + 1,
        ),
        (
            "SELECT * FROM `orders` `o` JOIN `days` `x` ON `o`.`d` = `x`.`d` WHERE `x`.`d` = ?",
            "one",
            1,
        ),
        # Each row of `days` looks up one partition; EXPLAIN lists them all.
        ("SELECT * FROM `orders` `o` JOIN `days` `x` ON `o`.`d` = `x`.`d`", "unknown", None),
        (
            "SELECT * FROM `orders` `o` JOIN `days` `x` ON `o`.`d` = `x`.`d` "
            "WHERE `x`.`kind` = ? AND `o`.`d` > ?",
            "some",
            None,
        ),
        ("SELECT * FROM `orders` JOIN `days` USING ( `d` ) WHERE `days`.`d` = ?", "one", 1),
        (
            "SELECT * FROM `orders` `o` LEFT JOIN `returns` `r` ON `r`.`order` = `o`.`id` "
            "AND `o`.`d` = ?",
            "all",
            DAYS + 1,
        ),
        (
            "SELECT * FROM `customers` `c` LEFT JOIN `orders` `o` ON `o`.`customer` = `c`.`id` "
            "AND `o`.`d` = ?",
            "one",
            1,
        ),
        (
            "SELECT * FROM `customers` WHERE `id` IN ( SELECT `customer` FROM `orders` "
            "WHERE `d` = ? )",
            "one",
            1,
        ),
        ("INSERT INTO `archive` SELECT * FROM `orders` WHERE `d` < ?", "some", None),
        ("REPLACE INTO `archive` SELECT * FROM `orders` WHERE `customer` = ?", "all", 61),
        ("SELECT * FROM `orders` WHERE `d` = ? UNION SELECT * FROM `orders`", "all", 61),
        ("SELECT * FROM `other`.`orders` WHERE `customer` = ?", "unknown", None),
    ],
)
def test_the_predicates_that_restrict_the_table(text, prunes, read):
    assert verdict(text) == (prunes, read)


def test_a_derived_table_under_outer_predicates_is_not_judged():
    found = judge("SELECT * FROM ( SELECT * FROM `orders` ) `q` WHERE `q`.`d` = ?", BY_DAY)
    assert (found.prunes, found.why) == ("unknown", "read through a derived table")


# -- HASH and KEY ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `carts` WHERE `id` = ?", "one", 1),
        ("SELECT * FROM `carts` WHERE `id` IN (?)", "one", 1),
        ("SELECT * FROM `carts` WHERE `id` IN (...)", "some", None),
        ("DELETE FROM `carts` WHERE `id` IN ( ? , ? )", "some", None),
        ("UPDATE `carts` SET `n` = `n` + ? WHERE `id` = ?", "one", 1),
        ("SELECT * FROM `carts` WHERE `owner` = ?", "all", 16),
        ("SELECT * FROM `carts` WHERE `id` BETWEEN ? AND ?", "unknown", None),
        ("SELECT * FROM `carts` WHERE `id` = 17", "one", 1),
        ("SELECT * FROM `carts` WHERE `id` IN ( 1 , 17 )", "one", 1),
        ("SELECT * FROM `carts` WHERE `id` IN ( 1 , 2 , 3 )", "some", 3),
        ("SELECT * FROM `carts` WHERE `id` BETWEEN 1 AND 3", "some", 3),
        ("SELECT * FROM `carts` WHERE `id` BETWEEN 1 AND 100", "all", 16),
    ],
)
def test_hash_prunes_on_equality_and_in_only(text, prunes, read):
    assert verdict(text, BY_KEY) == (prunes, read)


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `sessions` WHERE `user` = ? AND `device` = ?", "one", 1),
        ("SELECT * FROM `sessions` WHERE `user` = ?", "unknown", None),
        ("SELECT * FROM `sessions` WHERE `token` = ?", "all", 2),
    ],
)
def test_key_over_several_columns_needs_every_column(text, prunes, read):
    assert verdict(text, BY_KEY_COLUMNS) == (prunes, read)


# -- LIST, RANGE COLUMNS, subpartitions ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `stores` WHERE `region` = ?", "one", 1),
        ("SELECT * FROM `stores` WHERE `region` = 5", "one", 1),
        ("SELECT * FROM `stores` WHERE `region` IN ( 1 , 2 , 6 )", "some", 2),
        ("SELECT * FROM `stores` WHERE `region` IS NULL", "one", 1),
        ("SELECT * FROM `stores` WHERE `region` BETWEEN 2 AND 4", "some", 2),
        ("SELECT * FROM `stores` WHERE `name` = ?", "all", 4),
    ],
)
def test_list_prunes_on_its_values(text, prunes, read):
    assert verdict(text, BY_REGION) == (prunes, read)


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `events` WHERE `day` = ?", "one", 1),
        ("SELECT * FROM `events` WHERE `day` >= '2025-03-01'", "some", 2),
        ("SELECT * FROM `events` WHERE `day` < '2025-01-01'", "one", 1),
        ("SELECT * FROM `events` WHERE `day` BETWEEN ? AND ?", "some", None),
    ],
)
def test_range_columns_on_a_date(text, prunes, read):
    assert verdict(text, BY_DATE_COLUMNS) == (prunes, read)


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `readings` WHERE `site` = ?", "some", None),
        ("SELECT * FROM `readings` WHERE `site` = 5", "some", None),  # p0 to p2 may hold 5
        ("SELECT * FROM `readings` WHERE `site` = 7", "one", 1),
        ("SELECT * FROM `readings` WHERE `at` = ?", "all", 4),
    ],
)
def test_range_columns_over_two_columns_prunes_on_the_first(text, prunes, read):
    assert verdict(text, BY_PAIR) == (prunes, read)


@pytest.mark.parametrize(
    ("text", "prunes", "read"),
    [
        ("SELECT * FROM `ledger` WHERE `d` = ? AND `account` = ?", "one", 1),
        ("SELECT * FROM `ledger` WHERE `account` = ?", "some", 3),
        ("SELECT * FROM `ledger` WHERE `d` = ?", "some", 4),
        ("SELECT * FROM `ledger` WHERE `memo` = ?", "all", 12),
        ("SELECT * FROM `ledger` WHERE `d` BETWEEN '2024-03-01' AND '2025-02-01'", "some", 8),
    ],
)
def test_subpartitions_multiply(text, prunes, read):
    assert verdict(text, SUBPARTITIONED) == (prunes, read)


# -- what cannot be judged, said so -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("CALL `refresh_orders` ( ? )", "stored routine"),
        ("SELECT * FROM `orders` WHERE `d` = @`day`", "user variable"),
        ("SELECT * FROM `orders` WHERE `d` = ? AND `customer` IN ( SELECT ...", "unparsed"),
        ("SELECT * FROM `orders` WHERE `d` = = ?", "unparsed"),
        ("INSERT INTO `orders` ( `d` , `customer` ) VALUES (...)", "not a read"),
        ("INSERT INTO `orders` VALUES ( ? , ? ) /* , ... */", "not a read"),
        ("ALTER TABLE `orders` ADD PARTITION ( PARTITION `p60` VALUES LESS THAN ( ? ) )", "not a"),
        ("REPLACE INTO `orders` VALUES (...)", "not a read"),
        ("LOAD DATA INFILE ? INTO TABLE `orders`", "not a read: LOAD"),
        ("TRUNCATE TABLE `orders`", "not a read: TRUNCATE"),
        ("", "unparsed"),
        ("SHOW TABLES", "not a read"),
    ],
)
def test_what_cannot_be_judged_is_unknown_with_why(text, why):
    found = judge(text, BY_DAY, default_schema="shop")
    assert found.prunes == "unknown"
    assert found.partitions_read is None
    assert found.why.startswith(why)
    assert found.partitions_total == DAYS + 1


def test_any_text_gives_a_verdict():
    for text in ("(((((", "SELECT", "?", "SELECT * FROM `orders` WHERE `d` IN (?, ...", "\x00"):
        assert judge(text, BY_DAY).prunes == "unknown"


# -- what the advice reads ------------------------------------------------------------------


def test_filters_on_names_the_columns_the_statement_filters_on():
    found = judge(
        "SELECT * FROM `orders` `o` JOIN `customers` `c` ON `o`.`customer` = `c`.`id` "
        "WHERE `o`.`status` = ? AND `c`.`name` = ?",
        BY_DAY,
    )
    assert found.prunes == "all"
    assert found.filters_on == ("customer", "status")
    assert "`d`" in found.why


def test_one_digest_is_judged_for_each_table_it_reads():
    text = (
        "SELECT * FROM `carts` `c` JOIN `orders` `o` ON `o`.`customer` = `c`.`owner` "
        "WHERE `c`.`id` = ? AND `o`.`status` = ?"
    )
    for _ in range(2):  # the parsed statement is kept: judging leaves it as it was
        assert verdict(text, BY_KEY) == ("one", 1)
        assert verdict(text, BY_DAY) == ("all", DAYS + 1)


def test_a_text_longer_than_partdash_parses_is_unknown():
    text = "SELECT * FROM `orders` WHERE `d` IN (" + ", ".join(["?"] * 40_000) + ")"
    assert judge(text, BY_DAY).why == "unparsed: longer than partdash parses"
