"""A server's tables and a table's partitions: filtered and ordered on every health
figure, answered in as many queries for 200 rows as for 10, and with an ETag and a
Last-Modified that let a client skip an unchanged list."""

from datetime import timedelta
from itertools import count

import pytest
from django.core.cache import cache
from django.utils import timezone
from django.utils.http import http_date

from partdash.metrics.models import Partition, ServerSnapshot
from tests import builders

pytestmark = pytest.mark.django_db

_poll = count(1)


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def polled(server, ago: timedelta = timedelta(0)) -> ServerSnapshot:
    return ServerSnapshot.objects.create(
        server=server,
        taken_at=timezone.now() - ago,
        poll_id=f"poll-{next(_poll)}",
        flavor="mariadb",
        version="11.4",
    )


def health(skew=1.0, runway=None, catchall=0, hot=(), failure_rate=None) -> dict:
    return {
        "skew": {"max_mean_ratio": skew, "cv": 0.1, "gini": 0.1},
        "hotspots": list(hot),
        "runway": None
        if runway is None and not catchall
        else {"days_left": runway, "catchall_rows": catchall, "empty_future_partitions": 1},
        "compression": None
        if failure_rate is None
        else {"kind": "compressed", "ratio": 2.0, "failure_rate": failure_rate},
    }


@pytest.fixture
def fleet():
    server = builders.server("db1")
    polled(server)
    made = {
        "orders": builders.table(
            server,
            "shop",
            "orders",
            score=80,
            total_rows=1000,
            health=health(skew=4.0, runway=3, hot=["p1", "p2"]),
        ),
        "order_lines": builders.table(
            server,
            "shop",
            "order_lines",
            method="HASH",
            score=20,
            total_rows=50_000,
            health=health(failure_rate=0.4),
        ),
        "events": builders.table(
            server,
            "logs",
            "events",
            score=0,
            total_rows=10,
            health=health(runway=None, catchall=500),
        ),
    }
    return server, made


def names(api, server, **params) -> list[str]:
    response = api.get(f"/api/v1/servers/{server.pk}/tables/", params)
    assert response.status_code == 200, response.content
    return [row["name"] for row in response.json()]


def test_tables_filter_on_schema_table_substring_and_method(viewer_api, fleet):
    server, _ = fleet
    assert sorted(names(viewer_api, server, schema="shop")) == ["order_lines", "orders"]
    assert sorted(names(viewer_api, server, table="ORDER")) == ["order_lines", "orders"]
    assert names(viewer_api, server, method="hash") == ["order_lines"]
    assert names(viewer_api, server, q="LOGS.ev") == ["events"]


def test_tables_filter_on_having_findings(viewer_api, fleet):
    server, made = fleet
    made["events"].health = {**made["events"].health, "findings": [{"kind": "runway"}]}
    made["events"].save()
    assert names(viewer_api, server, findings="true") == ["events"]
    assert (
        viewer_api.get(f"/api/v1/servers/{server.pk}/tables/", {"findings": "y"}).status_code == 400
    )


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"score_min": "50"}, ["orders"]),
        ({"skew_min": "2"}, ["orders"]),
        ({"runway_days_max": "7"}, ["orders"]),
        ({"catchall_rows_min": "1"}, ["events"]),
        ({"hot_partitions_min": "2"}, ["orders"]),
        ({"compression_failure_rate_min": "0.25"}, ["order_lines"]),
        ({"rows_max": "1000", "schema": "shop"}, ["orders"]),
    ],
)
def test_tables_filter_on_every_health_figure(viewer_api, fleet, params, expected):
    assert names(viewer_api, fleet[0], **params) == expected


def test_tables_order_on_a_figure_unknown_ones_last(viewer_api, fleet):
    server, _ = fleet
    assert names(viewer_api, server, ordering="-score") == ["orders", "order_lines", "events"]
    assert names(viewer_api, server, ordering="score") == ["events", "order_lines", "orders"]
    assert names(viewer_api, server, ordering="runway_days") == ["orders", "events", "order_lines"]
    assert names(viewer_api, server, ordering="-rows") == ["order_lines", "orders", "events"]
    assert names(viewer_api, server, ordering="schema,-name") == ["events", "orders", "order_lines"]


@pytest.mark.parametrize(
    "params", [{"ordering": "password"}, {"score_min": "high"}, {"rows_max": "nan"}]
)
def test_a_bad_filter_or_ordering_is_a_400_naming_it(viewer_api, fleet, params):
    response = viewer_api.get(f"/api/v1/servers/{fleet[0].pk}/tables/", params)
    assert response.status_code == 400
    assert set(response.json()) == set(params)


def test_partitions_filter_and_order(viewer_api, fleet):
    table = fleet[1]["orders"]
    for ordinal, size in enumerate([10, 30, 20]):
        Partition.objects.create(
            table=table, key=f"p{ordinal}", name=f"p{ordinal}", ordinal=ordinal, rows=size
        )
    url = f"/api/v1/tables/{table.pk}/partitions/"
    by_rows = viewer_api.get(url, {"ordering": "-rows"}).json()
    assert [p["name"] for p in by_rows] == ["p1", "p2", "p0"]
    assert [p["name"] for p in viewer_api.get(url, {"rows_min": 15}).json()] == ["p1", "p2"]


def test_a_list_carries_etag_and_last_modified_and_answers_304(viewer_api, fleet):
    server, _ = fleet
    url = f"/api/v1/servers/{server.pk}/tables/"
    first = viewer_api.get(url)
    snapshot = ServerSnapshot.objects.get(server=server)
    assert first["Last-Modified"] == http_date(snapshot.taken_at.timestamp())
    assert viewer_api.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    later = http_date(snapshot.taken_at.timestamp() + 60)
    assert viewer_api.get(url, HTTP_IF_MODIFIED_SINCE=later).status_code == 304
    assert (
        viewer_api.get(url, {"ordering": "name"}, HTTP_IF_NONE_MATCH=first["ETag"]).status_code
        == 200
    )

    polled(server)  # a new poll: a new ETag
    again = viewer_api.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200
    assert again["ETag"] != first["ETag"]


QUERIES = 8  # token, user, server, snapshot, tables (and the partitions' few)


@pytest.mark.parametrize("size", [10, 200])
@pytest.mark.parametrize("params", [{}, {"ordering": "-score", "score_min": "1"}])
def test_the_tables_list_takes_as_many_queries_for_200_tables_as_for_10(
    viewer_api, django_assert_max_num_queries, size, params
):
    server = builders.server("big")
    polled(server)
    for n in range(size):
        builders.table(server, "shop", f"t{n}", score=n, health=health(skew=1 + n / 100))
    with django_assert_max_num_queries(QUERIES):
        assert (
            len(viewer_api.get(f"/api/v1/servers/{server.pk}/tables/", params).json()) >= size - 1
        )


@pytest.mark.parametrize("size", [10, 200])
def test_the_partitions_list_takes_as_many_queries_for_200_partitions_as_for_10(
    viewer_api, django_assert_max_num_queries, size
):
    server = builders.server("big")
    polled(server)
    table = builders.table(server, total_rows=size * 10, health=health())
    Partition.objects.bulk_create(
        Partition(table=table, key=f"p{n}", name=f"p{n}", ordinal=n, rows=10) for n in range(size)
    )
    with django_assert_max_num_queries(QUERIES):
        response = viewer_api.get(f"/api/v1/tables/{table.pk}/partitions/", {"ordering": "name"})
    assert len(response.json()) == size
