"""The audit trail (issue 42, point 3): what people and tokens do is recorded once each,
with who, when, from which address, the object and before/after, never a secret's
value; admins read it at /api/v1/audit/ and in the admin, which changes nothing; the
store's retention job deletes entries past PARTDASH_AUDIT_KEEP_DAYS."""

from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from partdash.accounts.models import AuditEntry
from partdash.metrics.downsampling import downsample
from tests import builders
from tests.conftest import token_client, user_in

pytestmark = pytest.mark.django_db

AUDIT = "/api/v1/audit/"
NEW_PASSWORD = "s3cret-Monitor-pw"


def trail(api, **query) -> list[dict]:
    answer = api.get(AUDIT, query)
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def session_of(username: str) -> Client:
    client = Client()
    answer = client.post("/login/", {"username": username, "password": f"{username}-pw"})
    assert answer.status_code == 302
    return client


def test_changes_by_three_users_are_listed_once_each_with_who_and_before_after(
    staff, operator, django_user_model
):
    user_in(django_user_model, "oper2", "operators")
    server = builders.server("db1", password="old-pw", poll_interval=60, enabled=True)
    admin_api, operator_api = token_client(staff), token_client(operator)
    oper2 = session_of("oper2")

    # The operator, by token: a new password and interval, then Poll now.
    changed = operator_api.patch(
        f"/api/v1/servers/{server.pk}/",
        {"password": NEW_PASSWORD, "poll_interval": 120},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    operator_api.post(f"/api/v1/servers/{server.pk}/poll/")
    # The second operator, by session: a silence, and the server's SQL plan.
    silenced = oper2.post(
        "/api/v1/silences/",
        {"server": server.pk, "ends_at": (timezone.now() + timedelta(hours=2)).isoformat()},
        content_type="application/json",
    )
    assert silenced.status_code == 201, silenced.content
    assert oper2.get(f"/api/v1/servers/{server.pk}/maintenance-plan.sql").status_code == 200
    # The admin, by token: an alert rule; then moves oper2 from operators to viewers.
    rule = admin_api.post("/api/v1/alert-rules/", {"rule": "skew", "threshold": 4.0}, format="json")
    assert rule.status_code == 201, rule.content
    admin_page = session_of("staff")
    viewers = Group.objects.get(name="viewers")
    oper2_user = django_user_model.objects.get(username="oper2")
    oper2_user.date_joined = oper2_user.date_joined.replace(microsecond=0)
    oper2_user.save()  # outside a request: not in the trail
    moved = admin_page.post(
        f"/admin/auth/user/{oper2_user.pk}/change/",
        {
            "username": "oper2",
            "is_active": "on",
            "groups": [viewers.pk],
            "date_joined_0": f"{oper2_user.date_joined:%Y-%m-%d}",
            "date_joined_1": f"{oper2_user.date_joined:%H:%M:%S}",
        },
    )
    assert moved.status_code == 302, moved.content[:2000]

    answer = admin_api.get(AUDIT)
    assert answer.status_code == 200
    assert NEW_PASSWORD not in answer.content.decode() and "old-pw" not in answer.content.decode()
    server.refresh_from_db()
    assert server.password_token not in answer.content.decode()
    entries = answer.json()["results"]
    assert set(entries[0]) == {
        "id", "at", "user", "address", "action", "object_type", "object_id", "object", "changes"
    }  # fmt: skip
    done = Counter((e["user"], e["action"], e["object_type"]) for e in entries)
    assert done == {
        ("operator", "update", "server"): 1,
        ("operator", "poll_now", "server"): 1,
        ("oper2", "sign_in", "user"): 1,
        ("oper2", "create", "silence"): 1,
        ("oper2", "plan_download", "server"): 1,
        ("staff", "create", "alertrule"): 1,
        ("staff", "sign_in", "user"): 1,
        ("staff", "update", "user"): 1,
    }
    by = {(e["user"], e["action"], e["object_type"]): e for e in entries}
    server_change = by["operator", "update", "server"]
    assert server_change["changes"] == {
        "password_token": ["(changed)", "(changed)"],
        "poll_interval": [60, 120],
    }
    assert server_change["object_id"] == str(server.pk) and server_change["object"] == "db1"
    assert {e["address"] for e in entries} == {"127.0.0.1"}
    assert by["staff", "update", "user"]["changes"] == {"groups": [["operators"], ["viewers"]]}
    assert by["staff", "create", "alertrule"]["changes"]["threshold"] == [None, 4.0]
    # Narrowed: by user, by object, since.
    assert {e["action"] for e in trail(admin_api, user="operator")} == {"update", "poll_now"}
    one_server = trail(admin_api, object=f"server:{server.pk}")
    assert Counter(e["action"] for e in one_server) == {
        "update": 1,
        "poll_now": 1,
        "plan_download": 1,
    }
    assert trail(admin_api, since=(timezone.now() + timedelta(minutes=1)).isoformat()) == []


def test_only_admins_read_the_trail(staff, operator, viewer, client):
    assert token_client(staff).get(AUDIT).status_code == 200
    assert token_client(operator).get(AUDIT).status_code == 403
    assert token_client(viewer).get(AUDIT).status_code == 403
    assert client.get(AUDIT).status_code in (401, 403)
    assert token_client(staff).post(AUDIT, {}).status_code == 405
    assert token_client(staff).get(AUDIT, {"object": "server:1 OR 1"}).status_code == 400


def test_failed_sign_ins_are_recorded_with_the_name_tried(viewer):
    Client().post("/login/", {"username": "viewer", "password": "wrong"})
    Client().post("/login/", {"username": "nobody", "password": "wrong"})
    failed = AuditEntry.objects.filter(event="sign_in_failed")
    assert sorted((e.username, e.object_repr, e.remote_addr) for e in failed) == [
        ("nobody", "nobody", "127.0.0.1"),
        ("viewer", "viewer", "127.0.0.1"),
    ]
    assert "wrong" not in str([e.changes for e in failed])


def test_what_workers_change_is_not_recorded(operator):
    builders.server("db2")
    builders.silence()
    assert not AuditEntry.objects.exists()


def test_the_admin_shows_the_trail_and_changes_nothing(staff, operator):
    server = builders.server("db3", enabled=True)
    token_client(operator).post(f"/api/v1/servers/{server.pk}/poll/")
    entry = AuditEntry.objects.get(event="poll_now")
    admin_page = session_of("staff")
    listed = admin_page.get("/admin/accounts/auditentry/")
    assert listed.status_code == 200 and b"poll_now" in listed.content
    assert admin_page.get("/admin/accounts/auditentry/add/").status_code == 403
    assert admin_page.post(f"/admin/accounts/auditentry/{entry.pk}/delete/").status_code == 403
    assert admin_page.post(f"/admin/accounts/auditentry/{entry.pk}/change/", {}).status_code in (
        200,
        403,
    )
    assert AuditEntry.objects.filter(pk=entry.pk, event="poll_now").exists()
    with pytest.raises(ValueError):
        entry.save()
    assert session_of("operator").get("/admin/accounts/auditentry/").status_code in (302, 403)


def test_entries_past_the_keep_days_are_deleted_by_the_retention_job(settings):
    settings.PARTDASH_AUDIT_KEEP_DAYS = 30
    now = timezone.now()
    for days in (31, 29):
        AuditEntry.objects.create(
            event="sign_in",
            action=AuditEntry.Action.ACCESS,
            content_type_id=_group_type(),
            object_pk="",
            object_repr=f"{days} days old",
            timestamp=now - timedelta(days=days),
        )
    report = downsample(now)
    assert report.audit_entries_deleted == 1
    assert list(AuditEntry.objects.values_list("object_repr", flat=True)) == ["29 days old"]


def _group_type() -> int:
    from django.contrib.contenttypes.models import ContentType

    return ContentType.objects.get_for_model(Group).pk


def test_a_command_s_changes_are_recorded_as_the_account_that_ran_it(viewer):
    import getpass
    from io import StringIO

    from django.core.management import call_command

    call_command("drf_create_token", "viewer", stdout=StringIO())
    call_command("drf_create_token", "viewer", "--revoke-all", stdout=StringIO())
    entries = AuditEntry.objects.order_by("id")
    assert [(e.username, e.event, e.content_type.model) for e in entries] == [
        (f"cli:{getpass.getuser()}", "create", "apitoken"),
        (f"cli:{getpass.getuser()}", "update", "apitoken"),
    ]
    created, revoked = entries
    assert created.changes["key_hash"] == ["(changed)", "(changed)"]
    assert list(revoked.changes) == ["revoked_at"] and revoked.changes["revoked_at"][0] is None


def test_a_table_s_export_and_silences_ended_in_the_admin_are_recorded(staff, operator):
    table = builders.table(builders.server("db4"))
    silence = builders.silence(comment="night")
    answer = token_client(operator).patch(
        f"/api/v1/tables/{table.pk}/", {"export_partitions": True}, format="json"
    )
    assert answer.status_code == 200
    session_of("staff").post(
        "/admin/alerts/silence/", {"action": "end_now", "_selected_action": [silence.pk]}
    )
    silence.refresh_from_db()
    recorded = {(e.username, e.content_type.model): e for e in AuditEntry.objects.all()}
    export = recorded["operator", "partitionedtable"]
    assert (export.object_repr, export.changes) == (
        "shop.orders",
        {"export_partitions": [False, True]},
    )
    ended = recorded["staff", "silence"].changes["ends_at"]
    assert ended[1] == silence.ends_at.replace(tzinfo=None).isoformat(sep=" ")
