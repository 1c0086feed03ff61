"""The OpenAPI document describes the alerting endpoints with the contract's fields."""

import json
import re

import pytest

from tests.api.test_alert_rules import CONTRACT_FIELDS as RULE_FIELDS
from tests.api.test_alerts import CONTRACT_FIELDS as ALERT_FIELDS
from tests.api.test_silences import CONTRACT_FIELDS as SILENCE_FIELDS

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(viewer_api) -> dict:
    response = viewer_api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def test_every_alerting_path_and_method_is_described(schema):
    paths = schema["paths"]

    assert set(paths["/api/v1/alerts/"]) >= {"get"}
    assert {"state", "server", "table", "rule", "silenced", "limit"} <= {
        p["name"] for p in paths["/api/v1/alerts/"]["get"]["parameters"]
    }
    assert "get" in paths["/api/v1/alerts/counts/"]
    assert {"get", "post"} <= set(paths["/api/v1/alert-rules/"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/alert-rules/{id}/"])
    assert {"get", "post"} <= set(paths["/api/v1/silences/"])
    assert {"get", "delete"} <= set(paths["/api/v1/silences/{id}/"])
    assert "get" in paths["/api/v1/notifications/"]


@pytest.mark.parametrize(
    "component, fields",
    [("Alert", ALERT_FIELDS), ("AlertRule", RULE_FIELDS), ("Silence", SILENCE_FIELDS)],
)
def test_each_component_has_exactly_the_contract_fields(schema, component, fields):
    assert list(schema["components"]["schemas"][component]["properties"]) == fields


def test_created_by_is_read_only_and_a_fix_has_the_contract_fields(schema):
    components = schema["components"]["schemas"]

    assert components["Silence"]["properties"]["created_by"]["readOnly"] is True
    fix = components["Fix"]["properties"]
    assert list(fix) == ["advice", "sql", "safety", "rows", "bytes"]
    assert fix["safety"]["nullable"] is True
    (choices,) = [c["$ref"] for c in fix["safety"]["oneOf"] if "Null" not in c["$ref"]]
    safety = components[choices.rsplit("/", 1)[1]]
    assert safety["enum"] == ["instant", "copies", "blocks", "destroys"]


def test_the_schema_builds_without_a_warning(tmp_path):
    from django.core.management import call_command

    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )


def test_the_document_says_who_may_write_as_the_roles_grant_it(schema):
    """Every write names the permission it needs and the role holding it, as the groups
    in the database grant it; every read says viewers read. No operation says staff."""
    from django.contrib.auth.models import Group

    from tests.conftest import recreate_roles

    recreate_roles()  # a transactional test before this one may have flushed them

    def held(role: str) -> set[str]:
        permissions = Group.objects.get(name=role).permissions.select_related("content_type")
        return {f"{p.content_type.app_label}.{p.codename}" for p in permissions}

    operators, viewers = held("operators"), held("viewers")
    writes = 0
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            said = operation.get("description", "")
            assert "staff write" not in said, (method, path)
            if method == "get" and path == "/api/v1/audit/":
                assert "Who may: admins, who hold `accounts.view_auditentry`" in said
                assert "accounts.view_auditentry" not in operators | viewers
                continue
            if method == "get":
                assert "Who may: every logged-in user (viewers and up) reads." in said, path
                continue
            writes += 1
            (permission,) = re.findall(r"who hold `([a-z_.]+)`", said)
            assert "Who may: operators and admins" in said, (method, path, said)
            assert permission in operators and permission not in viewers, (method, path)
    assert writes >= 11
    assert (
        "operators also write servers, polls, alert rules and silences"
        in (schema["info"]["description"])
    )
