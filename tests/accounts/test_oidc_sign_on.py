"""Sign-on through an OpenID Connect provider (issue 42, point 2), against a real one:
django-oauth-toolkit with OIDC on, in a process of its own (tests/accounts/oidc_provider/).
The provider's groups claim decides the role: someone in its operators' group signs in
and may Poll now, a viewer may not, someone in no group cannot sign in; a group changed
at the provider changes the role at the next sign-in; a provider user whose name is a
local account's does not take it over."""

import re
from urllib.parse import urljoin

import pytest
import requests
from django.contrib.auth.models import Group
from django.test import Client

from partdash.accounts import oidc
from partdash.accounts.models import AuditEntry
from tests import builders
from tests.accounts.provider_server import start_provider
from tests.conftest import recreate_roles, user_in
from tests.services import stopped_after

pytestmark = pytest.mark.django_db
PARTDASH = "http://testserver"


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    with stopped_after(start_provider(tmp_path_factory.mktemp("provider"))) as started:
        yield started


@pytest.fixture
def signed_on(settings, provider):
    """partdash's settings as partdash.settings makes them of PARTDASH_OIDC_*."""
    env = provider.environment()
    settings.PARTDASH_OIDC_ISSUER = env["PARTDASH_OIDC_ISSUER"]
    settings.OIDC_RP_CLIENT_ID = env["PARTDASH_OIDC_CLIENT_ID"]
    settings.OIDC_RP_CLIENT_SECRET = env["PARTDASH_OIDC_CLIENT_SECRET"]
    settings.PARTDASH_OIDC_ROLE_GROUPS = {
        "viewers": env["PARTDASH_OIDC_VIEWER_GROUP"],
        "operators": env["PARTDASH_OIDC_OPERATOR_GROUP"],
        "admins": env["PARTDASH_OIDC_ADMIN_GROUP"],
    }
    settings.OIDC_TIMEOUT = 5
    oidc.discovery.cache_clear()
    if not Group.objects.filter(name="operators").exists():
        recreate_roles()
    return provider


def signed_in(name: str, password: str) -> Client | None:
    """The whole code flow: partdash sends the browser to the provider, the person signs
    in there, the provider sends them back with a code, partdash trades it for tokens."""
    partdash = Client()
    start = partdash.get("/oidc/authenticate/")
    assert start.status_code == 302, start.status_code
    browser = requests.Session()
    at_provider = browser.get(start["Location"], allow_redirects=False)
    login_url = urljoin(start["Location"], at_provider.headers["Location"])
    form = browser.get(login_url)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)[1]
    next_url = re.search(r'name="next" value="([^"]*)"', form.text)[1].replace("&amp;", "&")
    body = {"csrfmiddlewaretoken": token, "username": name, "password": password}
    answer = browser.post(login_url, data={**body, "next": next_url}, allow_redirects=False)
    if answer.status_code != 302:
        return None  # the provider's own login refused
    location = urljoin(login_url, answer.headers["Location"])
    while not location.startswith(PARTDASH):
        answer = browser.get(location, allow_redirects=False)
        location = urljoin(location, answer.headers["Location"])
    back = partdash.get(location.removeprefix(PARTDASH))
    assert back.status_code == 302
    return partdash if back["Location"] == "/" else None


def test_the_provider_s_groups_decide_who_signs_in_and_with_which_role(
    signed_on, redis_server, django_user_model
):
    signed_on.set_people(
        {
            "olga": ("olga-op-pw", ["staff", "dba"]),
            "vera": ("vera-op-pw", ["dba-readers"]),
            "nora": ("nora-op-pw", ["marketing"]),
            "lars": ("lars-op-pw", ["dba-leads"]),
        }
    )
    user_in(django_user_model, "lars", None)  # a local account of the same name
    server = builders.server("db-oidc", enabled=True)

    operator = signed_in("olga", "olga-op-pw")
    assert operator is not None
    assert operator.post(f"/api/v1/servers/{server.pk}/poll/").status_code == 202
    viewer = signed_in("vera", "vera-op-pw")
    assert viewer is not None
    assert viewer.get("/api/v1/servers/").status_code == 200
    assert viewer.post(f"/api/v1/servers/{server.pk}/poll/").status_code == 403
    assert signed_in("nora", "nora-op-pw") is None
    assert not django_user_model.objects.filter(username="nora").exists()
    assert signed_in("lars", "lars-op-pw") is None  # not the local lars, nor an admin
    lars = django_user_model.objects.get(username="lars")
    assert not lars.is_staff and not lars.groups.exists()
    assert Client().login(username="lars", password="lars-pw")

    # The provider moves olga to the readers: her next sign-in is a viewer's.
    signed_on.set_people({"olga": ("olga-op-pw", ["dba-readers"])})
    again = signed_in("olga", "olga-op-pw")
    assert again is not None
    assert again.post(f"/api/v1/servers/{server.pk}/poll/").status_code == 403
    olga = django_user_model.objects.get(username="olga")
    assert [g.name for g in olga.groups.all()] == ["viewers"]
    assert not olga.has_usable_password()

    signed = AuditEntry.objects.filter(event="sign_in").values_list("username", flat=True)
    assert sorted(signed) == ["olga", "olga", "vera"]
    assert AuditEntry.objects.filter(event="sign_in_failed").count() == 2  # nora, lars


def test_the_login_page_offers_the_provider_only_when_one_is_set(signed_on, settings):
    page = Client().get("/login/?next=/alerts/")
    assert b'id="sign-on-button"' in page.content
    assert b"Sign in with single sign-on" in page.content
    assert b'href="/oidc/authenticate/?next=/alerts/"' in page.content
    failed = Client().get("/login/?sign_on=failed")
    assert b'id="sign-on-error"' in failed.content
    settings.PARTDASH_OIDC_ISSUER = ""
    assert b"sign-on-button" not in Client().get("/login/").content
    assert Client().get("/oidc/authenticate/").status_code == 404
