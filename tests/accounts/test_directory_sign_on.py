"""Sign-on from a directory (issue 42, point 1), against a real OpenLDAP `slapd` that
refuses everything before StartTLS: a directory user in the operators' group logs in
at /login/ and may Poll now, one in the viewers' group may not, one in no group cannot
log in; moving a user to another group changes their role at the next login; the
lockout counts directory failures; local accounts keep working. The browser part (the
login page in Chromium) is one test."""

import environ
import ldap
import pytest
from django.contrib.auth.models import Group
from django.test import Client

from partdash.accounts.directory_settings import ldap_settings
from partdash.accounts.models import AuditEntry
from tests import builders
from tests.accounts.directory_server import start_directory
from tests.conftest import log_in_through_the_page, recreate_roles, user_in
from tests.services import stopped_after

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    with stopped_after(start_directory(tmp_path_factory.mktemp("slapd"))) as served:
        yield served


@pytest.fixture
def signed_on(settings, directory, monkeypatch):
    """partdash configured for the directory through its PARTDASH_LDAP_* variables, as
    partdash.settings reads them."""
    for name, value in directory.environment().items():
        monkeypatch.setenv(name, value)
    for name, value in ldap_settings(environ.Env()).items():
        setattr(settings, name, value)
    lockout, *rest = settings.AUTHENTICATION_BACKENDS
    settings.AUTHENTICATION_BACKENDS = [
        lockout,
        "partdash.accounts.directory.DirectoryBackend",
        *rest,
    ]
    if not Group.objects.filter(name="operators").exists():
        recreate_roles()  # a transactional test before this one flushed them
    return directory


def logged_in(username: str, password: str) -> Client | None:
    client = Client()
    answer = client.post("/login/", {"username": username, "password": password})
    return client if answer.status_code == 302 else None


def may_poll(client: Client, server) -> int:
    return client.post(f"/api/v1/servers/{server.pk}/poll/").status_code


def test_directory_groups_decide_who_logs_in_and_with_which_role(
    signed_on, redis_server, django_user_model
):
    olga = signed_on.add_person("olga", "olga-dir-pw", ("operators",))
    signed_on.add_person("vera", "vera-dir-pw", ("viewers",))
    signed_on.add_person("ada", "ada-dir-pw", ("admins",))
    signed_on.add_person("nora", "nora-dir-pw")
    server = builders.server("db-ldap", enabled=True)

    operator = logged_in("olga", "olga-dir-pw")
    assert operator is not None and may_poll(operator, server) == 202
    viewer = logged_in("vera", "vera-dir-pw")
    assert viewer is not None
    assert viewer.get("/api/v1/servers/").status_code == 200
    assert may_poll(viewer, server) == 403
    assert logged_in("nora", "nora-dir-pw") is None
    assert not django_user_model.objects.filter(username="nora").exists()
    assert logged_in("olga", "wrong") is None
    admin = logged_in("ada", "ada-dir-pw")
    assert admin is not None and admin.get("/admin/").status_code == 200

    # The directory moves olga to the viewers: her next login is a viewer's.
    signed_on.leave(olga, "operators")
    signed_on.join(olga, "viewers")
    again = logged_in("olga", "olga-dir-pw")
    assert again is not None and may_poll(again, server) == 403
    olga_user = django_user_model.objects.get(username="olga")
    assert [g.name for g in olga_user.groups.all()] == ["viewers"]
    assert not olga_user.has_usable_password()  # never a local password to guess

    # A local account beside the directory; the directory's entry of the same name (a
    # viewer) neither signs it in nor changes its role.
    user_in(django_user_model, "local-admin", "admins", is_staff=True)
    signed_on.add_person("local-admin", "directory-pw", ("viewers",))
    assert logged_in("local-admin", "directory-pw") is None
    local = logged_in("local-admin", "local-admin-pw")
    assert local is not None and local.get("/admin/").status_code == 200

    signed_in = AuditEntry.objects.filter(event="sign_in").values_list("username", flat=True)
    assert sorted(signed_in) == ["ada", "local-admin", "olga", "olga", "vera"]
    failed = AuditEntry.objects.filter(event="sign_in_failed").values_list("username", flat=True)
    assert sorted(failed) == ["local-admin", "nora", "olga"]
    role_change = AuditEntry.objects.filter(event="update", changes__has_key="groups")
    assert [e.changes["groups"] for e in role_change.filter(object_repr="olga").order_by("id")] == [
        [[], ["operators"]],
        [["operators"], ["viewers"]],
    ]


def test_the_lockout_counts_directory_failures(signed_on, settings):
    settings.AXES_FAILURE_LIMIT = 3
    signed_on.add_person("lena", "lena-dir-pw", ("operators",))
    answers = [
        Client().post("/login/", {"username": "lena", "password": "guess"}).status_code
        for _ in range(3)
    ]
    assert answers == [200, 200, 429]
    right = Client().post("/login/", {"username": "lena", "password": "lena-dir-pw"})
    assert right.status_code == 429


def test_the_directory_answers_only_after_starttls(directory):
    with pytest.raises((ldap.CONFIDENTIALITY_REQUIRED, ldap.STRONG_AUTH_REQUIRED)):
        directory.connect(start_tls=False)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)  # the live server's thread reads the rows
def test_an_operator_from_the_directory_polls_through_the_login_page(
    signed_on, redis_server, page, live_server
):
    signed_on.add_person("otto", "otto-dir-pw", ("operators",))
    signed_on.add_person("vince", "vince-dir-pw", ("viewers",))
    server = builders.server("db-ldap-page", enabled=True)

    def poll_status() -> int:
        return page.evaluate(
            """async (url) => {
                const csrf = document.cookie.match(/csrftoken=([^;]+)/)[1];
                const answer = await fetch(url, {method: "POST", headers: {"X-CSRFToken": csrf}});
                return answer.status;
            }""",
            f"/api/v1/servers/{server.pk}/poll/",
        )

    log_in_through_the_page(page, live_server, "otto", "otto-dir-pw")
    assert poll_status() == 202
    page.context.clear_cookies()
    log_in_through_the_page(page, live_server, "vince", "vince-dir-pw")
    assert poll_status() == 403
