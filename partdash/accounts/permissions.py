"""Who may do what: the one place that decides, for the API, the pages and the admin.

Roles are Django groups holding model permissions (partdash.accounts, migration
0002_roles): `viewers` read; `operators` also add, change and delete servers, alert rules
and silences, and hold `servers.poll_server` (Poll now, Test connection); `admins` also
manage users and API tokens. Reading needs a login only: a logged-in user in no group is
a viewer. Writing needs the model permission, whatever `is_staff` says (staff only opens
the admin's door; what a user does inside is still their permissions).
"""

from rest_framework.permissions import SAFE_METHODS, BasePermission

# A method's model permission (DjangoModelPermissions' verbs).
VERBS = {"POST": "add", "PUT": "change", "PATCH": "change", "DELETE": "delete"}
POLL = "servers.poll_server"
CHANGE_SERVER = "servers.change_server"
ADD_SILENCE = "alerts.add_silence"
SEND_TEST_ALERT = "alerts.change_alertrule"  # whoever edits the rules may test them
# Actions that are not a model write, by name, wherever they are routed.
ACKNOWLEDGE = "alerts.add_silence"  # whoever may silence an alert may acknowledge it
ACTION_PERMISSIONS = {"poll": POLL, "send_test": SEND_TEST_ALERT, "ack": ACKNOWLEDGE}


def can(user, permission: str) -> bool:
    """Whether `user` (logged in, active) holds `permission` ("app.codename"), directly,
    through a group, or as a superuser."""
    return bool(user and user.is_authenticated and user.is_active and user.has_perm(permission))


def can_read(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def may_write(user, model=None) -> bool:
    """Whether `user` may change `model` (default: servers): for templates and pages that
    offer a write."""
    if model is None:
        return can(user, CHANGE_SERVER)  # named, not imported: accounts sits below servers
    meta = model._meta
    return can(user, f"{meta.app_label}.change_{meta.model_name}")


def required_permission(request, view) -> str | None:
    """The permission an unsafe request needs, or None where nothing grants it (a
    read-only endpoint)."""
    return method_permission(request.method, view)


def method_permission(method: str, view) -> str | None:
    """The permission `method` needs on `view` (None: a read, or nothing grants it)."""
    action = getattr(view, "action", None)
    if action in ACTION_PERMISSIONS:
        return ACTION_PERMISSIONS[action]
    queryset = getattr(view, "queryset", None)
    if queryset is None or method not in VERBS:
        return None
    meta = queryset.model._meta
    return f"{meta.app_label}.{VERBS[method]}_{meta.model_name}"


# The role that first holds each app's write permissions (accounts migration 0002_roles):
# operators write servers, polls, alert rules, silences and per-partition export; admins
# (staff) manage users, groups and tokens.
WRITING_ROLE = {"servers": "operators", "alerts": "operators", "metrics": "operators"}


def who_may(method: str, view) -> str:
    """Who may send `method` to `view`, as the OpenAPI document says it."""
    reading = getattr(view, "read_permission", None)
    if method in SAFE_METHODS and reading:
        return f"Who may: admins, who hold `{reading}`; viewers and operators get 403."
    if method in SAFE_METHODS:
        return "Who may: every logged-in user (viewers and up) reads."
    permission = method_permission(method, view)
    if permission is None:
        return "Who may: no one; the endpoint is read-only."
    role = WRITING_ROLE.get(permission.split(".")[0], "admins (staff)")
    return f"Who may: {role} and admins, who hold `{permission}`; viewers get 403."


class RolePermission(BasePermission):
    """Anonymous: nothing. Logged in: read, unless the view names a `read_permission`
    (the audit trail: admins). Writes: the model permission of the view's queryset for
    the method (`ACTION_PERMISSIONS` for named actions)."""

    def has_permission(self, request, view) -> bool:
        if not can_read(request.user):
            return False
        reading = getattr(view, "read_permission", None)  # what only some may read
        if reading and not can(request.user, reading):
            return False
        if request.method in SAFE_METHODS or request.method not in view.allowed_methods:
            return True  # a read, or a method no one may use here: DRF answers 405
        needed = required_permission(request, view)
        return needed is not None and can(request.user, needed)
