"""Every admin action declares the permission it needs (issue 37, point 7): a staff user
who may only view a model runs none of its actions, whatever the action does. The test
walks every registered ModelAdmin, ours and the installed apps', so an action added
later without `@admin.action(permissions=[...])` fails here."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import Client, RequestFactory

pytestmark = pytest.mark.django_db


def every_action() -> list[tuple[type, str]]:
    """(model, action name) for each action of each registered ModelAdmin, the site-wide
    ones (Django's "Delete selected") included."""
    found = []
    for model, model_admin in admin.site._registry.items():
        for _function, name, _description in model_admin._get_base_actions():
            found.append((model, name))
    return found


ACTIONS = every_action()


def action_id(value) -> str:
    return value._meta.label if isinstance(value, type) else str(value)


def test_the_walk_finds_our_actions():
    """(So the walk below cannot pass by finding nothing.)"""
    names = {name for _, name in ACTIONS}
    assert {"send_test", "test_connection", "poll_now", "end_now", "revoke"} <= names
    assert {"delete_selected", "cleanup_expired_attempts"} <= names


@pytest.mark.parametrize(("model", "name"), ACTIONS, ids=action_id)
def test_every_action_declares_a_permission_its_admin_checks(model, name):
    model_admin = admin.site.get_model_admin(model)
    function = model_admin.get_action(name)[0]
    needed = getattr(function, "allowed_permissions", None)
    assert needed, f"{model._meta.label} action {name!r} declares no permission"
    assert "view" not in needed, f"{name!r}: viewing is not a reason to act"
    for permission in needed:
        assert hasattr(model_admin, f"has_{permission}_permission"), (name, permission)


@pytest.mark.parametrize(("model", "name"), ACTIONS, ids=action_id)
def test_a_view_only_staff_user_is_refused_every_action(model, name, django_user_model):
    meta = model._meta
    viewer = django_user_model.objects.create_user("looker", password="pw", is_staff=True)
    viewer.user_permissions.add(
        Permission.objects.get(
            content_type__app_label=meta.app_label, codename=f"view_{meta.model_name}"
        )
    )
    client = Client()
    client.force_login(viewer)
    changelist = f"/admin/{meta.app_label}/{meta.model_name}/"

    response = client.post(changelist, {"action": name, "_selected_action": ["1"]}, follow=True)

    assert response.status_code == 200, response.status_code  # the list: viewing is allowed
    said = [str(m) for m in response.context["messages"]]
    # Not dispatched: Django says so where the user has other actions, and shows a plain
    # list (no action box) where they have none.
    assert said in ([], ["No action selected."]), said
    assert 'name="action"' not in response.content.decode() or said
    request = RequestFactory().get(changelist)
    request.user = viewer
    assert name not in admin.site.get_model_admin(model).get_actions(request)


OURS = ["send_test", "test_connection", "poll_now", "end_now", "revoke", "cleanup_expired_attempts"]


@pytest.mark.parametrize(("model", "name"), [a for a in ACTIONS if a[1] in OURS], ids=action_id)
def test_a_superuser_is_offered_each_of_our_actions(model, name, admin_user):
    """(The refusal above is the permission's, not an action the admin never offers.)"""
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    assert name in admin.site.get_model_admin(model).get_actions(request)


@pytest.mark.parametrize("role", ["viewers", "operators", "admins"])
def test_sending_a_test_alert_in_the_admin_is_for_whoever_edits_alert_rules(
    role, django_user_model
):
    from django.contrib.auth.models import Group

    from partdash.alerts.models import Channel
    from tests.conftest import user_in

    user = user_in(django_user_model, f"in-{role}", role, is_staff=True)
    assert Group.objects.filter(name=role).exists()
    request = RequestFactory().get("/admin/alerts/channel/")
    request.user = user
    offered = admin.site.get_model_admin(Channel).get_actions(request)
    assert ("send_test" in offered) == (role != "viewers")
