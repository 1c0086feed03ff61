"""Viewers read; only staff write."""

from rest_framework.permissions import SAFE_METHODS, BasePermission


def may_write(user) -> bool:
    """Whether `user` may change what partdash watches and how it alerts (servers, alert
    rules, silences): the API and the pages ask this one question."""
    return bool(user and user.is_authenticated and user.is_staff)


class StaffWritesViewersRead(BasePermission):
    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or may_write(user)
