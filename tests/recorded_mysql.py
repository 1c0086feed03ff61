"""Result sets in the shape MySQL 5.7, 8.0 and 8.4 return them, for the collector's
dialect tests. MySQL cannot be installed on the machines partdash is tested on, so these
stand in for a server: column order and spellings follow the MySQL reference manual's
descriptions of each table (MySQL 8 spells partitions `#p#`, 5.7 `#P#`)."""

import json

from partdash.mysql.connection import Session


class RecordedSession(Session):
    """A Session answering from recorded result sets (the longest matching marker wins);
    any other query fails the test."""

    def __init__(self, flavor: str, version: str, results: dict[str, list[tuple]]):
        object.__setattr__(self, "conn", None)
        object.__setattr__(self, "flavor", flavor)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "results", results)
        object.__setattr__(self, "queries", [])

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        self.queries.append((sql, args))
        for marker, rows in sorted(self.results.items(), key=lambda item: -len(item[0])):
            if marker in sql:
                return rows(args) if callable(rows) else list(rows)
        raise AssertionError(f"unexpected query for a recorded MySQL session: {sql}")


UPDATED = 1795161600  # UNIX_TIMESTAMP(last_update): 2026-11-20 08:00:00 UTC


def _variables(page_size: int = 16384) -> list[tuple]:
    return [
        ("innodb_buffer_pool_size", "134217728"),
        ("table_open_cache", "4000"),
        ("table_definition_cache", "2000"),
        ("open_files_limit", "10000"),
        ("innodb_file_per_table", "ON"),
        ("performance_schema", "ON"),
        ("innodb_cmp_per_index_enabled", "OFF"),
        ("innodb_stats_persistent", "ON"),
        ("innodb_page_size", str(page_size)),
        ("lower_case_table_names", "0"),
    ]


STATUS = [
    ("Opened_tables", "1200"),
    ("Open_tables", "400"),
    ("Performance_schema_file_handles_lost", "0"),
    ("Performance_schema_file_instances_lost", "0"),
    ("Uptime", "86400"),
    ("Handler_write", "5000"),
    ("Handler_update", "700"),
    ("Handler_delete", "20"),
]


def _partitions(schema_table: tuple, sep: str) -> dict[str, list[tuple]]:
    """The shop.orders RANGE table with three partitions, in every source's spelling."""
    schema, table = schema_table
    names = ["p2026", "p2027", "pmax"]
    return {
        "mysql.innodb_table_stats": [
            (schema, f"{table}{sep}{p}", n, c, o, UPDATED)
            for p, n, c, o in zip(names, (1000, 250, 0), (5, 2, 1), (2, 1, 0), strict=True)
        ],
        "file_summary_by_instance": [
            (
                f"/var/lib/mysql/{schema}/{table}{sep}{p}.ibd",
                r,
                w,
                r * 16384,
                w * 16384,
                r * 90,
                2 * r + w,
            )
            for p, r, w in zip(names, (10, 4, 0), (30, 8, 0), strict=True)
        ],
        "information_schema.PARTITIONS": [
            (p, None, i + 1, None, "RANGE", None, "to_days(`created`)", None, d)
            for i, (p, d) in enumerate(zip(names, ("740000", "740365", "MAXVALUE"), strict=True))
        ],
        "information_schema.TABLES": [("partitioned",)],
        # Partitioned tables of other engines (MyISAM, MEMORY...): none recorded.
        "SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES": [],
    }


# Two statement digests on shop.orders as events_statements_summary_by_digest gives them:
# DIGEST, DIGEST_TEXT, SCHEMA_NAME, COUNT_STAR, SUM_ROWS_EXAMINED, SUM_TIMER_WAIT DIV
# 1000000, SUM_NO_INDEX_USED, UNIX_TIMESTAMP(FIRST_SEEN), UNIX_TIMESTAMP(LAST_SEEN) and
# QUERY_SAMPLE_TEXT (MySQL 8; NULL as 5.7 selects it).
BY_DAY = "3f1c9ab2" * 8
BY_CUSTOMER = "9e07d5c1" * 8


