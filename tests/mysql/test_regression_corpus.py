"""Tables in the manner of MariaDB's partitioning regression suite (every method,
subpartitions, COLUMNS tuples, NULL in LIST, one-partition tables, odd names, other
engines beside InnoDB), built on a real server and polled: every InnoDB table and
partition is found with exactly the definitions information_schema gives, the other
engines' tables are listed as not monitored, and nothing fails. (Statements written for
this test, after the kinds of tables the suite builds.)"""

import pytest

from partdash.metrics.models import PartitionedTable, UnmonitoredTable
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db

INNODB = {
    "range_sub": "(a INT, b VARCHAR(64), PRIMARY KEY (a)) PARTITION BY RANGE (a) "
    "SUBPARTITION BY HASH (a) SUBPARTITIONS 3 (PARTITION pNeg VALUES LESS THAN (0), "
    "PARTITION p0 VALUES LESS THAN (1000), PARTITION pMAX VALUES LESS THAN MAXVALUE)",
    "key_one": "(a INT, KEY (a)) PARTITION BY KEY (a) PARTITIONS 1",
    "key_pk": "(a INT PRIMARY KEY) PARTITION BY KEY () PARTITIONS 3",
    "linear_key": "(a INT, b INT) PARTITION BY LINEAR KEY ALGORITHM=1 (a, b) PARTITIONS 5",
    "linear_hash": "(a INT) PARTITION BY LINEAR HASH (a * 3 + 1) PARTITIONS 6",
    "hash_default": "(a INT) PARTITION BY HASH (a)",
    "to_days_range": "(c1 BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, c3 DATETIME NOT NULL, "
    "PRIMARY KEY (c1, c3)) PARTITION BY RANGE (TO_DAYS(c3)) "
    "(PARTITION p200912 VALUES LESS THAN (TO_DAYS('2010-01-01')), "
    "PARTITION p201103 VALUES LESS THAN (TO_DAYS('2011-04-01')), "
    "PARTITION p201912 VALUES LESS THAN MAXVALUE)",
    "range_columns_hours": "(user_num BIGINT, hours SMALLINT) PARTITION BY RANGE COLUMNS (hours) "
    "(PARTITION hour_003 VALUES LESS THAN (3), PARTITION hour_last VALUES LESS THAN (MAXVALUE))",
    "columns_tuple_sub": "(a VARCHAR(5), b INT, c VARCHAR(10), d DATETIME) "
    "PARTITION BY RANGE COLUMNS (b, c) SUBPARTITION BY HASH (TO_SECONDS(d)) "
    "(PARTITION p0 VALUES LESS THAN (2, 'b'), PARTITION p1 VALUES LESS THAN (4, 'd'), "
    "PARTITION p2 VALUES LESS THAN (10, 'za'))",
    "list_null": "(a INT) PARTITION BY LIST (a) (PARTITION p0 VALUES IN (NULL, 0), "
    "PARTITION p1 VALUES IN (1, 2, 3), PARTITION pd DEFAULT)",
    "list_columns": "(a INT, b CHAR(2)) PARTITION BY LIST COLUMNS (a, b) "
    "(PARTITION p0 VALUES IN ((1, 'x'), (2, 'y')), PARTITION p1 VALUES IN ((3, NULL)))",
    "year_range": "(a DATE) PARTITION BY RANGE (YEAR(a)) "
    "(PARTITION p0 VALUES LESS THAN (2006), PARTITION p1 VALUES LESS THAN (2007))",
    "named_subparts": "(a INT NOT NULL, b DATETIME NOT NULL, PRIMARY KEY (a, b)) "
    "PARTITION BY RANGE (TO_DAYS(b)) SUBPARTITION BY KEY (a) "
    "(PARTITION p0 VALUES LESS THAN (TO_DAYS('2009-01-01')) "
    "(SUBPARTITION s0a, SUBPARTITION `S0 B`), "
    "PARTITION p1 VALUES LESS THAN MAXVALUE (SUBPARTITION s1a, SUBPARTITION s1b))",
    "unix_ts": "(ts TIMESTAMP NOT NULL) PARTITION BY RANGE (UNIX_TIMESTAMP(ts)) "
    "(PARTITION p2020 VALUES LESS THAN (UNIX_TIMESTAMP('2021-01-01 00:00:00')), "
    "PARTITION pmax VALUES LESS THAN MAXVALUE)",
    "versioned": "(x INT) WITH SYSTEM VERSIONING "
    "PARTITION BY SYSTEM_TIME LIMIT 100 (PARTITION ph HISTORY, PARTITION pc CURRENT)",
    "versioned_interval": "(x INT) WITH SYSTEM VERSIONING "
    "PARTITION BY SYSTEM_TIME INTERVAL 1 MONTH STARTS '2026-01-01 00:00:00' PARTITIONS 4",
    "Mixed Case": "(a INT) PARTITION BY HASH (a) (PARTITION `Été` , PARTITION `p#1`)",
    "t#P#odd": "(a INT) PARTITION BY RANGE (a) (PARTITION `p-1` VALUES LESS THAN (0), "
    "PARTITION `P 2` VALUES LESS THAN MAXVALUE)",
}
OTHER = {
    "mem_columns": "(a VARCHAR(5)) ENGINE=MEMORY PARTITION BY RANGE COLUMNS (a) "
    "(PARTITION p0 VALUES LESS THAN ('m'), PARTITION p1 VALUES LESS THAN ('za'))",
    "myisam_sub": "(a INT, b INT) ENGINE=MyISAM PARTITION BY LIST (a) "
    "SUBPARTITION BY HASH (b) SUBPARTITIONS 2 (PARTITION p0 VALUES IN (1), "
    "PARTITION p1 VALUES IN (2))",
    "aria_key": "(a INT) ENGINE=Aria PARTITION BY KEY (a) PARTITIONS 3",
}


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def server_definitions(instance, schema: str) -> dict[str, list[tuple]]:
    rows = instance.execute(
        "SELECT TABLE_NAME, PARTITION_NAME, IFNULL(SUBPARTITION_NAME, ''), "
        "PARTITION_ORDINAL_POSITION, SUBPARTITION_ORDINAL_POSITION, PARTITION_METHOD, "
        "PARTITION_EXPRESSION, IFNULL(SUBPARTITION_METHOD, ''), "
        "IFNULL(SUBPARTITION_EXPRESSION, ''), PARTITION_DESCRIPTION "
        "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s "
        "ORDER BY TABLE_NAME, 4, 5",
        (schema,),
    )
    found: dict[str, list[tuple]] = {}
    for table, *partition in rows:
        found.setdefault(table, []).append(tuple(partition))
    return found


