"""SQL helpers for tests that build tables on a private MariaDB."""

from contextlib import closing
from uuid import uuid4

from tests.services import MariaDB


def new_schema_on(instance: MariaDB) -> str:
    """A uniquely named new schema (the caller drops it, or the `new_schema` fixture)."""
    name = f"pd_{uuid4().hex[:8]}"
    instance.execute(f"CREATE DATABASE {name}")
    return name


def run(instance: MariaDB, schema: str, *statements: str) -> tuple:
    """Run statements in one root session after `USE schema` (the sequence engine's
    `seq_1_to_N` tables live in the current schema); return the last one's rows."""
    with closing(instance.connect(database=schema)) as conn, conn.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        return cursor.fetchall()
