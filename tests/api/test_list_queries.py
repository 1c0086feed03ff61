"""The fleet-wide lists (findings, alerts, notifications) take as many queries for 200
rows as for 10."""

import pytest

from tests import builders

pytestmark = pytest.mark.django_db

QUERIES = 10  # token and user, then a few per list, none per row


def finding(score: float) -> dict:
    return {"kind": "skew", "severity": "warning", "score": score, "message": "", "fix": None}


@pytest.mark.parametrize("size", [10, 200])
@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/findings/?limit=500",
        "/api/v1/alerts/",
        "/api/v1/alerts/?format=csv",
        "/api/v1/notifications/?limit=500",
    ],
)
def test_a_fleet_list_takes_as_many_queries_for_200_rows_as_for_10(
    viewer_api, django_assert_max_num_queries, size, url
):
    servers = [builders.server(f"db{n}") for n in range(4)]
    for n in range(size):
        server = servers[n % 4]
        table = builders.table(
            server, "shop", f"t{n}", score=n + 1, health={"findings": [finding(n + 1)]}
        )
        builders.alert(server, of=table)
        builders.notification(server)
    with django_assert_max_num_queries(QUERIES):
        response = viewer_api.get(url)
    assert response.status_code == 200


def test_alerts_filter_on_severity_and_order_on_request(viewer_api):
    db1, db2 = builders.server("db1"), builders.server("db2")
    builders.alert(db2, of=builders.table(db2), severity="warning", value=9.0)
    builders.alert(db1, of=builders.table(db1), severity="critical", value=1.0)
    listed = viewer_api.get("/api/v1/alerts/", {"ordering": "-value"}).json()
    assert [a["value"] for a in listed] == [9.0, 1.0]
    by_server = viewer_api.get("/api/v1/alerts/", {"ordering": "server"}).json()
    assert [a["server"] for a in by_server] == ["db1", "db2"]
    warnings = viewer_api.get("/api/v1/alerts/", {"severity": "warning"}).json()
    assert [a["server"] for a in warnings] == ["db2"]
    assert viewer_api.get("/api/v1/alerts/", {"ordering": "password"}).status_code == 400
