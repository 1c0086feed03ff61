"""/api/v1/alert-rules/: the contract's fields, staff create, edit and delete overrides,
viewers only read, and every malformed override is a 400 naming its field."""

import pytest
from rest_framework.test import APIClient

from partdash.alerts.models import AlertRule
from tests import builders

pytestmark = pytest.mark.django_db

RULES = "/api/v1/alert-rules/"
CONTRACT_FIELDS = [
    "id",
    "rule",
    "enabled",
    "threshold",
    "clear_threshold",
    "for_polls",
    "severity",
    "server",
    "tag",
    "schema",
    "table",
    "recipients",
    "channels",  # issue 26: the channels this scope's alerts go to ([]: the default route)
    # escalation (issue 26): a channel for the alerts nobody acknowledged in time
    "escalate_to",
    "escalate_after_minutes",
]


def test_an_override_has_exactly_the_contract_fields(staff_api, viewer_api):
    db1 = builders.server()
    body = {
        "rule": "skew",
        "threshold": 3.0,
        "clear_threshold": 2.5,
        "for_polls": 3,
        "severity": "critical",
        "server": db1.pk,
        "schema": "shop",
        "table": "orders",
        "recipients": ["dba@example.com", "oncall@example.com"],
    }

    created = staff_api.post(RULES, body, format="json")

    assert created.status_code == 201, created.content
    assert list(created.json()) == CONTRACT_FIELDS
    (listed,) = viewer_api.get(RULES).json()
    assert listed == {
        **body,
        "id": created.json()["id"],
        "enabled": True,
        "tag": None,
        "channels": [],
        "escalate_to": None,
        "escalate_after_minutes": None,
    }
    stored = AlertRule.objects.get()
    assert stored.recipients == "dba@example.com, oncall@example.com"


def test_null_scope_means_everywhere_and_blank_is_null(staff_api):
    created = staff_api.post(
        RULES, {"rule": "table_size", "threshold": 1e12, "schema": "", "tag": ""}, format="json"
    )

    assert created.status_code == 201, created.content
    shown = created.json()
    assert (shown["server"], shown["tag"], shown["schema"], shown["table"]) == (None,) * 4
    assert shown["severity"] is None and shown["recipients"] == []
    assert AlertRule.objects.get().schema is None


def test_switching_a_rule_off_for_one_table(staff_api):
    db1 = builders.server()
    body = {"rule": "skew", "enabled": False, "server": db1.pk, "schema": "s", "table": "t"}

    created = staff_api.post(RULES, body, format="json")

    assert created.status_code == 201, created.content
    assert created.json()["enabled"] is False
    assert created.json()["threshold"] is None


def test_recipients_may_be_one_comma_separated_string(staff_api):
    created = staff_api.post(
        RULES, {"rule": "runway", "recipients": "a@example.com, b@example.com"}, format="json"
    )

    assert created.json()["recipients"] == ["a@example.com", "b@example.com"]


def test_staff_patch_and_delete_an_override(staff_api):
    rule = AlertRule.objects.create(rule="skew", threshold=3, clear_threshold=2)

    patched = staff_api.patch(f"{RULES}{rule.pk}/", {"for_polls": 5}, format="json")

    assert patched.status_code == 200, patched.content
    rule.refresh_from_db()
    assert (rule.for_polls, rule.threshold) == (5, 3)
    assert staff_api.delete(f"{RULES}{rule.pk}/").status_code == 204
    assert not AlertRule.objects.exists()


def test_viewers_read_but_cannot_write(viewer_api):
    rule = AlertRule.objects.create(rule="skew")

    assert viewer_api.get(RULES).status_code == 200
    assert viewer_api.post(RULES, {"rule": "skew"}, format="json").status_code == 403
    assert viewer_api.patch(f"{RULES}{rule.pk}/", {"enabled": False}).status_code == 403
    assert viewer_api.delete(f"{RULES}{rule.pk}/").status_code == 403
    assert APIClient().get(RULES).status_code in (401, 403)
    assert AlertRule.objects.get().enabled


@pytest.mark.parametrize(
    "body, field",
    [
        ({"rule": "nonsense"}, "rule"),
        ({}, "rule"),
        ({"rule": "skew", "for_polls": 0}, "for_polls"),
        ({"rule": "skew", "for_polls": -3}, "for_polls"),
        ({"rule": "skew", "for_polls": "two"}, "for_polls"),
        ({"rule": "skew", "threshold": "high"}, "threshold"),
        ({"rule": "skew", "severity": "apocalyptic"}, "severity"),
        ({"rule": "skew", "server": 999999}, "server"),
        ({"rule": "skew", "server": 10**30}, "server"),
        ({"rule": "skew", "recipients": ["dba@example.com", "not an address"]}, "recipients"),
        ({"rule": "skew", "recipients": "dba@"}, "recipients"),
        ({"rule": "skew", "recipients": [{"to": "x"}]}, "recipients"),
        ({"rule": "skew", "schema": "x" * 65}, "schema"),
        ({"rule": "skew", "enabled": "perhaps"}, "enabled"),
    ],
)
def test_a_malformed_override_is_a_400_naming_its_field(staff_api, body, field):
    response = staff_api.post(RULES, body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not AlertRule.objects.exists()


@pytest.mark.parametrize(
    "body", ["{rule: skew", '{"rule": "skew", "threshold": NaN}', "[1, 2]", "\xff\xfe"]
)
def test_a_body_that_is_not_an_object_of_json_is_a_400(staff_api, body):
    response = staff_api.post(RULES, body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()


def test_an_infinite_threshold_is_a_400(staff_api):
    body = '{"rule": "skew", "threshold": 1e400}'

    response = staff_api.post(RULES, body, content_type="application/json")

    assert response.status_code == 400 and "threshold" in response.json()


def test_a_second_override_of_one_rule_for_one_scope_is_refused(staff_api):
    first = AlertRule.objects.create(rule="skew", schema="shop")

    again = staff_api.post(RULES, {"rule": "skew", "schema": "shop"}, format="json")
    elsewhere = staff_api.post(RULES, {"rule": "skew", "schema": "crm"}, format="json")
    moved = staff_api.patch(f"{RULES}{elsewhere.json()['id']}/", {"schema": "shop"}, format="json")

    assert again.status_code == 400 and str(first.pk) in str(again.json())
    assert elsewhere.status_code == 201
    assert moved.status_code == 400


def test_clear_threshold_must_be_below_a_threshold_that_fires_above(staff_api):
    wrong = staff_api.post(
        RULES, {"rule": "skew", "threshold": 3, "clear_threshold": 4}, format="json"
    )
    rule = AlertRule.objects.create(rule="skew", server=builders.server(), threshold=3)
    patched = staff_api.patch(f"{RULES}{rule.pk}/", {"clear_threshold": 3}, format="json")
    right = staff_api.patch(f"{RULES}{rule.pk}/", {"clear_threshold": 2.5}, format="json")

    assert wrong.status_code == 400 and "must be below" in wrong.json()["clear_threshold"][0]
    assert patched.status_code == 400 and "clear_threshold" in patched.json()
    assert right.status_code == 200


def test_runway_fires_below_its_threshold_so_it_clears_above(staff_api):
    wrong = staff_api.post(
        RULES, {"rule": "runway", "threshold": 14, "clear_threshold": 10}, format="json"
    )
    right = staff_api.post(
        RULES, {"rule": "runway", "threshold": 14, "clear_threshold": 21}, format="json"
    )

    assert wrong.status_code == 400 and "must be above" in wrong.json()["clear_threshold"][0]
    assert right.status_code == 201
