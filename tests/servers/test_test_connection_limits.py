"""Test connection cannot stall the site (issue 24, point 4): it runs as a POST, ends at
an overall deadline whatever the server does, and each user runs a few at a time; one
answer cannot fill a process's memory (PARTDASH_MAX_BYTES_PER_SOURCE)."""

import re
import time

import pytest

from partdash.lib.shared_redis import redis_client
from partdash.mysql.connection import Target, TooManyBytes, open_session
from partdash.servers.probe_limits import TooManyTests, probe_slot
from tests import builders
from tests.fake_mysql import FakeDrip
from tests.servers.test_admin import CHANGELIST, follow_test_connection

URL = "/admin/servers/server/{}/test-connection/"


@pytest.fixture
def limits(settings, private_broker):
    """Each user's counts start at nothing (user ids repeat from test to test), in the
    private Redis."""
    client = redis_client()
    for key in client.scan_iter("partdash:probe:*"):
        client.delete(key)
    settings.PARTDASH_TEST_CONNECTION_PER_USER = 1
    settings.PARTDASH_TEST_CONNECTION_PER_MINUTE = 3
    return settings


def test_a_greeting_sent_a_byte_at_a_time_ends_at_the_deadline(admin_client, settings):
    """Each byte comes 0.3 s after the one before, well within the 5 s connect timeout:
    only the deadline ends the wait (before, the thread waited for ever)."""
    settings.PARTDASH_TEST_CONNECTION_SECONDS = 2
    with FakeDrip(interval=0.3) as fake:
        server = builders.server("drip", password="secret", port=fake.port)
        started = time.monotonic()
        page = follow_test_connection(admin_client, server)
        took = time.monotonic() - started
    assert 2 <= took < 8, took  # the whole greeting takes 26 s
    assert (
        f"Unreachable (timeout): timed out talking to drip (127.0.0.1:{fake.port}): "
        "no complete answer within the deadline of 2 s"
    ) in page


def test_the_test_connection_page_connects_only_when_its_button_is_pressed(admin_client):
    with FakeDrip(interval=0.3) as fake:
        server = builders.server("drip", port=fake.port)
        page = admin_client.get(URL.format(server.pk)).content.decode()
        assert fake.conversations == []  # a GET, a prefetch, a crawler: no connection
    action = f'<form method="post" action="{URL.format(server.pk)}"'
    assert action in page
    assert "The test gives up after 20 s." in page
    assert "module probe-result" not in page


def test_a_user_runs_one_test_at_a_time_and_a_few_a_minute(admin_client, admin_user, limits):
    server = builders.server("nowhere", port=1)  # nothing listens: each test fails at once
    with probe_slot(admin_user.pk):  # a test of this user's still running
        busy = admin_client.post(URL.format(server.pk))
    assert busy.status_code == 429
    assert (
        "You are running 1 connection tests already (at most 1 at once): wait for one to finish."
    ) in busy.content.decode()
    assert "module probe-result" not in busy.content.decode()

    # The one still running counts in the minute, the refused one not: two more pass.
    answers = [admin_client.post(URL.format(server.pk)) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    refused = answers[-1].content.decode()
    assert re.search(r"At most 3 connection tests a minute: try again in \d+ s\.", refused)


def test_slots_are_per_user_and_given_back(limits):
    with probe_slot(1):
        with pytest.raises(TooManyTests):
            with probe_slot(1):
                pass
        with probe_slot(2):  # another user
            pass
    with probe_slot(1):  # given back when the test ended
        pass


def test_the_action_tests_ten_servers_at_most(admin_client):
    servers = [builders.server(f"s{n}", port=1) for n in range(11)]
    response = admin_client.post(
        CHANGELIST,
        {"action": "test_connection", "_selected_action": [s.pk for s in servers]},
        follow=True,
    )
    assert "Select at most 10 servers to test at a time (11 selected)." in (
        response.content.decode()
    )
    assert "module probe-result" not in response.content.decode()


def test_the_action_tests_its_servers_side_by_side(admin_client, settings):
    """Three servers that each hold their greeting to the deadline take one deadline
    (one after the other: three)."""
    settings.PARTDASH_TEST_CONNECTION_SECONDS = 3
    with FakeDrip(0.3) as a, FakeDrip(0.3) as b, FakeDrip(0.3) as c:
        servers = [builders.server(f"d{f.port}", port=f.port) for f in (a, b, c)]
        started = time.monotonic()
        response = admin_client.post(
            CHANGELIST, {"action": "test_connection", "_selected_action": [s.pk for s in servers]}
        )
        took = time.monotonic() - started
    assert 3 <= took < 7, took
    assert response.content.decode().count("Unreachable (timeout)") == 3


def test_an_answer_over_the_byte_cap_is_not_read(mariadb, settings):
    settings.PARTDASH_MAX_BYTES_PER_SOURCE = 2**20
    with open_session(Target(host=mariadb.host, port=mariadb.port, user="root")) as session:
        assert session.scalar("SELECT REPEAT('x', 900000)") == "x" * 900_000
        with pytest.raises(TooManyBytes, match=r"more than 1 MiB for one query"):
            session.rows("SELECT REPEAT('x', 2000000)")
        assert not session.conn.open  # nothing more is read from that server
        with pytest.raises(TooManyBytes) as again:
            session.rows("SELECT 1")
        assert again.value.repeat
