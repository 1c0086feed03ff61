"""Every poll has a deadline (issue 38, point 5): `manage.py poll` and the worker's polls
end within the poll's time limit, from the TCP connect to the last row, with one line
naming the server, whatever the server does: a greeting sent a byte every 3 s (each byte
well within every socket timeout), a server that accepts and never answers, one that
stops in the middle of a result. Before, `manage.py poll` of the first was still running
after 45 s."""

import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from partdash.polling import scheduling
from partdash.polling.service import poll_server
from partdash.polling.tasks import poll_server_task
from tests import builders
from tests.fake_mysql import (
    EOF_PACKET,
    VAR_STRING,
    Channel,
    FakeDrip,
    FakeMySQL,
    FakePartitionServer,
    column_definition,
    lenenc,
)

pytestmark = pytest.mark.django_db

INTERVAL = 5  # the shortest: its soft time limit, 4 s, is the poll's limit
LIMIT = 4
SLACK = 0.5  # closing the session, recording the failure


class StallsMidResult(FakePartitionServer):
    """Answers every query up to the first partition listing, sends one of its rows, then
    nothing more (a server wedged on a lock, a proxy gone quiet) until the client goes."""

    def _partitions(self, channel: Channel, query: str) -> None:
        channel.write_packet(1, b"\x01")
        channel.write_packet(2, column_definition("PARTITION_NAME", VAR_STRING))
        channel.write_packet(3, EOF_PACKET)
        channel.write_packet(4, lenenc(b"p0"))
        while channel._receive():  # EOFError once the client hangs up
            pass


@pytest.fixture(autouse=True)
def limits(settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 5  # longer than the drip's 3 s between bytes
    settings.PARTDASH_READ_TIMEOUT = 30
    assert scheduling.time_limits(INTERVAL)[0] == LIMIT


def expected_line(name: str, port: int) -> str:
    return (
        f"{name}: not polled: timed out talking to {name} (127.0.0.1:{port}): "
        f"no complete answer within the poll's time limit of {LIMIT} s"
    )


def registered(name: str, port: int):
    return builders.server(name, password="secret", port=port, poll_interval=INTERVAL)


def timed(poll) -> tuple[str, float]:
    started = time.monotonic()
    line = poll()
    return line, time.monotonic() - started


def test_manage_py_poll_of_a_greeting_a_byte_every_3_s_ends_at_the_limit():
    out, err = StringIO(), StringIO()

    def poll() -> str:
        with pytest.raises(CommandError, match="1 of 1 servers could not be polled"):
            call_command("poll", "drip", stdout=out, stderr=err)
        return err.getvalue()

    with FakeDrip(interval=3) as fake:
        registered("drip", fake.port)
        said, took = timed(poll)
    assert took < LIMIT + SLACK, took
    assert said == expected_line("drip", fake.port) + "\n"
    assert out.getvalue() == ""


def test_the_workers_poll_of_a_greeting_a_byte_every_3_s_ends_at_the_limit(redis_server):
    with FakeDrip(interval=3) as fake:
        server = registered("drip", fake.port)
        server.enabled = True
        server.save(update_fields=["enabled"])
        said, took = timed(lambda: poll_server_task.apply(args=[server.pk]).get())
    assert took < LIMIT + SLACK, took
    assert said == expected_line("drip", fake.port)
    server.refresh_from_db()
    assert server.status == "unreachable"
    assert server.last_error == said.partition(": not polled: ")[2]


@pytest.mark.parametrize("fake", [FakeMySQL(silent=True), StallsMidResult(partitions=3)])
def test_a_server_that_never_finishes_answering_ends_at_the_limit(fake):
    with fake:
        server = registered("quiet", fake.port)
        report, took = timed(lambda: poll_server(server))
    assert took < LIMIT + SLACK, took
    assert report.summary == expected_line("quiet", fake.port)
    if isinstance(fake, StallsMidResult):  # it stopped in a partition listing
        assert any("#P#" in query for query in fake.queries), fake.queries
