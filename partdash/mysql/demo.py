"""A small demo schema of partitioned tables, so a first look at partdash is alive.

It shows each shape partdash judges: a monthly RANGE table by date with a MAXVALUE
catch-all, an even HASH table, a skewed KEY table and a LIST table.
"""

import random
from datetime import date, timedelta

import pymysql

from partdash.mysql.connection import ConnectionFailure, Target, connect

DEMO_SCHEMA = "partdash_demo"


def _month_start(day: date, months_ahead: int) -> date:
    month = day.month - 1 + months_ahead
    return date(day.year + month // 12, month % 12 + 1, 1)


def _orders_ddl(today: date) -> str:
    bounds = [_month_start(today, offset) for offset in range(-5, 3)]
    partitions = [
        f"PARTITION p{bound:%Y%m} VALUES LESS THAN (TO_DAYS('{bound}'))" for bound in bounds
    ]
    partitions.append("PARTITION pmax VALUES LESS THAN MAXVALUE")
    return (
        "CREATE TABLE orders (id BIGINT NOT NULL AUTO_INCREMENT, created DATE NOT NULL, "
        "amount DECIMAL(10,2) NOT NULL, PRIMARY KEY (id, created)) ENGINE=InnoDB "
        f"PARTITION BY RANGE (TO_DAYS(created)) ({', '.join(partitions)})"
    )


TABLES = {
    "sessions": "CREATE TABLE sessions (id BIGINT NOT NULL PRIMARY KEY, user_id INT NOT NULL) "
    "ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 8",
    "events": "CREATE TABLE events (tenant INT NOT NULL, id BIGINT NOT NULL, payload VARCHAR(200), "
    "PRIMARY KEY (tenant, id)) ENGINE=InnoDB PARTITION BY KEY (tenant) PARTITIONS 4",
    "regions": "CREATE TABLE regions (id BIGINT NOT NULL, region INT NOT NULL, "
    "PRIMARY KEY (id, region)) ENGINE=InnoDB PARTITION BY LIST (region) "
    "(PARTITION p_eu VALUES IN (1, 2), "
    "PARTITION p_us VALUES IN (3, 4), PARTITION p_apac VALUES IN (5, 6))",
}


def _rows(table: str, today: date) -> tuple[str, list[tuple]]:
    rng = random.Random(42)
    if table == "orders":
        days = [today - timedelta(days=rng.randint(0, 150)) for _ in range(6000)]
        return "INSERT INTO orders (created, amount) VALUES (%s, %s)", [
            (day, rng.randint(100, 99999) / 100) for day in days
        ]
    if table == "sessions":
        return "INSERT INTO sessions VALUES (%s, %s)", [
            (i, rng.randint(1, 999)) for i in range(4000)
        ]
    if table == "events":
        # Tenant 1 dominates: the KEY table is skewed on purpose.
        return "INSERT INTO events VALUES (%s, %s, %s)", [
            (1 if i % 2 else rng.randint(2, 50), i, "x" * 50) for i in range(4000)
        ]
    return "INSERT INTO regions VALUES (%s, %s)", [(i, rng.randint(1, 6)) for i in range(3000)]


def demo_schema_exists(target: Target) -> bool:
    conn = connect(target)  # guarded: no clear-text password, bounded handshake
    try:
        with conn.cursor() as cursor:
            return bool(cursor.execute("SHOW DATABASES LIKE %s", (DEMO_SCHEMA,)))
    finally:
        conn.close()


def create_demo_schema(target: Target, today: date | None = None) -> list[str]:
    """Drop and recreate the demo schema; return the table names."""
    today = today or date.today()
    conn = connect(target)  # guarded: no clear-text password, bounded handshake
    ddl = {"orders": _orders_ddl(today), **TABLES}
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {DEMO_SCHEMA}")
            cursor.execute(f"CREATE DATABASE {DEMO_SCHEMA}")
            cursor.execute(f"USE {DEMO_SCHEMA}")
            for table, statement in ddl.items():
                cursor.execute(statement)
                insert, rows = _rows(table, today)
                cursor.executemany(insert, rows)
                cursor.execute(f"ANALYZE TABLE {table}")
                cursor.fetchall()
    except pymysql.MySQLError as exc:
        raise ConnectionFailure("error", f"cannot create the demo schema: {exc.args[-1]}") from None
    finally:
        conn.close()
    return list(ddl)