def stored_definitions(server, schema: str) -> dict[str, list[tuple]]:
    found = {}
    for table in PartitionedTable.objects.filter(server=server, schema=schema, dropped_at=None):
        found[table.name] = [
            (
                p.name,
                p.subpartition,
                p.ordinal,
                p.subpartition_ordinal,
                table.method,
                table.expression,
                table.subpartition_method,
                table.subpartition_expression,
                p.description,
            )
            for p in table.partitions.filter(dropped_at=None).order_by(
                "ordinal", "subpartition_ordinal"
            )
        ]
    return found


def test_a_sample_of_the_regression_suites_tables_is_found_exactly(
    mariadb, make_server, new_schema
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        *(f"CREATE TABLE {quoted(name)} {body}" for name, body in {**INNODB, **OTHER}.items()),
        "INSERT INTO range_sub VALUES (-1, 'negative'), (5, 'five'), (2000, 'big')",
        "INSERT INTO list_null VALUES (NULL), (0), (2), (9)",
        "INSERT INTO versioned VALUES (1)",
        "UPDATE versioned SET x = 2",
    )
    server = make_server(mariadb)

    report = poll_server(server)

    assert report.ok, report.error
    assert [w for w in report.warnings if "performance_schema" not in w] == []
    truth = server_definitions(mariadb, schema)
    assert set(truth) == set(INNODB) | set(OTHER)
    stored = stored_definitions(server, schema)
    assert set(stored) == set(INNODB)
    for name in INNODB:
        assert stored[name] == truth[name], name
    others = UnmonitoredTable.objects.filter(server=server, schema=schema)
    assert {t.name: t.partitions for t in others} == {name: len(truth[name]) for name in OTHER}
    # A second poll finds nothing new to read, and still nothing wrong.
    again = poll_server(server)
    assert again.ok and again.definitions_read == 0
    assert stored_definitions(server, schema) == stored
