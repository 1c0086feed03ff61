"""`/api/v1/servers/` for a large fleet: a plain list as before unless `?limit=` or
`?offset=` ask for a page, and each server's worst findings read for the whole list at
once, the same as one server's own answer gives them."""

import pytest

from tests import builders

pytestmark = pytest.mark.django_db

SERVERS = "/api/v1/servers/"


def finding(kind: str, score: float) -> dict:
    return {"kind": kind, "severity": "warning", "score": score, "message": kind, "fix": None}


@pytest.fixture
def fleet():
    servers = [builders.server(f"fleet-{i:02d}") for i in range(12)]
    for i, server in enumerate(servers[:6]):
        for j in range(4):  # four scored tables: the three worst findings are shown
            builders.table(
                server,
                name=f"t{j}",
                score=10 * i + j,
                health={"findings": [finding(f"skew{j}", 10 * i + j)]},
            )
        builders.snapshot(server, pressure={"findings": [finding("limits", 10 * i + 1.5)]})
    return servers


def test_without_limit_the_answer_is_the_whole_plain_list(admin_client, fleet):
    answer = admin_client.get(SERVERS).json()
    assert isinstance(answer, list)
    assert [s["name"] for s in answer] == sorted(s.name for s in fleet)


def test_a_limit_gives_a_page_with_a_next_link(admin_client, fleet):
    page = admin_client.get(SERVERS, {"limit": 5}).json()
    assert page["count"] == 12 and len(page["results"]) == 5
    assert "offset=5" in page["next"] and page["previous"] is None
    last = admin_client.get(SERVERS, {"limit": 5, "offset": 10}).json()
    assert len(last["results"]) == 2 and last["next"] is None


def test_the_list_shows_each_server_s_findings_as_its_own_answer_does(admin_client, fleet):
    listed = {s["id"]: s["findings"] for s in admin_client.get(SERVERS).json()}
    for server in fleet:
        own = admin_client.get(f"{SERVERS}{server.pk}/").json()["findings"]
        assert listed[server.pk] == own
    busiest = listed[fleet[5].pk]
    assert [f["kind"] for f in busiest] == ["skew3", "skew2", "limits"]


def test_the_list_reads_a_fixed_number_of_queries_whatever_the_fleet(
    admin_client, fleet, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12):
        assert admin_client.get(SERVERS).status_code == 200
