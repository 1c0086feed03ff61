"""Malformed requests get a JSON 4xx, never a 500: bad ids, bodies, passwords, hosts and
windows, unknown routes and methods; a dropped table answers alike on all its routes."""

import json

import pytest
from django.utils import timezone

from tests import builders

pytestmark = pytest.mark.django_db

HUGE = "9" * 30


def is_json_error(response, status: int) -> bool:
    return response.status_code == status and response["Content-Type"].startswith(
        "application/json"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/tables/abc/history/?metric=rows",
        "/api/v1/tables/abc/",
        "/api/v1/tables/abc/partitions/",
        "/api/v1/servers/abc/",
        "/api/v1/servers/abc/tables/",
        "/api/v1/servers/1.5/health/",
        f"/api/v1/servers/{HUGE}/",
        f"/api/v1/tables/{HUGE}/history/?metric=rows",
        f"/api/v1/alerts/{HUGE}/",
        "/api/v1/alert-rules/x/",
        "/api/v1/silences/-1/",
        "/api/v1/notifications/%00/",
        "/api/v1/no-such-thing/",
        "/api/v1/no-such-thing",
        "/api/v2/servers/",
        "/api/nothing",
    ],
)
def test_a_bad_id_or_an_unknown_route_is_a_json_404(viewer_api, path):
    assert is_json_error(viewer_api.get(path), 404)


def test_a_route_without_its_trailing_slash_is_redirected_to_it(staff_api):
    response = staff_api.get("/api/v1/servers?limit=1")
    assert (response.status_code, response["Location"]) == (301, "/api/v1/servers/?limit=1")
    assert staff_api.post("/api/v1/servers", {}, format="json").status_code == 308


def test_an_unknown_method_is_a_json_405(staff_api):
    assert is_json_error(staff_api.delete("/api/v1/servers/"), 405)


def test_a_huge_filter_id_is_a_400(viewer_api):
    assert viewer_api.get("/api/v1/alerts/", {"server": HUGE}).status_code == 400


def post_raw(api, body: str):
    return api.post("/api/v1/servers/", body, content_type="application/json")


def test_a_deeply_nested_body_is_a_400(staff_api):
    assert is_json_error(post_raw(staff_api, "[" * 100_000 + "]" * 100_000), 400)
    forty_deep = '{"name": ' + "[" * 40 + "1" + "]" * 40 + "}"
    assert is_json_error(post_raw(staff_api, forty_deep), 400)


def test_a_body_over_the_cap_is_a_413(staff_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"name": "x" * 2000})
    assert is_json_error(post_raw(staff_api, body), 413)


def server_body(**overrides) -> dict:
    body = {"name": "new-db", "host": "127.0.0.1", "port": 9, "user": "monitor"}
    return {**body, "enabled": False, **overrides}


def test_a_one_megabyte_password_is_refused(staff_api):
    response = staff_api.post(
        "/api/v1/servers/", server_body(password="p" * 1_000_000), format="json"
    )
    assert response.status_code in (400, 413)
    response = staff_api.post("/api/v1/servers/", server_body(password="p" * 2000), format="json")
    assert response.status_code == 400
    assert "password" in response.json()


@pytest.mark.parametrize(
    "host", ["db\n1", "db 1", "db\x00", "db\x1b[31m", "", "a..b", "::g", "fe80::1%e th"]
)
def test_a_host_with_control_characters_or_spaces_is_refused(staff_api, host):
    response = staff_api.post("/api/v1/servers/", server_body(host=host), format="json")
    assert response.status_code == 400
    assert "host" in response.json()


@pytest.mark.parametrize(
    "host", ["db1", "db-1.example.internal", "10.0.0.7", "::1", "fe80::1%eth0", "[::1]"]
)
def test_host_names_and_addresses_are_taken(staff_api, host):
    response = staff_api.post("/api/v1/servers/", server_body(host=host), format="json")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    "window",
    [
        {"since": "0001-01-01T00:00:00Z"},
        {"since": "0001-01-01T00:00:00Z", "until": "0001-01-02T00:00:00Z"},
        {"until": "0001-01-01T00:00:00Z"},
        {"since": "9999-12-31T23:59:59Z"},
        {"since": "1900-01-01"},
    ],
)
def test_a_window_outside_the_retention_is_a_400(viewer_api, window):
    table = builders.table(builders.server())
    response = viewer_api.get(f"/api/v1/tables/{table.pk}/history/", {"metric": "rows", **window})
    assert is_json_error(response, 400)


@pytest.mark.parametrize("route", ["", "partitions/", "history/?metric=rows"])
def test_a_dropped_table_is_a_404_saying_when_on_every_route(viewer_api, route):
    table = builders.table(builders.server(), dropped_at=timezone.now())
    response = viewer_api.get(f"/api/v1/tables/{table.pk}/{route}")
    assert is_json_error(response, 404)
    assert response.json()["detail"].startswith("table dropped at ")


def test_an_unexpected_exception_is_a_logged_json_500(viewer_api, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("partdash.api.views.ranked", broken)
    viewer_api.raise_request_exception = False
    response = viewer_api.get("/api/v1/findings/")
    assert is_json_error(response, 500)
    assert "a bug" not in response.content.decode()
    assert "unexpected error" in caplog.text
