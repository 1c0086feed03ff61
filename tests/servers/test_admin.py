"""Registering servers in the Django admin: the write-only encrypted password, validation,
`Test connection` against real MariaDB servers, and the changelist actions. Only Test
connection talks to a server; the other tests build their servers in the database
(tests/builders.py)."""

import base64
import html
import json
import re

import pytest

from partdash.servers.models import Server
from tests import builders
from tests.services import free_port

pytestmark = pytest.mark.django_db

ADD = "/admin/servers/server/add/"
CHANGELIST = "/admin/servers/server/"
SECRET = "admin-S3cret-pa55word"
HOST, PORT = "127.0.0.1", 3307  # a server registered but never connected to


def change_url(server: Server) -> str:
    return f"/admin/servers/server/{server.pk}/change/"


def form_data(**overrides) -> dict:
    """Every field of the server form, as a browser posts it."""
    return {
        "name": "adm1",
        "host": HOST,
        "port": PORT,
        "user": "root",
        "password": SECRET,
        "tls_mode": "preferred",
        "ssl_ca": "",
        "poll_interval": 60,
        "enabled": "on",
        "tags": "",
        **overrides,
    }


def add_server(admin_client, **overrides) -> Server:
    response = admin_client.post(ADD, form_data(**overrides))
    assert response.status_code == 302, response.content.decode()[:2000]
    return Server.objects.get(name=form_data(**overrides)["name"])


def page_text(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def follow_test_connection(admin_client, server: Server) -> str:
    """Press the `Test connection` button of the server's change page (a POST form)."""
    change_page = admin_client.get(change_url(server)).content.decode()
    form = re.search(
        r'<form method="post" action="([^"]+)"[^>]*>\s*<input type="hidden" '
        r'name="csrfmiddlewaretoken"[^>]*>\s*<button type="submit" class="test-connection">',
        change_page,
    )
    assert form, "the change page has no Test connection button"
    return page_text(admin_client.post(form[1]))


def register(name: str, instance, user: str = "root", password: str = "") -> Server:
    """A server saved directly (no form), pointing at `instance`."""
    server = Server(name=name, host=instance.host, port=instance.port, user=user)
    server.set_password(password)
    server.save()
    return server


# --- registering and editing ----------------------------------------------------------------


def test_a_server_registered_in_the_admin_is_saved_with_an_encrypted_password(admin_client):
    server = add_server(admin_client)
    assert (server.host, server.port, server.user) == (HOST, PORT, "root")
    assert server.poll_interval == 60
    assert server.enabled
    assert server.password_token
    assert SECRET not in server.password_token
    assert server.get_password() == SECRET


def test_the_change_page_never_shows_the_password_or_its_token(admin_client):
    server = add_server(admin_client)
    page = page_text(admin_client.get(change_url(server)))
    assert 'name="password"' in page
    assert SECRET not in page
    assert server.password_token not in page


def test_editing_with_a_blank_password_keeps_it(admin_client):
    server = add_server(admin_client)
    response = admin_client.post(change_url(server), form_data(password="", poll_interval=120))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.poll_interval == 120
    assert server.get_password() == SECRET


def test_clear_password_removes_it(admin_client):
    server = add_server(admin_client)
    response = admin_client.post(change_url(server), form_data(password="", clear_password="on"))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.password_token == ""
    assert server.get_password() == ""


def test_tags_are_normalised(admin_client):
    server = add_server(admin_client, tags="a, b,, a")
    assert server.tags == "a, b"


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"port": 70000}, "port", "less than or equal to 65535"),
        ({"poll_interval": 5}, "poll_interval", "greater than or equal to 10"),
        ({"ssl_ca": "/nonexistent/ca.pem"}, "ssl_ca", "/nonexistent/ca.pem is not a readable file"),
    ],
    ids=["port-out-of-range", "poll-interval-too-short", "missing-ca-file"],
)
def test_invalid_fields_are_reported_on_the_form(admin_client, overrides, field, message):
    response = admin_client.post(ADD, form_data(**overrides))
    page = page_text(response)
    assert field in response.context["adminform"].form.errors
    assert message in page
    assert not Server.objects.exists()


# --- Test connection ------------------------------------------------------------------------


