"""The fleet-wide lists (findings, alerts, notifications) take as many queries for 200
rows as for 10."""

import pytest

from tests import alert_rows as rows

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
    servers = [rows.server(f"db{n}") for n in range(4)]
    for n in range(size):
        server = servers[n % 4]
        table = rows.table(
            server, "shop", f"t{n}", score=n + 1, health={"findings": [finding(n + 1)]}
        )
        rows.alert(server, of=table)
        rows.notification(server)
    with django_assert_max_num_queries(QUERIES):
        response = viewer_api.get(url)
    assert response.status_code == 200
