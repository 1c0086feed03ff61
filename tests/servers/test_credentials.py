"""A stored password only ever goes where an admin sent it, and never in clear text over
plain TCP. A hostile MySQL server of the tests' own (`tests/fake_mysql.py`) asks for the
password in clear text; real private MariaDB servers hold the accounts. The rules on
changing where a password goes are checked on servers built in the database
(tests/builders.py): nothing connects there."""

from collections.abc import Iterator

import pymysql
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from partdash.mysql.connection import ConnectionFailure, Target, open_session
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests import builders
from tests.fake_mysql import FakeMySQL, server_tls_context
from tests.servers.certificates import CertificateFiles, write_certificates

pytestmark = pytest.mark.django_db

PASSWORD = "Cred-7d41-do-not-leak"
SERVERS = "/api/v1/servers/"
REFUSED = (
    "refused to send the password in clear text: "
    "the server asked for mysql_clear_password over an unencrypted connection"
)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> CertificateFiles:
    return write_certificates(tmp_path_factory.mktemp("tls"), "fake")


@pytest.fixture
def account(mariadb) -> Iterator[str]:
    """A `cred` account with a password on the private MariaDB."""
    mariadb.execute("CREATE OR REPLACE USER 'cred'@'%%' IDENTIFIED BY %s", (PASSWORD,))
    yield "cred"
    mariadb.execute("DROP USER IF EXISTS 'cred'@'%'")


@pytest.fixture
def fake() -> Iterator[FakeMySQL]:
    with FakeMySQL(switch_to="mysql_clear_password") as server:
        yield server


def assert_never_received_the_password(fake: FakeMySQL) -> None:
    assert PASSWORD.encode() not in fake.received
    assert PASSWORD.encode() not in fake.payloads


def connect(server: FakeMySQL) -> ConnectionFailure:
    with pytest.raises(ConnectionFailure) as failure:
        with open_session(Target(server.host, server.port, "root", PASSWORD)):
            pass
    return failure.value


# -- clear text ---------------------------------------------------------------------------------


def test_the_fake_server_gets_the_password_from_a_stock_pymysql_client(fake):
    """What partdash does differently: PyMySQL on its own answers the switch."""
    with pytest.raises(pymysql.OperationalError):
        pymysql.connect(host=fake.host, port=fake.port, user="root", password=PASSWORD)

    assert PASSWORD.encode() + b"\0" in fake.received


@pytest.mark.parametrize(
    ("greeting_plugin", "switch_to", "plugin"),
    [
        ("mysql_native_password", "mysql_clear_password", "mysql_clear_password"),
        ("mysql_native_password", "dialog", "dialog"),
        ("mysql_clear_password", None, "mysql_clear_password"),
        ("dialog", None, "dialog"),
    ],
    ids=["switch-to-clear", "switch-to-dialog", "greeting-clear", "greeting-dialog"],
)
def test_a_clear_text_request_over_plain_tcp_is_refused(greeting_plugin, switch_to, plugin):
    with FakeMySQL(switch_to=switch_to, greeting_plugin=greeting_plugin) as hostile:
        failure = connect(hostile)

    assert failure.kind == "tls"
    assert failure.message == REFUSED.replace("mysql_clear_password", plugin)
    assert_never_received_the_password(hostile)
    assert not any(c.answered for c in hostile.conversations)


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.mark.parametrize("plugin", ["caching_sha2_password", "sha256_password"])
def test_a_stock_pymysql_client_gives_its_password_to_a_server_with_its_own_key(plugin, rsa_key):
    """What partdash does differently: PyMySQL encrypts the password under whatever public
    key the server hands it over plain TCP, so the server reads it."""
    with FakeMySQL(switch_to=plugin, rsa_key=rsa_key) as hostile:
        with pytest.raises(pymysql.OperationalError):
            pymysql.connect(host=hostile.host, port=hostile.port, user="root", password=PASSWORD)

    assert hostile.conversations[0].decrypted == PASSWORD.encode() + b"\0"


@pytest.mark.parametrize("plugin", ["caching_sha2_password", "sha256_password"])
def test_a_password_under_the_servers_own_key_over_plain_tcp_is_refused(plugin, rsa_key):
    with FakeMySQL(switch_to=plugin, rsa_key=rsa_key) as hostile:
        failure = connect(hostile)

    (conversation,) = hostile.conversations
    assert conversation.key_sent and conversation.decrypted == b""
    assert failure.kind == "tls"
    assert failure.message.startswith("refused to send the password over an unencrypted")
    assert "\n" not in failure.message
    assert_never_received_the_password(hostile)


