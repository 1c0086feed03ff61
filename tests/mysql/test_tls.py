"""TLS and time on the way to a monitored server, against real private MariaDB servers (one
without TLS, one with a certificate of a test CA): `preferred` decides within the one
connection, so a new process costs the server no aborted connect; what the server offers
is recorded and looked at again after a day; CA files are checked when saved and any TLS
problem at poll time is a one-line reason; a silent server costs the connect timeout."""

import shutil
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pymysql
import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from partdash.mysql import connection
from partdash.mysql.connection import ConnectionFailure, Target, open_session
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests.fake_mysql import FakeMySQL
from tests.servers.certificates import write_certificates
from tests.services import MariaDB

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="session")
def other_ca(tmp_path_factory) -> Path:
    """A CA that signed nothing the servers present."""
    return write_certificates(tmp_path_factory.mktemp("tls-other"), "other").ca


@pytest.fixture
def fresh_process() -> Iterator[None]:
    """No TLS context or other connection state left from earlier tests: as a worker
    that just started."""
    connection._cached_tls_context.cache_clear()
    yield
    connection._cached_tls_context.cache_clear()


@pytest.fixture
def ca_copy(tmp_path, certificates) -> Path:
    """The test CA in a file of the test's own, to remove or replace."""
    path = tmp_path / "ca.pem"
    shutil.copy(certificates.ca, path)
    return path


def aborted_connects(instance: MariaDB) -> int:
    return int(instance.execute("SHOW GLOBAL STATUS LIKE 'Aborted_connects'")[0][1])


def root(instance: MariaDB, **fields) -> Target:
    return Target(instance.host, instance.port, "root", **fields)


def cipher(target: Target) -> str:
    with open_session(target) as session:
        return session.rows("SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1]


# -- preferred: one connection, TLS where offered ------------------------------------------------


def test_preferred_to_a_server_without_tls_costs_it_no_aborted_connect(
    mariadb, make_server, fresh_process
):
    server = make_server(mariadb, name="plain")
    # The measure is sensitive: a connection that insists on TLS is one aborted connect.
    before = aborted_connects(mariadb)
    with pytest.raises(pymysql.OperationalError):
        mariadb.connect(ssl={"check_hostname": False, "verify_mode": False}).close()
    assert aborted_connects(mariadb) == before + 1

    before = aborted_connects(mariadb)
    report = poll_server(server)

    assert report.ok, report.error
    assert aborted_connects(mariadb) == before
    server.refresh_from_db()
    assert server.tls_offered is False
    assert timezone.now() - server.tls_checked_at < timedelta(minutes=1)


def test_preferred_encrypts_where_the_server_offers_tls(mariadb_tls, fresh_process):
    before = aborted_connects(mariadb_tls)

    assert cipher(root(mariadb_tls))  # preferred is the default mode

    assert aborted_connects(mariadb_tls) == before


def test_disabled_never_encrypts(mariadb_tls):
    assert cipher(root(mariadb_tls, tls_mode="disabled")) == ""


def test_a_poll_records_that_the_server_offers_tls(mariadb_tls, make_server):
    server = make_server(mariadb_tls, name="tls")

    assert poll_server(server).ok

    server.refresh_from_db()
    assert server.tls_offered is True
    assert server.tls_checked_at is not None


def test_what_a_server_offers_is_written_again_only_after_a_day(mariadb, make_server):
    server = make_server(mariadb, name="plain")
    poll_server(server)
    server.refresh_from_db()
    first_check = server.tls_checked_at

    poll_server(server)
    server.refresh_from_db()
    assert server.tls_checked_at == first_check

    Server.objects.filter(pk=server.pk).update(tls_checked_at=first_check - timedelta(days=1))
    server.refresh_from_db()
    poll_server(server)
    server.refresh_from_db()
    assert server.tls_checked_at > first_check
    assert server.tls_offered is False


def test_a_server_that_gains_tls_is_noticed_on_the_next_poll(mariadb_tls, make_server):
    server = make_server(mariadb_tls, name="gained")
    Server.objects.filter(pk=server.pk).update(
        tls_offered=False, tls_checked_at=timezone.now() - timedelta(hours=1)
    )
    server.refresh_from_db()

    assert poll_server(server).ok

    server.refresh_from_db()
    assert server.tls_offered is True


# -- verifying modes ----------------------------------------------------------------------------


def test_verify_ca_accepts_the_servers_ca(mariadb_tls, certificates):
    assert cipher(root(mariadb_tls, tls_mode="verify_ca", ssl_ca=str(certificates.ca)))


def test_verify_identity_accepts_a_certificate_for_the_address(mariadb_tls, certificates):
    target = root(mariadb_tls, tls_mode="verify_identity", ssl_ca=str(certificates.ca))
    assert cipher(target)


def test_verify_ca_with_another_ca_is_a_one_line_failure(mariadb_tls, other_ca, make_server):
    server = make_server(mariadb_tls, name="other", tls_mode="verify_ca", ssl_ca=str(other_ca))

    report = poll_server(server)

    where = f"{mariadb_tls.host}:{mariadb_tls.port}"
    # MariaDB sends its CA along with its certificate: a chain ending in a CA we do not trust
    assert report.error == (
        f"TLS failure with {where}: certificate verify failed: self-signed certificate in "
        "certificate chain"
    )
    server.refresh_from_db()
    assert (server.status, server.last_error) == ("unreachable", report.error)
    assert server.tls_offered is True


def test_verify_ca_to_a_server_without_tls_says_so(mariadb, certificates, make_server):
    server = make_server(mariadb, name="plain", tls_mode="verify_ca", ssl_ca=str(certificates.ca))

    report = poll_server(server)

    assert report.error == f"{mariadb.host}:{mariadb.port} does not offer TLS but verify_ca is set"
    server.refresh_from_db()
    assert server.tls_offered is False


# -- the CA file --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "not a readable file of PEM certificates"),
        (Path("/etc/passwd").read_bytes(), "not a readable file of PEM certificates"),
        (b"", "not a readable file of PEM certificates"),
    ],
    ids=["removed", "replaced-by-passwd", "emptied"],
)
def test_a_ca_file_broken_after_saving_is_a_one_line_poll_failure(
    mariadb_tls, ca_copy, make_server, content, reason
):
    server = make_server(mariadb_tls, name="ca", tls_mode="verify_ca", ssl_ca=str(ca_copy))
    assert poll_server(server).ok  # the context is cached from here on
    if content is None:
        ca_copy.unlink()
    else:
        ca_copy.write_bytes(content)

    report = poll_server(server)

    assert report.error == f"cannot use the TLS CA file {ca_copy}: {reason}"
    server.refresh_from_db()
    assert (server.status, server.last_error) == ("unreachable", report.error)


