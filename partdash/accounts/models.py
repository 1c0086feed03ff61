"""API tokens, stored hashed: the database holds a SHA-256 of each key, so a copy of it
(a backup, a read-only SQL account) hands out no key. The key is shown once, when made.
The audit trail's entries (`AuditEntry`)."""

import hashlib
import secrets

from auditlog.models import AbstractLogEntry
from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_PREFIX = "pd_"
# last_used_at is written at most this often per token, not on every request.
LAST_USED_RESOLUTION_SECONDS = 60


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> "ApiTokenQuerySet":
        return self.filter(revoked_at=None)


class ApiToken(models.Model):
    """One API key of one user (`Authorization: Token KEY`); several per user, each
    revocable. Only `prefix` (the key's first characters, to tell tokens apart) and the
    hash are kept."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, help_text="what this token is for")
    prefix = models.CharField(max_length=12, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["user", "-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(cls, user, name: str = "") -> tuple["ApiToken", str]:
        """A new token for `user`, and its key: the only time the key exists in clear."""
        token = cls(user=user, name=name)
        key = token.set_new_key()
        token.save()
        return token, key

    def set_new_key(self) -> str:
        key = KEY_PREFIX + secrets.token_urlsafe(30)
        self.prefix = key[:10]
        self.key_hash = key_hash(key)
        return key

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    def touch(self) -> None:
        now = timezone.now()
        last = self.last_used_at
        if last is None or (now - last).total_seconds() >= LAST_USED_RESOLUTION_SECONDS:
            ApiToken.objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now


class AuditEntry(AbstractLogEntry):
    """One thing a person or a token did: a change to a stored object (django-auditlog
    writes these, its `LogEntry` swapped for this model) or an event partdash records
    itself (`partdash.accounts.audit.record`: sign-ins, Poll now, test alerts, plan
    downloads). `username` keeps who it was after the account is gone; `event` says what
    happened in words (`create`, `update`, `delete`, `sign_in`, `poll_now`...). Written
    once, never changed; only the retention (PARTDASH_AUDIT_KEEP_DAYS) deletes entries."""

    username = models.CharField(max_length=150, blank=True, db_index=True)
    event = models.CharField(max_length=32, db_index=True)

    class Meta(AbstractLogEntry.Meta):
        verbose_name = "audit entry"
        verbose_name_plural = "audit trail"
        ordering = ["-timestamp", "-id"]

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ValueError("an audit entry is never changed")
        super().save(*args, **kwargs)