@pytest.mark.parametrize("plugin", ["mysql_clear_password", "dialog"])
def test_over_tls_a_ca_verified_the_clear_text_request_is_answered_encrypted(certificates, plugin):
    """Over TLS nobody verified it is refused (tests/servers/test_certificate_approval.py)."""
    context = server_tls_context(str(certificates.cert), str(certificates.key))
    with FakeMySQL(switch_to=plugin, tls=context) as tls_server:
        target = Target(
            tls_server.host, tls_server.port, "root", PASSWORD, "verify_ca", str(certificates.ca)
        )
        with pytest.raises(ConnectionFailure) as raised:
            with open_session(target):
                pass
        failure = raised.value

    (conversation,) = tls_server.conversations
    assert conversation.encrypted and conversation.answered
    assert PASSWORD.encode() in tls_server.payloads  # it answered, inside TLS
    assert PASSWORD.encode() not in tls_server.received  # nothing readable on the wire
    assert failure.kind == "access_denied"


def test_verify_ca_refuses_a_server_without_tls_before_any_password_question(certificates):
    with FakeMySQL(switch_to=None, greeting_plugin="mysql_clear_password") as hostile:
        target = Target(
            hostile.host, hostile.port, "root", PASSWORD, "verify_ca", str(certificates.ca)
        )
        with pytest.raises(ConnectionFailure) as failure:
            with open_session(target):
                pass

    assert failure.value.message == (
        f"{hostile.host}:{hostile.port} does not offer TLS but verify_ca is set"
    )
    assert_never_received_the_password(hostile)


def test_a_poll_of_a_server_asking_for_clear_text_fails_with_the_reason(fake):
    server = Server(name="hostile", host=fake.host, port=fake.port, user="root")
    server.set_password(PASSWORD)
    server.save()

    report = poll_server(server)

    assert report.error == REFUSED
    server.refresh_from_db()
    assert (server.status, server.last_error) == ("unreachable", REFUSED)
    assert server.tls_offered is False
    assert_never_received_the_password(fake)


# -- the original attack, end to end ------------------------------------------------------------


def register_through_the_api(staff_api, mariadb, account) -> Server:
    body = {"name": "victim", "host": mariadb.host, "port": mariadb.port, "user": account}
    response = staff_api.post(SERVERS, {**body, "password": PASSWORD}, format="json")
    assert response.status_code == 201, response.content
    server = Server.objects.get(pk=response.json()["id"])
    assert poll_server(server).ok  # the password works where the admin sent it
    return server


def test_moving_a_server_to_another_port_without_the_password_is_refused(
    staff_api, mariadb, account, fake
):
    server = register_through_the_api(staff_api, mariadb, account)

    response = staff_api.patch(f"{SERVERS}{server.pk}/", {"port": fake.port}, format="json")

    assert response.status_code == 400
    assert response.json() == {"port": ["changing the port needs the password again"]}
    server.refresh_from_db()
    assert server.port == mariadb.port
    assert poll_server(server).ok  # the poll right after still goes to the approved place
    assert fake.conversations == []


def test_moving_a_server_with_the_password_still_sends_nothing_in_clear_text(
    staff_api, mariadb, account, fake
):
    server = register_through_the_api(staff_api, mariadb, account)

    response = staff_api.patch(
        f"{SERVERS}{server.pk}/", {"port": fake.port, "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200, response.content
    report = poll_server(Server.objects.get(pk=server.pk))

    assert report.error == REFUSED
    assert len(fake.conversations) == 1
    assert_never_received_the_password(fake)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"host": "localhost"}, "host", "host"),
        ({"user": "monitor"}, "user", "user"),
        ({"tls_mode": "disabled"}, "tls_mode", "TLS mode"),
        ({"ssl_ca": "/etc/ssl/certs/ca-certificates.crt"}, "ssl_ca", "TLS CA file"),
        (
            {"tls_approved_fingerprint": "SHA256:" + "ab" * 32},
            "tls_approved_fingerprint",
            "approved TLS certificate",
        ),
    ],
    ids=["host", "user", "tls-mode", "ssl-ca", "approved-certificate"],
)
def test_each_destination_field_needs_the_password_again(staff_api, change, field, words):
    server = builders.server("guarded", password=PASSWORD, user="root")

    response = staff_api.patch(f"{SERVERS}{server.pk}/", change, format="json")

    assert response.status_code == 400
    assert response.json() == {field: [f"changing the {words} needs the password again"]}


