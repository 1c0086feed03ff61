"""The stored password goes only to a server partdash has verified. A hostile MySQL server
of the tests' own (`tests/fake_mysql.py`) offers TLS with a self-signed certificate, as a
man in the middle would under the default `preferred` mode, and asks for the password in
clear text or for caching_sha2 / sha256 full authentication (which send it as is inside
TLS). It records every packet, decrypted: the password must never be among them until an
operator approved that certificate's fingerprint (API, admin, `addserver`), or a CA
verified it. A real MariaDB with mysql_native_password (a scramble: the password never
leaves) keeps polling under `preferred`."""

import io
import os
from collections.abc import Iterator

import pymysql
import pytest
from django.core.management import CommandError, call_command

from partdash.mysql.connection import (
    ConnectionFailure,
    Target,
    connect,
    open_session,
    target_for,
)
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests.conftest import token_client
from tests.fake_mysql import FakeMySQL, server_tls_context
from tests.servers.certificates import (
    CertificateFiles,
    fingerprint,
    write_certificates,
    write_self_signed,
)

pytestmark = pytest.mark.django_db

PASSWORD = "Cert-5e09-do-not-leak"
SERVERS = "/api/v1/servers/"

# (greeting plugin, auth switch): every way PyMySQL sends the password itself.
ASKS_FOR_THE_PASSWORD = {
    "switch-to-clear": ("mysql_native_password", "mysql_clear_password"),
    "switch-to-dialog": ("mysql_native_password", "dialog"),
    "switch-to-caching-sha2-full": ("mysql_native_password", "caching_sha2_password"),
    "switch-to-sha256": ("mysql_native_password", "sha256_password"),
    "greeting-caching-sha2-full": ("caching_sha2_password", None),
    "greeting-sha256": ("sha256_password", None),
}


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory) -> CertificateFiles:
    return write_self_signed(tmp_path_factory.mktemp("self-signed"), "fake")


@pytest.fixture(scope="module")
def another_self_signed(tmp_path_factory) -> CertificateFiles:
    """What the address presents after the certificate changed (or a second impostor)."""
    return write_self_signed(tmp_path_factory.mktemp("self-signed-2"), "other")


@pytest.fixture
def hostile(self_signed) -> Iterator[FakeMySQL]:
    """Asks for mysql_clear_password over TLS with a self-signed certificate, and lets in
    whoever sends PASSWORD (so an approved connection visibly authenticates)."""
    context = server_tls_context(str(self_signed.cert), str(self_signed.key))
    with FakeMySQL(tls=context, accept=PASSWORD.encode()) as server:
        yield server


def fake_tls(files: CertificateFiles, **options) -> FakeMySQL:
    return FakeMySQL(tls=server_tls_context(str(files.cert), str(files.key)), **options)


def register(fake: FakeMySQL, **fields) -> Server:
    server = Server(name="edge", host=fake.host, port=fake.port, user="root", **fields)
    server.set_password(PASSWORD)
    server.save()
    return server


def received_the_password(fake: FakeMySQL) -> bool:
    """Whether any packet, as the fake read it inside TLS, or anything it decrypted under
    its own RSA key, holds the password."""
    secret = PASSWORD.encode()
    return secret in fake.payloads or any(secret in c.decrypted for c in fake.conversations)


def refusal(fake: FakeMySQL, **fields) -> ConnectionFailure:
    target = Target(fake.host, fake.port, "root", PASSWORD, **fields)
    with pytest.raises(ConnectionFailure) as failure:
        with open_session(target):
            pass
    return failure.value


# -- the attack, and what partdash does instead -------------------------------------------------


@pytest.mark.parametrize("plugin", ["mysql_clear_password", "caching_sha2_password"])
def test_a_stock_pymysql_client_gives_its_password_over_unverified_tls(self_signed, plugin):
    """What partdash does differently: PyMySQL with a certificate it does not check (the
    MySQL client's --ssl-mode=PREFERRED) answers inside TLS, where the impostor reads it."""
    with fake_tls(self_signed, switch_to=plugin) as impostor:
        with pytest.raises(pymysql.OperationalError):
            pymysql.connect(
                host=impostor.host,
                port=impostor.port,
                user="root",
                password=PASSWORD,
                ssl={"check_hostname": False, "verify_mode": False},
            )

    assert received_the_password(impostor)


