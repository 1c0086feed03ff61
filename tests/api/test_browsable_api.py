"""The browsable API is for people who are logged in; everyone else gets JSON."""

import pytest

pytestmark = pytest.mark.django_db

HTML = {"HTTP_ACCEPT": "text/html"}


def test_a_logged_in_browser_gets_the_browsable_api(client, admin_user):
    client.force_login(admin_user)
    response = client.get("/api/v1/servers/", **HTML)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")


def test_an_anonymous_browser_gets_a_json_refusal(client):
    response = client.get("/api/v1/servers/", **HTML)
    assert response.status_code in (401, 403)
    assert response["Content-Type"] == "application/json"


def test_a_bad_token_gets_a_json_401(client):
    response = client.get("/api/v1/servers/", HTTP_AUTHORIZATION="Token nonsense", **HTML)
    assert response.status_code == 401 and response["Content-Type"] == "application/json"


def test_scripts_get_json(client, admin_user):
    client.force_login(admin_user)
    response = client.get("/api/v1/servers/")
    assert response["Content-Type"] == "application/json"
