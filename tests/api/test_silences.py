"""/api/v1/silences/: the contract's fields, staff create (created_by is who asked) and
delete, viewers only read, and a silence's time box is checked."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from partdash.alerts.models import Silence
from tests import builders

pytestmark = pytest.mark.django_db

SILENCES = "/api/v1/silences/"
CONTRACT_FIELDS = [
    "id",
    "server",
    "schema",
    "table",
    "rule",
    "starts_at",
    "ends_at",
    "comment",
    "created_by",
]


def in_hours(hours: float) -> str:
    return (timezone.now() + timedelta(hours=hours)).isoformat()


def test_a_silence_has_exactly_the_contract_fields_and_its_creator(staff_api, viewer_api, staff):
    db1 = builders.server()
    body = {
        "server": db1.pk,
        "schema": "shop",
        "table": "orders",
        "rule": "runway",
        "ends_at": in_hours(4),
        "comment": "re-partitioning tonight",
        "created_by": "somebody-else",
    }

    created = staff_api.post(SILENCES, body, format="json")

    assert created.status_code == 201, created.content
    assert list(created.json()) == CONTRACT_FIELDS
    (listed,) = viewer_api.get(SILENCES).json()
    assert listed["created_by"] == "staff"
    assert Silence.objects.get().created_by == staff
    assert (listed["server"], listed["schema"], listed["table"]) == (db1.pk, "shop", "orders")
    assert listed["rule"] == "runway" and listed["comment"] == "re-partitioning tonight"


def test_a_silence_starts_now_unless_told_and_null_fields_match_everything(staff_api):
    before = timezone.now()

    created = staff_api.post(SILENCES, {"ends_at": in_hours(1), "rule": ""}, format="json")

    assert created.status_code == 201, created.content
    silence = Silence.objects.get()
    assert before <= silence.starts_at <= timezone.now()
    assert (silence.server, silence.schema, silence.table, silence.rule) == (None,) * 4


def test_staff_delete_a_silence_and_viewers_cannot(staff_api, viewer_api):
    silence = builders.silence()

    assert viewer_api.get(SILENCES).status_code == 200
    assert viewer_api.post(SILENCES, {"ends_at": in_hours(1)}, format="json").status_code == 403
    assert viewer_api.delete(f"{SILENCES}{silence.pk}/").status_code == 403
    assert APIClient().get(SILENCES).status_code in (401, 403)
    assert staff_api.patch(f"{SILENCES}{silence.pk}/", {}).status_code == 405
    assert staff_api.delete(f"{SILENCES}{silence.pk}/").status_code == 204
    assert not Silence.objects.exists()


def test_active_lists_the_silences_in_force(viewer_api):
    now = builders.silence()
    ended = builders.silence(hours=1, starts_ago=3)

    def listed(active: str) -> list[int]:
        return [s["id"] for s in viewer_api.get(SILENCES, {"active": active}).json()]

    assert listed("true") == [now.pk]
    assert listed("false") == [ended.pk]
    assert viewer_api.get(SILENCES, {"active": "soon"}).status_code == 400


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "ends_at"),
        ({"ends_at": "tomorrow"}, "ends_at"),
        ({"starts_at": in_hours(2), "ends_at": in_hours(1)}, "ends_at"),
        ({"starts_at": in_hours(-3), "ends_at": in_hours(-1)}, "ends_at"),
        ({"ends_at": in_hours(24 * 31)}, "ends_at"),
        ({"ends_at": in_hours(1), "rule": "nonsense"}, "rule"),
        ({"ends_at": in_hours(1), "server": 999999}, "server"),
        ({"ends_at": in_hours(1), "server": "db1"}, "server"),
        ({"ends_at": in_hours(1), "table": "t" * 65}, "table"),
    ],
)
def test_a_malformed_silence_is_a_400_naming_its_field(staff_api, body, field):
    response = staff_api.post(SILENCES, body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not Silence.objects.exists()


def test_a_week_long_silence_is_allowed(staff_api):
    response = staff_api.post(SILENCES, {"ends_at": in_hours(24 * 7)}, format="json")

    assert response.status_code == 201, response.content
