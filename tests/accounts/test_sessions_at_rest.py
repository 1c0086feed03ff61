"""A copy of the database logs nobody in: sessions are stored under a hash of their key,
so the cookie cannot be read back from `django_session`, and a row replayed as a cookie
is refused."""

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from partdash.accounts.sessions import stored_key
from tests.conftest import migrate_to_latest


def logged_in(username: str) -> Client:
    client = Client()
    response = client.post("/login/", {"username": username, "password": f"{username}-pw"})
    assert response.status_code == 302
    return client


def stored_session_keys() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT session_key FROM django_session")
        return [row[0] for row in cursor.fetchall()]


def test_the_database_holds_no_session_cookie_only_its_hash(viewer):
    client = logged_in("viewer")
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    stored = stored_session_keys()
    assert cookie not in stored
    assert stored_key(cookie) in stored
    assert client.get("/").status_code == 200


def test_a_key_copied_from_the_database_is_no_session(viewer):
    logged_in("viewer")
    (copied,) = stored_session_keys()
    thief = Client()
    thief.cookies[settings.SESSION_COOKIE_NAME] = copied
    response = thief.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_logging_out_deletes_the_stored_session(viewer):
    client = logged_in("viewer")
    assert len(stored_session_keys()) == 1
    client.post("/logout/")
    assert stored_session_keys() == []


def test_the_session_cookie_is_http_only(viewer):
    client = logged_in("viewer")
    assert client.cookies[settings.SESSION_COOKIE_NAME]["httponly"]


@pytest.mark.django_db(transaction=True)
def test_sessions_stored_in_clear_before_are_deleted_by_the_migration(request):
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", "0003_hash_authtoken_keys")])
    request.addfinalizer(migrate_to_latest)
    clear, hashed = "a" * 32, stored_key("b" * 32)
    with connection.cursor() as cursor:
        for key in (clear, hashed):
            cursor.execute(
                "INSERT INTO django_session (session_key, session_data, expire_date) "
                "VALUES (%s, '', '2099-01-01 00:00:00')",
                [key],
            )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("accounts", "0004_forget_clear_session_keys")])
    assert stored_session_keys() == [hashed]