def test_test_connection_reports_a_reachable_server_with_every_privilege(admin_client, mariadb):
    server = register("local", mariadb)
    version = mariadb.execute("SELECT VERSION()")[0][0]
    page = follow_test_connection(admin_client, server)
    assert f"Reachable: MariaDB {version}" in page
    assert '<td class="setting-performance_schema">OFF</td>' in page
    assert "Every monitoring privilege is granted" in page
    assert "GRANT" not in page


def test_test_connection_reports_a_wrong_password_without_a_traceback(admin_client, mariadb):
    server = register("wrongpw", mariadb, password="not-the-password")
    page = follow_test_connection(admin_client, server)
    assert "Unreachable (access_denied)" in page
    assert "access denied for 'root'" in page
    assert "not-the-password" not in page
    assert "Traceback" not in page


def test_test_connection_reports_a_refused_connection(admin_client):
    server = Server.objects.create(name="gone", host="127.0.0.1", port=free_port(), user="root")
    page = follow_test_connection(admin_client, server)
    assert "Unreachable (refused)" in page
    assert "Traceback" not in page


def test_test_connection_lists_each_missing_privilege_with_its_grant(admin_client, mariadb):
    mariadb.execute("CREATE OR REPLACE USER 'mon'@'%' IDENTIFIED BY 'pw'")
    server = register("leastpriv", mariadb, user="mon", password="pw")
    page = follow_test_connection(admin_client, server)
    assert "Reachable: MariaDB" in page
    missing = re.search(r'<ul class="missing-privileges">(.*?)</ul>', page, re.S)[1]
    assert re.findall(r"<li>(.*?)</li>", missing, re.S) == [
        "PROCESS: <code>GRANT PROCESS ON *.* TO 'mon'@'%';</code>",
        "SELECT on mysql.innodb_table_stats: "
        "<code>GRANT SELECT ON mysql.innodb_table_stats TO 'mon'@'%';</code>",
        "SELECT on performance_schema: "
        "<code>GRANT SELECT ON performance_schema.* TO 'mon'@'%';</code>",
    ]


# --- changelist actions ---------------------------------------------------------------------


def test_the_test_connection_action_probes_several_servers_at_once(admin_client, mariadb_ps):
    up = register("up", mariadb_ps)
    down = Server.objects.create(name="down", host="127.0.0.1", port=free_port(), user="root")
    response = admin_client.post(
        CHANGELIST, {"action": "test_connection", "_selected_action": [up.pk, down.pk]}
    )
    page = page_text(response)
    results = dict(re.findall(r'data-server="([^"]+)">(.*?)Edit ', page, re.S))
    assert results.keys() == {"up", "down"}
    assert '<td class="setting-performance_schema">ON</td>' in results["up"]
    assert "Unreachable (refused)" in results["down"]


def test_the_poll_now_action_queues_polls(admin_client, queue):
    servers = [builders.server(name, enabled=True) for name in ("p1", "p2")]
    response = admin_client.post(
        CHANGELIST,
        {"action": "poll_now", "_selected_action": [s.pk for s in servers]},
        follow=True,
    )
    assert "Poll queued for 2 of 2 servers." in page_text(response)
    bodies = [json.loads(m)["body"] for m in queue.lrange("celery", 0, -1)]
    queued_args = sorted(json.loads(base64.b64decode(body))[0] for body in bodies)
    assert queued_args == sorted([s.pk] for s in servers)


# --- access ---------------------------------------------------------------------------------


def test_a_non_staff_user_cannot_reach_the_admin(client, django_user_model):
    server = builders.server("hidden")
    user = django_user_model.objects.create_user("viewer", password="viewer-pw")
    client.force_login(user)
    for url in (
        CHANGELIST,
        change_url(server),
        f"/admin/servers/server/{server.pk}/test-connection/",
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


def test_the_admin_spells_tls_in_capitals(admin_client):
    """Every label the server's pages show reads "TLS", never Django's "Tls" from a field
    name; the changelist's filters and columns too."""
    server = builders.server("labels", tls_offered=True)
    for url in (ADD, change_url(server), CHANGELIST):
        page = page_text(admin_client.get(url))
        assert not re.search(r"\bTls\b", page), (url, re.findall(r".{30}\bTls\b.{30}", page))
    change_page = page_text(admin_client.get(change_url(server)))
    for label in ("TLS mode", "TLS CA file", "TLS offered", "TLS checked at"):
        assert label in change_page, label
