"""The fleet at a thousand servers (issue 41): the server list and the findings list
page, the server list narrows by status, group and tag and orders worst first, and a
page of either costs as many queries at 1,000 servers as at 10. The rows are built in
the database (no MariaDB)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partdash.alerts.models import Alert
from partdash.servers.models import Server, ServerGroup
from tests import builders

pytestmark = pytest.mark.django_db

QUERIES = 12  # token and user, the page's count and rows, the findings, the working sets


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/servers/?limit=50&offset=5&ordering=worst",
        "/api/v1/servers/?limit=50&status=ok&tag=even&group=half&ordering=worst",
        "/api/v1/findings/?limit=50&offset=0",
        "/api/v1/findings/?limit=50&offset=5&kind=skew",
    ],
)
def test_a_page_of_the_fleet_costs_as_many_queries_at_1000_servers_as_at_10(
    viewer_api, django_assert_max_num_queries, url
):
    def queries(size: int) -> list[str]:
        Server.objects.all().delete()
        ServerGroup.objects.all().delete()
        builders.fleet_of(size)
        viewer_api.get(url)  # the token and user, cached after the first request
        with CaptureQueriesContext(connection) as done:
            response = viewer_api.get(url)
        assert response.status_code == 200 and response.json()["count"] > 0
        return [query["sql"] for query in done.captured_queries]

    at_10, at_1000 = queries(10), queries(1000)
    assert len(at_1000) == len(at_10), "\n\n".join(at_1000)
    with django_assert_max_num_queries(QUERIES):
        viewer_api.get(url)


def test_the_server_list_pages_in_the_envelope_of_the_other_lists(viewer_api):
    builders.fleet_of(1000)
    first = viewer_api.get("/api/v1/servers/", {"limit": 50}).json()
    assert first["count"] == 1000
    assert [s["name"] for s in first["results"]] == [f"db{n:04}" for n in range(50)]
    assert "offset=50" in first["next"] and first["previous"] is None
    last = viewer_api.get("/api/v1/servers/", {"limit": 50, "offset": 950}).json()
    assert [s["name"] for s in last["results"]][-1] == "db0999" and last["next"] is None
    # Unpaged, as before: the whole list, a plain JSON array.
    assert len(viewer_api.get("/api/v1/servers/").json()) == 1000


def test_the_server_list_narrows_by_status_group_and_tag(viewer_api):
    builders.fleet_of(1000)

    def names(**params) -> list[str]:
        return [s["name"] for s in viewer_api.get("/api/v1/servers/", params).json()]

    ok = names(status="ok")
    assert len(ok) == 250 and all(int(name[2:]) % 4 == 0 for name in ok)
    assert {s["status"] for s in viewer_api.get("/api/v1/servers/", {"status": "ok"}).json()} == {
        "ok"
    }
    assert names(group="half") == [f"db{n:04}" for n in range(500)]
    group_id = ServerGroup.objects.get(name="half").pk
    assert names(group=str(group_id)) == names(group="half")
    odd = names(tag="ODD")
    assert len(odd) == 500 and all(int(name[2:]) % 2 == 1 for name in odd)
    assert len(names(tag="all")) == 1000
    assert names(tag="al") == []  # a tag, not a substring
    both = names(status="degraded", tag="odd", group="half")
    assert both == [f"db{n:04}" for n in range(500) if n % 4 == 1]
    assert viewer_api.get("/api/v1/servers/", {"status": "sideways"}).status_code == 400
    assert viewer_api.get("/api/v1/servers/", {"ordering": "password"}).status_code == 400


def test_worst_first_puts_critical_alerts_then_warnings_then_the_healthy(viewer_api):
    builders.fleet_of(1000)
    listed = viewer_api.get("/api/v1/servers/", {"ordering": "worst", "limit": 1000}).json()
    names = [s["name"] for s in listed["results"]]
    critical = [f"db{n:04}" for n in range(1000) if n % 10 == 0]
    warning = [f"db{n:04}" for n in range(1000) if n % 10 == 1]
    healthy = [f"db{n:04}" for n in range(1000) if n % 10 > 1]
    assert names == critical + warning + healthy


def test_worst_first_counts_only_alerts_that_fire_unsilenced_more_of_them_first(viewer_api):
    quiet, loud, pending = builders.server("a"), builders.server("b"), builders.server("c")
    louder = builders.server("d")
    builders.alert(quiet, severity="critical")
    builders.silence(server=quiet)
    builders.alert(loud, severity="warning")
    builders.alert(louder, rule="skew", severity="warning")
    builders.alert(louder, rule="hotspot", severity="warning")
    builders.alert(pending, severity="critical", state=Alert.State.PENDING)
    listed = viewer_api.get("/api/v1/servers/", {"ordering": "worst"}).json()
    assert [s["name"] for s in listed] == ["d", "b", "a", "c"]


def test_the_findings_list_pages_worst_first_and_keeps_its_plain_limit(viewer_api):
    builders.fleet_of(1000)
    everything = viewer_api.get("/api/v1/findings/", {"limit": 500}).json()
    assert isinstance(everything, list) and len(everything) == 500
    scores = [f["score"] for f in everything]
    assert scores == sorted(scores, reverse=True)
    first = viewer_api.get("/api/v1/findings/", {"limit": 100, "offset": 0}).json()
    second = viewer_api.get("/api/v1/findings/", {"limit": 100, "offset": 100}).json()
    assert first["count"] == 2000 and second["count"] == 2000
    paged = [f["score"] for f in first["results"] + second["results"]]
    assert paged == scores[:200]
    assert "offset=100" in first["next"] and "offset=200" in second["next"]
    narrowed = viewer_api.get(
        "/api/v1/findings/", {"offset": 0, "server": everything[0]["server_id"]}
    )
    assert narrowed.json()["count"] == 2
    assert viewer_api.get("/api/v1/findings/", {"offset": -1}).status_code == 400
