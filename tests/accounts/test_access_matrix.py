"""Who may do what (README, "Access"): every endpoint and page, for each role, with each
method. Rows are built straight in the database (tests/builders.py).

Outcomes: `ok` (served or done), `denied` (401/403 from the API, 403 from a page or the
admin), `login` (a page sends the browser to a login page), `405` (nobody may: the
method does not exist there)."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.test import Client, RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from partdash.alerts.models import AlertRule
from partdash.servers.models import Server
from tests import builders
from tests.conftest import from_the_migrations, token_client, user_in

ROLES = ["anonymous", "viewer", "viewers_group", "operator", "bare_staff", "admin"]
READERS = {"viewer", "viewers_group", "operator", "bare_staff", "admin"}
WRITERS = {"operator", "admin"}


def api_expect(writers: set[str] | None) -> dict[str, str]:
    """A read (writers None): every logged-in role; a write: `writers` only."""
    allowed = READERS if writers is None else writers
    return {role: "ok" if role in allowed else "denied" for role in ROLES}


def nobody() -> dict[str, str]:
    return {role: "denied" if role == "anonymous" else "405" for role in ROLES}


@pytest.fixture
def world(db):
    """One of everything, for paths to name."""
    server = builders.server("db-matrix", port=1)  # nothing listens on port 1: probes fail fast
    table = builders.table(server)
    alert = builders.alert(server, "unreachable")
    rule = AlertRule.objects.create(rule="skew", threshold=5)
    silence = builders.silence(comment="matrix")
    return {
        "server": server.pk,
        "table": table.pk,
        "alert": alert.pk,
        "rule": rule.pk,
        "silence": silence.pk,
    }


@pytest.fixture
def users(django_user_model):
    return {
        "viewer": user_in(django_user_model, "viewer", None),
        "viewers_group": user_in(django_user_model, "grouped", "viewers"),
        "operator": user_in(django_user_model, "operator", "operators"),
        # Staff status alone opens the admin's door, and nothing else.
        "bare_staff": user_in(django_user_model, "bare", None, is_staff=True),
        "admin": user_in(django_user_model, "boss", "admins", is_staff=True),
    }


def later(hours: float = 2) -> str:
    return (timezone.now() + timedelta(hours=hours)).isoformat()


NEW_SERVER = {
    "name": "new1",
    "host": "127.0.0.1",
    "port": 3306,
    "user": "u",
    "password": "p",
    "poll_interval": 60,
}

# (method, path, body, expected outcome per role)
API = [
    ("get", "/api/v1/servers/", None, api_expect(None)),
    ("post", "/api/v1/servers/", NEW_SERVER, api_expect(WRITERS)),
    ("get", "/api/v1/servers/{server}/", None, api_expect(None)),
    ("patch", "/api/v1/servers/{server}/", {"poll_interval": 120}, api_expect(WRITERS)),
    ("delete", "/api/v1/servers/{server}/", None, api_expect(WRITERS)),
    ("post", "/api/v1/servers/{server}/poll/", None, api_expect(WRITERS)),
    ("get", "/api/v1/servers/{server}/tables/", None, api_expect(None)),
    ("get", "/api/v1/servers/{server}/health/", None, api_expect(None)),
    ("get", "/api/v1/tables/{table}/", None, api_expect(None)),
    ("patch", "/api/v1/tables/{table}/", {"export_partitions": True}, api_expect(WRITERS)),
    ("delete", "/api/v1/tables/{table}/", None, nobody()),
    ("get", "/api/v1/tables/{table}/partitions/", None, api_expect(None)),
    ("get", "/api/v1/tables/{table}/statements/", None, api_expect(None)),
    ("post", "/api/v1/tables/{table}/statements/", {}, nobody()),
    ("get", "/api/v1/tables/{table}/history/?metric=rows", None, api_expect(None)),
    ("get", "/api/v1/findings/", None, api_expect(None)),
    ("post", "/api/v1/findings/", {}, nobody()),
    ("get", "/api/v1/audit/", None, api_expect({"admin"})),  # the audit trail: admins
    ("post", "/api/v1/audit/", {}, {**api_expect({"admin"}), "admin": "405"}),
    ("get", "/api/v1/search/?q=orders", None, api_expect(None)),
    ("get", "/api/v1/alerts/", None, api_expect(None)),
    ("get", "/api/v1/alerts/counts/", None, api_expect(None)),
    ("post", "/api/v1/alerts/test/", None, api_expect(WRITERS)),
    ("post", "/api/v1/alerts/", {"rule": "skew"}, nobody()),
    ("delete", "/api/v1/alerts/{alert}/", None, nobody()),
    ("get", "/api/v1/alert-rules/", None, api_expect(None)),
    ("post", "/api/v1/alert-rules/", {"rule": "runway", "threshold": 20}, api_expect(WRITERS)),
    ("patch", "/api/v1/alert-rules/{rule}/", {"enabled": False}, api_expect(WRITERS)),
    ("delete", "/api/v1/alert-rules/{rule}/", None, api_expect(WRITERS)),
    ("get", "/api/v1/silences/", None, api_expect(None)),
    ("post", "/api/v1/silences/", {"ends_at": "LATER", "comment": "m"}, api_expect(WRITERS)),
    ("delete", "/api/v1/silences/{silence}/", None, api_expect(WRITERS)),
    ("get", "/api/v1/notifications/", None, api_expect(None)),
    ("post", "/api/v1/notifications/", {}, nobody()),
    # Issue 27: server groups, retention policies, the maintenance plan, drift side by side.
    ("get", "/api/v1/server-groups/", None, api_expect(None)),
    ("post", "/api/v1/server-groups/", {"name": "g-matrix"}, api_expect(WRITERS)),
    ("get", "/api/v1/retention-policies/", None, api_expect(None)),
    (
        "post",
        "/api/v1/retention-policies/",
        {"pattern": "shop.*", "keep_days": 90},
        api_expect(WRITERS),
    ),
    ("get", "/api/v1/maintenance-plan/", None, api_expect(None)),
    ("post", "/api/v1/maintenance-plan/", {}, nobody()),
    ("get", "/api/v1/servers/{server}/maintenance-plan.sql", None, api_expect(None)),
    ("get", "/api/v1/tables/{table}/drift/", None, api_expect(None)),
    ("get", "/api/schema/", None, api_expect(None)),
    ("get", "/metrics", None, api_expect(None)),
    ("post", "/metrics", {}, nobody()),
]


def case_ids(cases: list[tuple]) -> list[str]:
    """`get-/api/v1/servers/`: the same in every process (test ids that hold a dict built
    from a set would differ between pytest-xdist's workers)."""
    return [f"{method}-{path}" for method, path, *_ in cases]


def api_client(role: str, users: dict) -> APIClient:
    return APIClient() if role == "anonymous" else token_client(users[role])


def outcome_of_api(status: int) -> str:
    if status in (401, 403):
        return "denied"
    if status == 405:
        return "405"
    assert status < 500, status
    return "ok"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "path", "body", "expected"), API, ids=case_ids(API))