def test_a_ca_file_replaced_by_another_ca_is_used_at_once(
    mariadb_tls, ca_copy, other_ca, make_server
):
    server = make_server(mariadb_tls, name="ca", tls_mode="verify_ca", ssl_ca=str(ca_copy))
    assert poll_server(server).ok
    ca_copy.write_bytes(other_ca.read_bytes())

    report = poll_server(server)

    assert "certificate verify failed" in report.error


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "/etc/passwd is not a readable file of PEM certificates."),
        ("/nonexistent/ca.pem", "/nonexistent/ca.pem is not a readable file of PEM certificates."),
        ("/etc", "/etc is not a readable file of PEM certificates."),
    ],
    ids=["not-pem", "missing", "directory"],
)
def test_a_ca_file_is_validated_when_saved(path, message):
    server = Server(name="x", host="db", user="mon", tls_mode="verify_ca", ssl_ca=path)

    with pytest.raises(Exception) as raised:
        server.full_clean()

    assert raised.value.message_dict == {"ssl_ca": [message]}


def test_a_ca_file_error_does_not_tell_whether_the_file_exists(tmp_path):
    """The path is typed by a web user and checked on the web host: a file that exists
    (readable or not) and one that does not answer alike."""
    secret = tmp_path / "private.key"
    secret.write_text("not a certificate\n")
    locked = tmp_path / "locked"
    locked.write_text("")
    locked.chmod(0)
    answers = set()
    for path in (secret, locked, tmp_path / "missing", tmp_path):
        server = Server(name="x", host="db", user="mon", tls_mode="verify_ca", ssl_ca=str(path))
        with pytest.raises(ValidationError) as raised:
            server.full_clean()
        answers.add(raised.value.message_dict["ssl_ca"][0].replace(str(path), "PATH"))
    assert answers == {"PATH is not a readable file of PEM certificates."}


def test_a_pem_ca_file_is_accepted(certificates):
    server = Server(name="x", host="db", user="mon", tls_mode="verify_ca")
    server.ssl_ca = str(certificates.ca)
    server.full_clean()


def test_test_connection_reports_a_broken_ca_file_instead_of_failing(
    admin_client, mariadb_tls, ca_copy, make_server
):
    server = make_server(mariadb_tls, name="ca", tls_mode="verify_ca", ssl_ca=str(ca_copy))
    ca_copy.write_text("not a certificate\n")

    response = admin_client.post(f"/admin/servers/server/{server.pk}/test-connection/")

    assert response.status_code == 200
    assert f"cannot use the TLS CA file {ca_copy}: not a readable file of PEM certificates" in (
        response.content.decode()
    )


# -- time ---------------------------------------------------------------------------------------


def test_a_server_that_accepts_and_never_answers_costs_the_connect_timeout(make_server, settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 2
    settings.PARTDASH_READ_TIMEOUT = 30
    with FakeMySQL(silent=True) as silent:
        server = Server.objects.create(name="silent", host=silent.host, port=silent.port, user="u")
        started = time.monotonic()

        report = poll_server(server)

        elapsed = time.monotonic() - started
    assert report.error == (
        f"timed out talking to {silent.host}:{silent.port}: "
        "no answer within the connect timeout of 2 s"
    )
    assert 2 <= elapsed < 4, elapsed


def test_the_greeting_is_bounded_by_the_connect_timeout_not_the_read_timeout(settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 1
    settings.PARTDASH_READ_TIMEOUT = 60
    with FakeMySQL(silent=True) as silent:
        started = time.monotonic()
        with pytest.raises(ConnectionFailure) as failure:
            with open_session(Target(silent.host, silent.port, "u")):
                pass
    assert failure.value.kind == "timeout"
    assert time.monotonic() - started < 3
