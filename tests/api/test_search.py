"""GET /api/v1/search/?q=: tables across the fleet by schema, table or `schema.table`,
any case, on rows built straight in the database."""

import pytest
from django.utils import timezone

from partdash.metrics.search import MAX_LIMIT, MAX_QUERY_LENGTH
from tests import builders

pytestmark = pytest.mark.django_db

URL = "/api/v1/search/"


@pytest.fixture
def fleet() -> dict:
    """Two servers holding `shop.orders` each, and tables that match in other places."""
    db1, db2 = builders.server("db1"), builders.server("db2")
    return {
        "db1": db1,
        "db2": db2,
        "orders1": builders.table(db1, "shop", "orders"),
        "orders2": builders.table(db2, "shop", "orders"),
        "archive": builders.table(db1, "shop", "orders_archive"),
        "backorders": builders.table(db2, "billing", "backorders"),
        "shopfloor": builders.table(db2, "ShopFloor", "events"),
        "gone": builders.table(db1, "shop", "orders_2019", dropped_at=timezone.now()),
        "other": builders.table(db1, "logs", "events"),
    }


def found(api, q: str, **params) -> list[tuple[str, str, str]]:
    response = api.get(URL, {"q": q, **params})
    assert response.status_code == 200, response.content
    return [(hit["server"], hit["schema"], hit["name"]) for hit in response.json()["results"]]


def test_a_table_name_is_found_on_every_server_exact_names_first(viewer_api, fleet):
    assert found(viewer_api, "orders") == [
        ("db1", "shop", "orders"),
        ("db2", "shop", "orders"),
        ("db1", "shop", "orders_archive"),
        ("db2", "billing", "backorders"),
    ]


def test_search_ignores_case(viewer_api, fleet):
    assert found(viewer_api, "ORDERS_Archive") == [("db1", "shop", "orders_archive")]
    assert found(viewer_api, "shopfloor") == [("db2", "ShopFloor", "events")]


def test_a_schema_finds_its_tables(viewer_api, fleet):
    assert found(viewer_api, "billing") == [("db2", "billing", "backorders")]


def test_schema_dot_table_matches_across_the_dot(viewer_api, fleet):
    assert found(viewer_api, "shop.orders") == [
        ("db1", "shop", "orders"),
        ("db2", "shop", "orders"),
        ("db1", "shop", "orders_archive"),
    ]
    assert found(viewer_api, "p.ord") == found(viewer_api, "shop.orders")


def test_dropped_tables_are_not_found(viewer_api, fleet):
    assert found(viewer_api, "orders_2019") == []


def test_like_wildcards_are_plain_characters(viewer_api, fleet):
    assert found(viewer_api, "%") == []
    assert found(viewer_api, "orders_") == [("db1", "shop", "orders_archive")]


def test_each_hit_links_its_table_and_server(viewer_api, fleet):
    hit = viewer_api.get(URL, {"q": "orders_archive"}).json()["results"][0]
    assert hit["id"] == fleet["archive"].pk and hit["server_id"] == fleet["db1"].pk
    assert set(hit) == {
        "id", "schema", "name", "server_id", "server", "method", "partition_count", "rows", "score"
    }  # fmt: skip


def test_results_are_bounded_and_say_so(viewer_api, fleet):
    body = viewer_api.get(URL, {"q": "orders", "limit": 2}).json()
    assert len(body["results"]) == 2 and body["truncated"] is True
    body = viewer_api.get(URL, {"q": "orders", "limit": 4}).json()
    assert len(body["results"]) == 4 and body["truncated"] is False


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"q": ""},
        {"q": "   "},
        {"q": "x" * (MAX_QUERY_LENGTH + 1)},
        {"q": "a\x00b"},
        {"q": "orders", "limit": "ten"},
        {"q": "orders", "limit": 0},
        {"q": "orders", "limit": MAX_LIMIT + 1},
    ],
)
def test_a_malformed_search_is_a_400_naming_the_field(viewer_api, fleet, params):
    response = viewer_api.get(URL, params)
    assert response.status_code == 400
    assert set(response.json()) <= {"q", "limit"} and response.json()


def test_anonymous_is_refused(client, fleet):
    assert client.get(URL, {"q": "orders"}).status_code in (401, 403)


def test_the_search_page_links_each_table_and_its_server(admin_client, fleet):
    response = admin_client.get("/search/", {"q": "Orders"})
    assert response.status_code == 200
    html = response.content.decode()
    assert f'href="/tables/{fleet["orders2"].pk}/"' in html
    assert f'href="/servers/{fleet["db2"].pk}/"' in html
    assert "orders_2019" not in html and "logs.events" not in html


def test_the_search_page_refuses_an_overlong_text(admin_client, fleet):
    response = admin_client.get("/search/", {"q": "x" * (MAX_QUERY_LENGTH + 1)})
    assert response.status_code == 400


def test_search_ignores_accents_and_case_on_tables_a_poll_stored(viewer_api, client, viewer):
    """`ete` finds `commandes_été` and `ÉTÉ` too; `été` finds `summer_ete`: the names
    stored by a poll (through the store, not a builder's row) and the text both folded."""
    db1 = builders.server("db1")
    builders.poll(
        db1,
        builders.hash_table("ventes", "commandes_été", [10, 10]),
        builders.hash_table("Données", "summer_ete", [10, 10]),
        builders.hash_table("ventes", "orders", [10, 10]),
    )
    accented = [("db1", "ventes", "commandes_été")]
    # Neither name is `ete` nor starts with it: by schema, then name.
    assert found(viewer_api, "ete") == [("db1", "Données", "summer_ete"), *accented]
    assert found(viewer_api, "commandes_ete") == accented
    assert found(viewer_api, "ÉTÉ") == [("db1", "Données", "summer_ete"), *accented]
    assert found(viewer_api, "donnees.summer") == [("db1", "Données", "summer_ete")]
    assert found(viewer_api, "summer_été") == [("db1", "Données", "summer_ete")]

    client.force_login(viewer)
    page = client.get("/search/", {"q": "Commandes_Ete"}).content.decode()
    assert "commandes_été" in page and "summer_ete" not in page
