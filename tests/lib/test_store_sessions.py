"""Each connection to a PostgreSQL store switches JIT compiling off for its session
(partdash/lib/store_sessions.py): the server's own setting is left alone."""

import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL store's setting")
def test_a_store_connection_does_not_jit_compile_its_queries():
    fresh = connections.create_connection("default")  # as a worker's or a request's is
    try:
        with fresh.cursor() as cursor:
            cursor.execute("SELECT setting, source FROM pg_settings WHERE name = 'jit'")
            # "session": partdash's SET, whatever the server's default (on, from 12).
            assert cursor.fetchone() == ("off", "session")
    finally:
        fresh.close()