def test_the_same_value_again_is_no_change(staff_api):
    server = builders.server("same", password=PASSWORD, user="root")

    response = staff_api.patch(
        f"{SERVERS}{server.pk}/", {"host": server.host, "port": server.port}, format="json"
    )

    assert response.status_code == 200


def test_clearing_the_password_while_moving_is_allowed(staff_api, fake):
    server = builders.server("cleared", password=PASSWORD, user="root")

    response = staff_api.patch(
        f"{SERVERS}{server.pk}/", {"port": fake.port, "password": ""}, format="json"
    )

    assert response.status_code == 200
    server.refresh_from_db()
    assert (server.port, server.has_password) == (fake.port, False)


def test_a_server_without_a_stored_password_moves_freely(staff_api):
    server = builders.server("nopw", user="root")

    response = staff_api.patch(f"{SERVERS}{server.pk}/", {"port": 3307}, format="json")

    assert response.status_code == 200


def test_the_model_names_what_changed_since_it_was_loaded():
    builders.server("loaded", password=PASSWORD, user="root")
    server = Server.objects.get(name="loaded")
    assert server.password_reuse() == []

    server.host, server.tls_mode = "elsewhere.example", "disabled"

    assert server.destination_changes() == ["host", "tls_mode"]
    assert server.password_reuse() == ["host", "tls_mode"]
    server.set_password(PASSWORD)
    assert server.password_reuse() == []


# -- the admin ----------------------------------------------------------------------------------


def admin_form(server: Server, **changes) -> dict:
    fields = {
        "name": server.name,
        "host": server.host,
        "port": server.port,
        "user": server.user,
        "password": "",
        "tls_mode": server.tls_mode,
        "ssl_ca": server.ssl_ca,
        "poll_interval": server.poll_interval,
        "enabled": "on",
        "tags": "",
    }
    return {**fields, **changes}


def change_url(server: Server) -> str:
    return f"/admin/servers/server/{server.pk}/change/"


def test_the_admin_refuses_a_new_port_without_the_password(admin_client):
    server = builders.server("adm", password=PASSWORD, user="root")
    port = server.port

    response = admin_client.post(change_url(server), admin_form(server, port=3399))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {"port": ["changing the port needs the password again"]}
    server.refresh_from_db()
    assert server.port == port


@pytest.mark.parametrize(
    "secret", [{"password": PASSWORD}, {"clear_password": "on"}], ids=["password", "cleared"]
)
def test_the_admin_accepts_a_new_port_with_the_password_or_cleared(admin_client, secret):
    server = builders.server("adm", password=PASSWORD, user="root")

    response = admin_client.post(change_url(server), admin_form(server, port=3399, **secret))

    assert response.status_code == 302
    server.refresh_from_db()
    assert server.port == 3399
    assert server.get_password() == secret.get("password", "")


# -- the same address twice ---------------------------------------------------------------------


def test_the_api_warns_about_a_second_server_at_the_same_address(staff_api):
    first = builders.server("first", user="root")
    body = {"name": "second", "host": first.host, "port": first.port, "user": "root"}

    response = staff_api.post(SERVERS, body, format="json")

    assert response.status_code == 201
    assert response.json()["warnings"] == [
        f"{first.host}:{first.port} is also registered as first: it will be polled twice"
    ]
    assert "warnings" not in staff_api.get(f"{SERVERS}{response.json()['id']}/").json()


def test_the_api_has_no_warning_for_a_new_address(staff_api):
    body = {"name": "only", "host": "127.0.0.1", "port": 3306, "user": "root"}

    response = staff_api.post(SERVERS, body, format="json")

    assert response.json()["warnings"] == []


def test_the_admin_warns_about_a_second_server_at_the_same_address(admin_client):
    first = builders.server("first", user="root")
    form = {
        "name": "second",
        "host": first.host,
        "port": first.port,
        "user": "root",
        "tls_mode": "preferred",
        "poll_interval": 60,
        "enabled": "on",
    }

    response = admin_client.post("/admin/servers/server/add/", form, follow=True)

    messages = [(m.level_tag, m.message) for m in response.context["messages"]]
    assert (
        "warning",
        f"{first.host}:{first.port} is also registered as first: it will be polled twice",
    ) in messages


def test_withdrawing_a_certificate_approval_needs_no_password(staff_api):
    server = builders.server(
        "approved", password=PASSWORD, user="root", tls_approved_fingerprint="SHA256:" + "ab" * 32
    )

    response = staff_api.patch(f"{SERVERS}{server.pk}/", {"tls_approved_fingerprint": ""})

    assert response.status_code == 200, response.content
    assert Server.objects.get(pk=server.pk).tls_approved_fingerprint == ""