@pytest.mark.parametrize(
    ("greeting", "switch_to"), ASKS_FOR_THE_PASSWORD.values(), ids=list(ASKS_FOR_THE_PASSWORD)
)
def test_unverified_tls_never_carries_the_password(self_signed, greeting, switch_to):
    with fake_tls(self_signed, greeting_plugin=greeting, switch_to=switch_to) as impostor:
        failure = refusal(impostor)

    (conversation,) = impostor.conversations
    assert conversation.encrypted
    assert not received_the_password(impostor)
    assert failure.kind == "tls"
    assert failure.tls_fingerprint == fingerprint(self_signed)
    assert failure.message == (
        f"refused to send the password to 127.0.0.1:{impostor.port} for {switch_to or greeting}: "
        f"its TLS certificate {fingerprint(self_signed)} is not verified (tls_mode preferred); "
        "approve that fingerprint if it is the server's, or verify it with a CA (verify_ca)"
    )


def test_the_poll_fails_with_one_line_naming_the_server_the_mode_and_the_fingerprint(
    hostile, self_signed
):
    server = register(hostile)

    report = poll_server(server)

    assert not report.ok
    assert "\n" not in report.error
    assert report.error.startswith(
        f"refused to send the password to edge (127.0.0.1:{hostile.port})"
    )
    assert "tls_mode preferred" in report.error and fingerprint(self_signed) in report.error
    server.refresh_from_db()
    assert (server.status, server.last_error) == ("unreachable", report.error)
    assert server.tls_fingerprint == fingerprint(self_signed)
    assert not received_the_password(hostile)


# -- approving the certificate ------------------------------------------------------------------


def openssl_style(approved: str) -> str:
    """`AB:CD:...`, as `openssl x509 -noout -fingerprint -sha256` prints it."""
    digits = approved.removeprefix("SHA256:").upper()
    return ":".join(digits[i : i + 2] for i in range(0, len(digits), 2))


def approve_through_the_api(server: Server, approved: str, operator_api, **_) -> None:
    response = operator_api.patch(
        f"{SERVERS}{server.pk}/",
        {"tls_approved_fingerprint": openssl_style(approved), "password": PASSWORD},
    )
    assert response.status_code == 200, response.content
    assert response.json()["tls_approved_fingerprint"] == approved


