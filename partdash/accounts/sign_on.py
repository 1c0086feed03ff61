"""Single sign-on, LDAP (`directory`) and OpenID Connect (`oidc`) alike: the directory's
or the provider's groups decide the partdash role at every sign-in (docs/access.md,
"Single sign-on"); a person outside the three role groups cannot sign in."""

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import Group

# The partdash roles, most powerful first: a person in several groups gets the first.
ROLES = ("admins", "operators", "viewers")


def role_of(groups: Iterable[str], role_groups: dict[str, str]) -> str | None:
    """The role whose group (`role_groups`: role -> group) is among `groups` (compared
    without case), the most powerful first; None outside them all."""
    held = {group.casefold() for group in groups}
    for role in ROLES:
        wanted = role_groups.get(role, "")
        if wanted and wanted.casefold() in held:
            return role
    return None


def give_role(user, role: str) -> None:
    """`user` holds `role` and no other partdash role (their other groups stay); staff
    status goes with the admins' role. Recorded in the audit trail as one change."""
    others = Group.objects.filter(name__in=ROLES).exclude(name=role)
    user.groups.remove(*others)
    user.groups.add(Group.objects.get(name=role))
    if user.is_staff != (role == "admins"):
        user.is_staff = role == "admins"
        user.save(update_fields=["is_staff"])


def is_local(username: str) -> bool:
    """Whether `username` is a local account (it has a password): single sign-on leaves it
    alone, so a directory or provider entry of the same name cannot take it over."""
    accounts = get_user_model().objects.filter(username=username)
    return accounts.exclude(password__startswith=UNUSABLE_PASSWORD_PREFIX).exists()
