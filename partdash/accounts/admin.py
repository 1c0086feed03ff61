"""API tokens in the admin: admins see and revoke everyone's; a new token's key is shown
once, in the message after saving. Users: Django's list, with no filter on the password.
The audit trail: read, never added to, changed or deleted."""

from auditlog.admin import LogEntryAdmin
from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin, messages
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import get_user_model

from partdash.accounts.models import ApiToken, AuditEntry
from partdash.lib.admin_lookups import SecretLookupsRefused


@admin.register(ApiToken)
class ApiTokenAdmin(SecretLookupsRefused):
    list_display = ["prefix", "name", "user", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        # A token's owner is fixed once it exists.
        return [*self.readonly_fields, "user"] if obj else self.readonly_fields

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        if change:
            obj.save()
            return
        key = obj.set_new_key()
        obj.save()
        self.message_user(
            request,
            f"Token for {obj.user}: {key} (shown once; only its hash is stored).",
            messages.WARNING,
        )

    @admin.action(description="Revoke", permissions=["change"])
    def revoke(self, request, queryset) -> None:
        tokens = list(queryset.filter(revoked_at=None))
        for token in tokens:  # one by one, each in the audit trail
            token.revoke()
        self.message_user(request, f"Revoked {len(tokens)} tokens.")


# Django's own user list, less filters on the password hash.
admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class UserAdmin(SecretLookupsRefused, auth_admin.UserAdmin):
    pass


# django-axes' lockouts, less an action anyone who may see them could run: its clean-up
# deletes, so it needs the delete permission (as Django's own "Delete selected" does).
admin.site.unregister(AccessAttempt)


@admin.register(AccessAttempt)
class LockoutAdmin(AccessAttemptAdmin):
    @admin.action(description="Clean up expired attempts", permissions=["delete"])
    def cleanup_expired_attempts(self, request, queryset):
        return super().cleanup_expired_attempts(request, queryset)


# django-auditlog's list of entries, on partdash's model: who, when, from where, what
# changed; for admins (accounts.view_auditentry), and deleted by no one but the retention.
admin.site.unregister(AuditEntry)


@admin.register(AuditEntry)
class AuditEntryAdmin(SecretLookupsRefused, LogEntryAdmin):
    list_display = ["created", "username", "event", "resource_url", "msg_short", "remote_addr"]
    list_filter = ["event", *LogEntryAdmin.list_filter]
    search_fields = ["username", "object_repr", "event"]
    readonly_fields = [*LogEntryAdmin.readonly_fields, "username", "event", "remote_addr"]
    fieldsets = [
        (None, {"fields": ["created", "username", "user_url", "remote_addr", "resource_url"]}),
        ("Changes", {"fields": ["event", "msg"]}),
    ]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
