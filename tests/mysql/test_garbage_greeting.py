"""Whatever answers at a server's address with something other than a MySQL handshake
(random bytes, another protocol) gets one line, never a traceback or a 500: in Test
connection, in `manage.py addserver` and in a poll (issue 24, point 5)."""

import random
from io import StringIO

import pytest
from django.core.management import call_command

from partdash.mysql.connection import ConnectionFailure, Target, connect
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests import builders
from tests.fake_mysql import FakeGarbage, FakePartitionServer
from tests.servers.test_admin import follow_test_connection


def packet(payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "little") + b"\0" + payload


def greetings() -> list[bytes]:
    """Random bytes, random bytes framed as a first packet (with and without the
    handshake's protocol byte, so parsing goes further), and other protocols' banners."""
    rnd = random.Random(24)
    garbage = [rnd.randbytes(rnd.choice([10, 60, 300])) for _ in range(20)]
    framed = [packet(rnd.randbytes(rnd.choice([1, 5, 20, 60, 200]))) for _ in range(40)]
    versioned = [packet(b"\x0a" + rnd.randbytes(rnd.choice([5, 20, 60, 200]))) for _ in range(40)]
    banners = [b"HTTP/1.1 400 Bad Request\r\n\r\n", b"SSH-2.0-OpenSSH_9.2\r\n", b"+OK\r\n"]
    return garbage + framed + versioned + banners


def register(fake) -> Server:
    return builders.server("garbage", password="secret", port=fake.port)


def test_no_garbage_greeting_gets_further_than_one_line(settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 2
    for garbage in greetings():
        with FakeGarbage(garbage) as fake:
            with pytest.raises(ConnectionFailure) as failure:
                connect(Target(fake.host, fake.port, "partdash", "secret"))
        assert failure.value.kind == "protocol", (garbage, failure.value.message)
        assert (
            failure.value.message
            == f"{fake.host}:{fake.port} does not speak MySQL: "
            + (failure.value.message.split(": ", 1)[1])
        )
        assert "\n" not in failure.value.message


# A first packet holding the handshake's protocol byte, then garbage.
GARBAGE = packet(b"\x0a\xff\xfe garbage, not a handshake \x00\x01")


@pytest.mark.django_db
def test_test_connection_says_the_server_does_not_speak_mysql(admin_client):
    with FakeGarbage(GARBAGE) as fake:
        server = register(fake)
        page = follow_test_connection(admin_client, server)
    assert "Unreachable (protocol)" in page
    assert f"{fake.host}:{fake.port} does not speak MySQL" in page
    assert "Traceback" not in page


@pytest.mark.django_db
def test_addserver_says_the_server_does_not_speak_mysql():
    out, err = StringIO(), StringIO()
    with FakeGarbage(GARBAGE) as fake:
        call_command(
            "addserver", "garbage", "--host", fake.host, "--port", str(fake.port),
            "--user", "partdash", stdout=out, stderr=err,
        )  # fmt: skip
    lines = err.getvalue().splitlines()
    assert lines == [f"check: unreachable: {fake.host}:{fake.port} does not speak MySQL: "
                     "its greeting is not a MySQL handshake"], lines  # fmt: skip


class GarbledListing(FakePartitionServer):
    """Lets partdash in, then answers the partition listings with a malformed result."""

    def _partitions(self, channel, query: str) -> None:
        channel.write_packet(1, b"\x01")  # one column
        channel.write_packet(2, b"\x03def\xff\xff")  # a column definition cut short


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fake, reason",
    [
        (lambda: FakeGarbage(GARBAGE), "its greeting is not a MySQL handshake"),
        (lambda: GarbledListing(partitions=10), "it sent a malformed result"),
    ],
    ids=["greeting", "result"],
)
def test_a_poll_says_the_server_does_not_speak_mysql(fake, reason):
    with fake() as fake:
        server = register(fake)
        report = poll_server(server)
    server.refresh_from_db()
    assert not report.ok
    assert server.status == "unreachable"
    assert server.last_error == f"{fake.host}:{fake.port} does not speak MySQL: {reason}"
