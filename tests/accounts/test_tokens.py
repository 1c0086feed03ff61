"""API tokens: several per user, revocable, stored as a SHA-256 only; `drf_create_token`
keeps DRF's output; tokens of DRF's authtoken table are carried over hashed."""

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from partdash.accounts.models import ApiToken
from tests.conftest import migrate_to_latest

SERVERS = "/api/v1/servers/"


def with_key(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_drf_create_token_prints_a_working_key_in_drf_s_words(viewer):
    out = StringIO()
    call_command("drf_create_token", "viewer", stdout=out)
    words = out.getvalue().split()
    assert words[:2] == ["Generated", "token"] and words[3:] == ["for", "user", "viewer"]
    assert with_key(words[2]).get(SERVERS).status_code == 200


def test_the_database_holds_only_a_hash_of_the_key(viewer):
    token, key = ApiToken.issue(viewer)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken")
        stored = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert key not in stored
    assert hashlib.sha256(key.encode()).hexdigest() in stored
    assert token.prefix == key[:10]


def test_a_user_has_several_tokens_and_a_revoked_one_stops_working(viewer):
    first, first_key = ApiToken.issue(viewer, name="grafana")
    _, second_key = ApiToken.issue(viewer, name="script")
    first.revoke()
    assert with_key(first_key).get(SERVERS).status_code == 401
    assert with_key(second_key).get(SERVERS).status_code == 200


def test_a_wrong_key_and_an_inactive_user_s_key_are_refused(viewer):
    _, key = ApiToken.issue(viewer)
    assert with_key(key + "x").get(SERVERS).status_code == 401
    viewer.is_active = False
    viewer.save()
    assert with_key(key).get(SERVERS).status_code == 401


def test_using_a_token_records_when(viewer):
    token, key = ApiToken.issue(viewer)
    with_key(key).get(SERVERS)
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_reset_revokes_the_user_s_other_tokens(viewer):
    _, old_key = ApiToken.issue(viewer)
    call_command("drf_create_token", "viewer", "--reset", stdout=StringIO())
    assert with_key(old_key).get(SERVERS).status_code == 401
    assert ApiToken.objects.active().filter(user=viewer).count() == 1


def test_an_unknown_user_is_a_clear_error(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="nobody does not exist"):
        call_command("drf_create_token", "nobody")


def test_the_admin_shows_a_new_token_s_key_once_and_revokes(staff, viewer):
    from django.test import Client

    client = Client()
    client.force_login(staff)
    response = client.post(
        "/admin/accounts/apitoken/add/", {"user": viewer.pk, "name": "ci"}, follow=True
    )
    message = next(str(m) for m in response.context["messages"])
    key = message.split(": ")[1].split()[0]
    assert with_key(key).get(SERVERS).status_code == 200
    token = ApiToken.objects.get(name="ci")
    client.post("/admin/accounts/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert with_key(key).get(SERVERS).status_code == 401


@pytest.mark.django_db(transaction=True)
def test_keys_of_drf_s_authtoken_table_are_hashed_and_removed(django_user_model, request):
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", "0002_roles")])
    request.addfinalizer(migrate_to_latest)
    user = django_user_model.objects.create_user("old")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamp,"
            " user_id integer)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, '2026-01-01 00:00:00', %s)",
            ["0123456789abcdef0123456789abcdef01234567", user.pk],
        )
    try:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate([("accounts", "0003_hash_authtoken_keys")])
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM authtoken_token")
            assert cursor.fetchone()[0] == 0
        old_key = "0123456789abcdef0123456789abcdef01234567"
        assert with_key(old_key).get(SERVERS).status_code == 200
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE authtoken_token")


@pytest.mark.django_db(transaction=True)
def test_roles_come_back_for_tests_after_a_flush(django_user_model):
    from django.contrib.auth.models import Group

    from tests.conftest import user_in

    Group.objects.all().delete()
    operator = user_in(django_user_model, "op", "operators")
    assert operator.has_perm("servers.poll_server")


def test_a_user_makes_and_revokes_their_own_tokens_on_the_tokens_page(viewer, operator):
    from django.test import Client

    theirs, _ = ApiToken.issue(operator)
    client = Client()
    client.force_login(viewer)
    made = client.post("/tokens/", {"name": "laptop"})
    key = made.context["key"]
    assert key in made.content.decode()
    assert with_key(key).get(SERVERS).status_code == 200
    assert client.get("/tokens/").content.decode().count(key) == 0  # shown once

    own = ApiToken.objects.get(user=viewer)
    assert client.post("/tokens/", {"revoke": own.pk}).status_code == 302
    assert with_key(key).get(SERVERS).status_code == 401
    assert client.post("/tokens/", {"revoke": theirs.pk}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.is_active


def test_the_tokens_page_needs_a_login(db):
    from django.test import Client

    assert Client().get("/tokens/")["Location"].startswith("/login/")
