"""`ServerSnapshot.objects.latest_of`: each server's latest poll, whatever the order the
polls were stored in, for the servers asked (a list, a query of them, or all), found
from the servers (the pages, /metrics and the plan read it for a whole fleet)."""

from datetime import timedelta

import pytest

from partdash.metrics.models import ServerSnapshot
from partdash.metrics.readings import latest_pressures
from partdash.servers.models import Server
from tests import builders

pytestmark = pytest.mark.django_db


@pytest.fixture
def polled():
    """db-a polled three times (the newest stored first), db-b twice, db-c never."""
    a, b, _ = (builders.server(name) for name in ("db-a", "db-b", "db-c"))
    newest = {
        a: builders.snapshot(a, timedelta(0), pressure={"mark": "a0"}),
        b: builders.snapshot(b, timedelta(minutes=1), pressure={"mark": "b1"}),
    }
    for minutes in (2, 1):
        builders.snapshot(a, timedelta(minutes=minutes), pressure={"mark": f"a{minutes}"})
    builders.snapshot(b, timedelta(minutes=5), pressure={"mark": "b5"})
    return {server.name: snapshot.pk for server, snapshot in newest.items()}


def test_each_server_s_latest_poll_and_none_for_a_server_never_polled(polled):
    found = {s.server.name: s.pk for s in ServerSnapshot.objects.latest_of(None)}
    assert found == polled
    assert latest_pressures(None) == {
        Server.objects.get(name="db-a").pk: {"mark": "a0"},
        Server.objects.get(name="db-b").pk: {"mark": "b1"},
    }


def test_only_the_servers_asked_for_as_a_list_or_a_query(polled):
    b = Server.objects.get(name="db-b")
    assert list(ServerSnapshot.objects.latest_of([b.pk]).values_list("pk", flat=True)) == [
        polled["db-b"]
    ]
    asked = Server.objects.filter(name__in=["db-a", "db-c"]).values("pk")
    assert [s.pk for s in ServerSnapshot.objects.latest_of(asked)] == [polled["db-a"]]
    assert ServerSnapshot.objects.latest_of([]).count() == 0