def test_the_api_answers_each_role_as_its_permissions_say(
    world, users, role, method, path, body, expected
):
    if body is not None:
        body = {k: later() if v == "LATER" else v for k, v in body.items()}
    response = getattr(api_client(role, users), method)(path.format(**world), body, format="json")
    assert outcome_of_api(response.status_code) == expected[role], response.content[:300]


def page_expect(readers_ok: bool = True, writers: set[str] | None = None) -> dict[str, str]:
    expected = {"anonymous": "login"}
    for role in READERS:
        allowed = writers is None or role in writers
        expected[role] = "ok" if (readers_ok and allowed) else "denied"
    return expected


def admin_expect(needs: str | None) -> dict[str, str]:
    """The admin: non-staff go to its login; staff need the permission (None: none)."""
    expected = {role: "login" for role in ("anonymous", "viewer", "viewers_group", "operator")}
    expected["admin"] = "ok"
    expected["bare_staff"] = "ok" if needs is None else "denied"
    return expected


PAGES = [
    ("get", "/", None, page_expect()),
    ("get", "/servers/{server}/", None, page_expect()),
    ("get", "/tables/{table}/", None, page_expect()),
    ("get", "/alerts/", None, page_expect()),
    ("get", "/alerts/silence/", None, page_expect()),
    ("post", "/alerts/silence/", {"duration": "4h"}, page_expect(writers=WRITERS)),
    ("post", "/alerts/test/", None, page_expect(writers=WRITERS)),
    ("get", "/search/?q=orders", None, page_expect()),
    ("get", "/plan/", None, page_expect()),
    ("get", "/api/docs/", None, page_expect()),
    ("get", "/tokens/", None, page_expect()),
    ("post", "/tokens/", {"name": "mine"}, page_expect()),  # one's own tokens
    ("get", "/admin/", None, admin_expect(None)),
    ("get", "/admin/servers/server/", None, admin_expect("servers.view_server")),
    (
        "get",
        "/admin/servers/server/{server}/test-connection/",
        None,
        admin_expect("servers.poll_server"),
    ),
    (
        "post",
        "/admin/servers/server/{server}/test-connection/",
        {},
        admin_expect("servers.poll_server"),
    ),
    ("get", "/admin/auth/user/", None, admin_expect("auth.view_user")),
    ("get", "/admin/servers/servergroup/", None, admin_expect("servers.view_servergroup")),
    (
        "get",
        "/admin/metrics/retentionpolicy/",
        None,
        admin_expect("metrics.view_retentionpolicy"),
    ),
    ("get", "/admin/accounts/apitoken/", None, admin_expect("accounts.view_apitoken")),
    ("get", "/admin/accounts/auditentry/", None, admin_expect("accounts.view_auditentry")),
]