def approve_in_the_admin(server: Server, approved: str, admin_client, **_) -> None:
    form = {
        "name": server.name,
        "host": server.host,
        "port": server.port,
        "user": server.user,
        "tls_mode": server.tls_mode,
        "ssl_ca": "",
        "tls_approved_fingerprint": approved,
        "password": PASSWORD,
        "poll_interval": server.poll_interval,
        "enabled": "on",
        "tags": "",
    }
    response = admin_client.post(f"/admin/servers/server/{server.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[-3000:]


def approve_with_addserver(server: Server, approved: str, **_) -> None:
    os.environ["CERT_PASSWORD"] = PASSWORD
    call_command(
        "addserver",
        server.name,
        f"--host={server.host}",
        f"--port={server.port}",
        f"--user={server.user}",
        f"--approve-certificate={approved}",
        "--password-env=CERT_PASSWORD",
        "--no-check",
        stdout=io.StringIO(),
    )


@pytest.fixture
def operator_api(operator):
    return token_client(operator)


@pytest.mark.parametrize(
    "approve",
    [approve_through_the_api, approve_in_the_admin, approve_with_addserver],
    ids=["api", "admin", "addserver"],
)
def test_once_approved_the_password_goes_to_that_certificate_inside_tls(
    hostile, self_signed, approve, operator_api, admin_client
):
    server = register(hostile)
    assert not poll_server(server).ok  # refused: nothing approved yet

    approve(server, fingerprint(self_signed), operator_api=operator_api, admin_client=admin_client)

    server.refresh_from_db()
    assert server.tls_approved_fingerprint == fingerprint(self_signed)
    connect(target_for(server)).close()  # authenticated: the fake let it in
    first, approved = hostile.conversations
    assert PASSWORD.encode() not in first.payloads
    assert PASSWORD.encode() + b"\0" in approved.payloads  # read inside TLS
    assert PASSWORD.encode() not in hostile.received  # nothing readable on the wire


@pytest.mark.parametrize(
    ("greeting", "switch_to"),
    [("mysql_native_password", "caching_sha2_password"), ("sha256_password", None)],
    ids=["caching-sha2-full", "greeting-sha256"],
)
def test_an_approved_certificate_answers_full_authentication(self_signed, greeting, switch_to):
    with fake_tls(
        self_signed, greeting_plugin=greeting, switch_to=switch_to, accept=PASSWORD.encode()
    ) as server:
        target = Target(
            server.host,
            server.port,
            "root",
            PASSWORD,
            approved_fingerprint=fingerprint(self_signed),
        )
        connect(target).close()

    assert received_the_password(server)


def test_a_changed_certificate_is_refused_again(self_signed, another_self_signed):
    with fake_tls(another_self_signed, accept=PASSWORD.encode()) as replaced:
        server = register(replaced, tls_approved_fingerprint=fingerprint(self_signed))

        report = poll_server(server)

    assert not received_the_password(replaced)
    assert f"its TLS certificate {fingerprint(another_self_signed)} is not verified" in report.error
    assert f"the approved one is {fingerprint(self_signed)}" in report.error
    server.refresh_from_db()
    assert server.tls_fingerprint == fingerprint(another_self_signed)
    assert server.tls_approved_fingerprint == fingerprint(self_signed)  # not approved for you


def test_a_certificate_a_ca_verified_needs_no_approval(tmp_path):
    signed = write_certificates(tmp_path, "edge")
    with fake_tls(signed, accept=PASSWORD.encode()) as server:
        unverified = refusal(server)
        verified = Target(server.host, server.port, "root", PASSWORD, "verify_ca", str(signed.ca))
        connect(verified).close()

    assert fingerprint(signed) in unverified.message
    first, second = server.conversations
    assert PASSWORD.encode() not in first.payloads
    assert PASSWORD.encode() + b"\0" in second.payloads


def test_an_approval_does_not_let_the_password_out_over_plain_tcp(self_signed):
    with FakeMySQL(accept=PASSWORD.encode()) as plain:
        failure = refusal(plain, approved_fingerprint=fingerprint(self_signed))

    assert failure.message.startswith("refused to send the password in clear text")
    assert not received_the_password(plain)


# -- where an operator sees the fingerprint -----------------------------------------------------


def test_test_connection_shows_the_fingerprint_to_approve(hostile, self_signed, admin_client):
    server = register(hostile)

    page = admin_client.post(f"/admin/servers/server/{server.pk}/test-connection/")

    text = page.content.decode()
    assert f'data-fingerprint="{fingerprint(self_signed)}"' in text
    assert "not verified: approve it" in text
    server.refresh_from_db()
    assert server.tls_fingerprint == fingerprint(self_signed)


def test_registration_with_addserver_shows_the_fingerprint(hostile, self_signed, monkeypatch):
    monkeypatch.setenv("EDGE_PW", PASSWORD)
    err = io.StringIO()
    call_command(
        "addserver",
        "edge",
        "--host=127.0.0.1",
        f"--port={hostile.port}",
        "--user=root",
        "--password-env=EDGE_PW",
        stdout=io.StringIO(),
        stderr=err,
    )

    (line,) = err.getvalue().splitlines()
    assert line.startswith("check: unreachable: refused to send the password to edge")
    assert fingerprint(self_signed) in line
    assert Server.objects.get(name="edge").tls_fingerprint == fingerprint(self_signed)
    assert not received_the_password(hostile)


def test_addserver_refuses_a_malformed_fingerprint():
    with pytest.raises(CommandError, match="SHA256: followed by 64 hex digits"):
        call_command(
            "addserver", "edge", "--host=h", "--user=u", "--approve-certificate=SHA256:abc"
        )


@pytest.mark.parametrize("value", ["SHA256:abc", "SHA256:" + "g" * 64, "MD5:" + "a" * 64])
def test_the_api_refuses_a_malformed_fingerprint(operator_api, value):
    server = Server.objects.create(name="edge", host="h", user="u")

    response = operator_api.patch(f"{SERVERS}{server.pk}/", {"tls_approved_fingerprint": value})

    assert response.status_code == 400
    assert "tls_approved_fingerprint" in response.json()


def test_viewers_cannot_approve_a_certificate(viewer_api, self_signed):
    server = Server.objects.create(name="edge", host="h", user="u")

    response = viewer_api.patch(
        f"{SERVERS}{server.pk}/", {"tls_approved_fingerprint": fingerprint(self_signed)}
    )

    assert response.status_code == 403
    server.refresh_from_db()
    assert server.tls_approved_fingerprint == ""


# -- scrambles keep working ---------------------------------------------------------------------


def test_a_real_mariadb_with_native_passwords_still_polls_under_preferred(
    mariadb_tls, certificates, make_server
):
    mariadb_tls.execute("CREATE OR REPLACE USER 'native'@'%%' IDENTIFIED BY %s", (PASSWORD,))
    mariadb_tls.execute("GRANT PROCESS, SELECT ON *.* TO 'native'@'%'")
    server = make_server(mariadb_tls, name="native", password=PASSWORD)
    Server.objects.filter(pk=server.pk).update(user="native")
    server.refresh_from_db()

    report = poll_server(server)

    assert report.ok, report.error
    server.refresh_from_db()
    assert server.tls_fingerprint == fingerprint(certificates)
    assert server.tls_approved_fingerprint == ""
