"""The API slows a runaway client: per token and per user; 429 with Retry-After."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from partdash.accounts.models import ApiToken

SERVERS = "/api/v1/servers/"


@pytest.fixture
def rates(settings):
    """Small rates, set in settings alone; a clean throttle history."""
    cache.clear()

    def set_rates(**rates: str) -> None:
        framework = dict(settings.REST_FRAMEWORK)
        framework["DEFAULT_THROTTLE_RATES"] = {
            "anon": "1000/min",
            "user": "1000/min",
            "token": "1000/min",
            **rates,
        }
        settings.REST_FRAMEWORK = framework

    yield set_rates
    cache.clear()


def with_key(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_token_over_its_rate_gets_429_json_with_retry_after(viewer, rates):
    rates(token="3/min")
    _, key = ApiToken.issue(viewer)
    client = with_key(key)
    assert [client.get(SERVERS).status_code for _ in range(3)] == [200] * 3
    refused = client.get(SERVERS)
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("application/json")
    assert "throttled" in refused.json()["detail"].lower()
    assert 0 < int(refused["Retry-After"]) <= 60


def test_another_token_of_the_same_user_has_its_own_allowance(viewer, rates):
    rates(token="2/min")
    _, first = ApiToken.issue(viewer)
    _, second = ApiToken.issue(viewer)
    for _ in range(2):
        with_key(first).get(SERVERS)
    assert with_key(first).get(SERVERS).status_code == 429
    assert with_key(second).get(SERVERS).status_code == 200


def test_a_user_s_tokens_and_session_share_the_user_rate(viewer, rates):
    rates(user="3/min")
    _, first = ApiToken.issue(viewer)
    _, second = ApiToken.issue(viewer)
    with_key(first).get(SERVERS)
    with_key(second).get(SERVERS)
    session = APIClient()
    session.force_login(viewer)
    assert session.get(SERVERS).status_code == 200
    assert session.get(SERVERS).status_code == 429