def outcome_of_page(response) -> str:
    if response.status_code == 302 and "login/" in response["Location"]:
        return "login"
    if response.status_code == 403:
        return "denied"
    assert response.status_code in (200, 302), response.status_code
    return "ok"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "path", "body", "expected"), PAGES, ids=case_ids(PAGES))
def test_pages_and_the_admin_answer_each_role_as_its_permissions_say(
    world, users, role, method, path, body, expected
):
    client = Client()
    if role != "anonymous":
        client.force_login(users[role])
    response = getattr(client, method)(path.format(**world), body or {})
    assert outcome_of_page(response) == expected[role]


def test_anonymous_pages_go_to_partdash_s_own_login_page(world):
    response = Client().get(f"/servers/{world['server']}/")
    assert response["Location"] == f"/login/?next=/servers/{world['server']}/"


@pytest.mark.parametrize("role", ["viewer", "operator", "bare_staff", "admin"])
def test_the_admin_offers_poll_now_and_test_connection_to_operators_and_admins_only(
    world, users, role
):
    request = RequestFactory().get("/admin/servers/server/")
    request.user = users[role]
    from django.contrib.admin import site

    actions = site.get_model_admin(Server).get_actions(request)  # as registered
    assert ({"poll_now", "test_connection"} <= set(actions)) == (role in WRITERS)


def test_the_migration_gives_each_role_its_permissions(db):
    if not Group.objects.exists():
        from_the_migrations()  # a transactional test before this one, in this worker, flushed them

    def codenames(group: str) -> set[str]:
        return set(Group.objects.get(name=group).permissions.values_list("codename", flat=True))

    assert "poll_server" in codenames("operators") - codenames("viewers")
    assert {"add_server", "change_alertrule", "delete_silence"} <= codenames("operators")
    assert not {"add_server", "poll_server", "add_silence"} & codenames("viewers")
    assert {"add_user", "add_apitoken", "delete_apitoken"} <= codenames("admins") - codenames(
        "operators"
    )
    assert "view_auditentry" in codenames("admins") - codenames("operators") - codenames("viewers")


@pytest.mark.parametrize("role", ["viewers_group", "operator", "admin"])
def test_ending_silences_in_the_admin_needs_the_change_permission(users, role):
    from django.contrib.admin import site

    from partdash.alerts.admin import SilenceAdmin
    from partdash.alerts.models import Silence

    user = users[role]
    user.is_staff = True  # the admin's door open; the permission decides
    request = RequestFactory().get("/admin/alerts/silence/")
    request.user = user
    actions = SilenceAdmin(Silence, site).get_actions(request)
    assert ("end_now" in actions) == (role in WRITERS)
