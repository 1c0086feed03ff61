"""The admin's lists refuse filters on secret fields: `?password__startswith=` would tell
a password hash (or a token's hash, or an encrypted server password) character by
character, one "1 user" or "0 users" at a time."""

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory

from partdash.accounts.models import ApiToken
from partdash.lib.admin_lookups import touches_secret
from tests import builders


@pytest.fixture
def staff_client(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def test_a_filter_on_the_password_hash_is_refused_and_a_plain_filter_answers(staff_client, staff):
    prefix = staff.password[:6]
    refused = staff_client.get(f"/admin/auth/user/?password__startswith={prefix}")
    assert refused.status_code == 400
    assert staff_client.get("/admin/auth/user/?is_staff__exact=1").status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        "/admin/accounts/apitoken/?key_hash__startswith={hash}",
        "/admin/accounts/apitoken/?user__password__startswith=m",
        "/admin/servers/server/?password_token__startswith=gAAAA",
    ],
)
def test_filters_on_token_hashes_and_server_passwords_are_refused(staff_client, staff, query):
    token, _ = ApiToken.issue(staff)
    builders.server("db1", password="stored-pw")
    response = staff_client.get(query.format(hash=token.key_hash[:4]))
    assert response.status_code == 400


def test_no_registered_admin_list_filters_on_a_field_named_as_a_secret(staff):
    request = RequestFactory().get("/")
    request.user = staff
    for model, model_admin in admin.site._registry.items():
        for field in model._meta.get_fields():
            if touches_secret(field.name) and not field.is_relation:
                lookup = f"{field.name}__startswith"
                assert not model_admin.lookup_allowed(lookup, "a", request), (model, lookup)
