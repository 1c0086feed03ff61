"""/api/v1/retention-policies/: the contract's fields; create, list, update, delete; a
policy keeps days or partitions, exactly one (a one-line 400 otherwise); viewers read
and cannot write; a policy's change makes the tables it names due for analysis."""

import pytest
from django.utils import timezone

from partdash.metrics.models import PartitionedTable, RetentionPolicy
from tests import builders

pytestmark = pytest.mark.django_db

POLICIES = "/api/v1/retention-policies/"
CONTRACT_FIELDS = {"id", "pattern", "keep_days", "keep_partitions"}


def post(client, body):
    return client.post(POLICIES, body, content_type="application/json")


def patch(client, pk, body):
    return client.patch(f"{POLICIES}{pk}/", body, content_type="application/json")


def test_a_policy_is_created_listed_updated_and_deleted(admin_client):
    created = post(admin_client, {"pattern": " shop.events_* ", "keep_days": 90})
    assert created.status_code == 201, created.content
    policy = created.json()
    assert CONTRACT_FIELDS <= set(policy)
    assert (policy["pattern"], policy["keep_days"], policy["keep_partitions"]) == (
        "shop.events_*",
        90,
        None,
    )
    assert policy["server"] is None
    listed = admin_client.get(POLICIES).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [p["id"] for p in rows] == [policy["id"]]
    # Giving keep_partitions switches the policy from days to partitions.
    changed = patch(admin_client, policy["id"], {"keep_partitions": 12})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["keep_days"], changed.json()["keep_partitions"]) == (None, 12)
    assert admin_client.delete(f"{POLICIES}{policy['id']}/").status_code == 204
    assert not RetentionPolicy.objects.exists()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"pattern": "shop.x", "keep_days": 9, "keep_partitions": 3}, "exactly one"),
        ({"pattern": "shop.x"}, "exactly one"),
        ({"pattern": "a.b.c", "keep_days": 9}, "more than one dot"),
        ({"pattern": "  ", "keep_days": 9}, "pattern"),
        ({"pattern": "shop.x", "keep_days": 0}, "keep_days"),
        # Past the calendar: the analysis of every table it named would fail.
        ({"pattern": "shop.x", "keep_days": 2_000_000_000}, "keep_days is at most 36500"),
        ({"pattern": "shop.x", "keep_partitions": 10**9}, "keep_partitions is at most 8192"),
    ],
)
def test_a_bad_policy_is_a_400_saying_why(admin_client, body, words):
    response = post(admin_client, body)
    assert response.status_code == 400
    assert words in str(response.json())
    assert not RetentionPolicy.objects.exists()


def test_viewers_read_policies_and_cannot_write_them(viewer_api):
    policy = RetentionPolicy.objects.create(pattern="*.audit", keep_days=30)
    assert viewer_api.get(POLICIES).status_code == 200
    assert viewer_api.post(POLICIES, {"pattern": "a.b", "keep_days": 1}).status_code == 403
    assert viewer_api.patch(f"{POLICIES}{policy.pk}/", {"keep_days": 2}).status_code == 403
    assert viewer_api.delete(f"{POLICIES}{policy.pk}/").status_code == 403
    assert RetentionPolicy.objects.get().keep_days == 30


def test_a_policy_makes_the_tables_it_names_due_for_analysis(admin_client):
    db1 = builders.server()
    named = builders.table(db1, schema="shop", name="events_2026")
    other = builders.table(db1, schema="shop", name="orders")
    PartitionedTable.objects.update(analysed_at=timezone.now())
    pk = post(admin_client, {"pattern": "SHOP.events_*", "keep_days": 9}).json()["id"]
    named.refresh_from_db()
    other.refresh_from_db()
    assert named.analysed_at is None and other.analysed_at is not None
    PartitionedTable.objects.update(analysed_at=timezone.now())
    patch(admin_client, pk, {"pattern": "shop.orders"})  # both: the old and new names
    assert not PartitionedTable.objects.exclude(analysed_at=None).exists()