def digests(samples: bool) -> list[tuple]:
    return [
        (
            BY_CUSTOMER,
            "SELECT * FROM `orders` WHERE `customer` = ?",
            "shop",
            120,
            150000,
            4_200_000,
            120,
            UPDATED,
            UPDATED + 3000,
            "SELECT * FROM orders WHERE customer = 42" if samples else None,
        ),
        (
            BY_DAY,
            "SELECT * FROM `shop` . `orders` WHERE `created` = ?",
            None,
            900,
            2700,
            310_000,
            0,
            UPDATED,
            UPDATED + 3500,
            "SELECT * FROM shop.orders WHERE created = '2026-11-20'" if samples else None,
        ),
    ]


# EXPLAIN FORMAT=JSON of the samples above, as MySQL 8.0 words it (abridged).
def _plan(partitions: list[str]) -> str:
    return (
        '{"query_block": {"select_id": 1, "table": {"table_name": "orders", '
        f'"partitions": {json.dumps(partitions)}, "access_type": "ALL"}}}}}}'
    )


def explains() -> dict[str, list[tuple]]:
    return {
        "SET SESSION MAX_EXECUTION_TIME": [],
        "USE `shop`": [],
        "EXPLAIN FORMAT=JSON SELECT * FROM orders WHERE customer = 42": [
            (_plan(["p2026", "p2027", "pmax"]),)
        ],
        "EXPLAIN FORMAT=JSON SELECT * FROM shop.orders WHERE created": [(_plan(["p2026"]),)],
    }


def mysql80(version: str = "8.0.36") -> tuple[str, str, dict]:
    sep = "#p#"
    results = _partitions(("shop", "orders"), sep)
    results |= {
        "SHOW GLOBAL VARIABLES": _variables(),
        "SHOW GLOBAL STATUS": STATUS,
        "SELECT UNIX_TIMESTAMP(), CURRENT_USER()": [(UPDATED + 3600, "partdash@%")],
        "information_schema.INNODB_TABLESPACES": [
            (f"shop/orders{sep}{p}", 40 + i, size, size - 4096, 16384, 0, "Dynamic")
            for i, (p, size) in enumerate(
                zip(["p2026", "p2027", "pmax"], (180224, 114688, 98304), strict=True)
            )
        ],
        "information_schema.INNODB_TABLESTATS": [("shop/orders#p#p2027", 17, 251)],
        "SELECT COUNT(*) FROM information_schema.INNODB_TABLESPACES": [(7,)],
        "information_schema.INNODB_CMP": [(1024, 0, 0, 0, 0, 0), (8192, 0, 0, 0, 0, 0)],
        "events_statements_summary_by_digest": digests(samples=True),
        "performance_schema.setup_consumers": [("YES",)],
    }
    return "mysql", version, results | explains()


def mysql57() -> tuple[str, str, dict]:
    sep = "#P#"
    results = _partitions(("shop", "orders"), sep)
    results |= {
        "SHOW GLOBAL VARIABLES": _variables(),
        "SHOW GLOBAL STATUS": STATUS,
        "SELECT UNIX_TIMESTAMP(), CURRENT_USER()": [(UPDATED + 3600, "partdash@%")],
        "information_schema.INNODB_SYS_TABLESPACES": [
            (f"shop/orders{sep}{p}", 40 + i, size, size, 16384, 0, "Dynamic")
            for i, (p, size) in enumerate(
                zip(["p2026", "p2027", "pmax"], (180224, 114688, 98304), strict=True)
            )
        ],
        "information_schema.INNODB_SYS_TABLESTATS": [("shop/orders#P#p2027", 17, 251)],
        "SELECT COUNT(*) FROM information_schema.INNODB_SYS_TABLES": [(7,)],
        "information_schema.INNODB_CMP": [(1024, 0, 0, 0, 0, 0)],
        "events_statements_summary_by_digest": digests(samples=False),
        "performance_schema.setup_consumers": [("YES",)],
    }
    return "mysql", "5.7.44-log", results
