"""The audit trail: who did what, when, from which address (docs/access.md, "Audit trail").

django-auditlog records the changes to the models each app registers here (`register`)
as `AuditEntry` rows: before and after per field, secrets as "(changed)". What is not a
change to one object (sign-ins and failed sign-ins, Poll now, test alerts, plan
downloads) is recorded by `record`, and a change to a many-to-many field (a user's
roles) by `register(..., m2m=...)`, once per request whatever the steps Django takes.

Only what a person or a token does is recorded: a request (`AuditMiddleware`) or a
command someone runs (`acting`) opens the context. What the workers do on their own
(polls, alert evaluation, a maintenance window's silences) happens outside one, and is
neither recorded nor slowed by a lookup of the row before it changes.
"""

import getpass
import os
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from functools import wraps

from auditlog.registry import auditlog
from auditlog.signals import pre_log
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models.signals import m2m_changed, pre_save
from django.utils import timezone

from partdash.accounts.backends import client_address
from partdash.accounts.models import AuditEntry

SECRET = "(changed)"
# Never worth a line in the trail: when a row was last touched.
ALWAYS_IGNORED = ("created_at", "updated_at")
EVENTS = {
    AuditEntry.Action.CREATE: "create",
    AuditEntry.Action.UPDATE: "update",
    AuditEntry.Action.DELETE: "delete",
    AuditEntry.Action.ACCESS: "access",
}
ModelKey = tuple[type[models.Model], object, str]


@dataclass
class Actor:
    """Who acts in this context: a user found when first asked (a request's user is known
    only once DRF has read its token), a name (a command's, or a failed sign-in's), the
    address; and the many-to-many fields changed so far, written when the context ends."""

    user: Callable[[], object]
    address: str | None = None
    username: str = ""
    m2m_before: dict[ModelKey, tuple[models.Model, list[str]]] = field(default_factory=dict)

    def account(self):
        user = self.user()
        return user if getattr(user, "is_authenticated", False) else None

    def name(self) -> str:
        account = self.account()
        return account.get_username() if account is not None else self.username


_acting: ContextVar[Actor | None] = ContextVar("partdash_audit_actor", default=None)


def changed(value: object) -> str:
    """AUDITLOG_MASK_CALLABLE: a secret field's before and after, whatever they were."""
    return SECRET


@contextmanager
def acting(user: Callable[[], object], *, address: str | None = None, username: str = ""):
    """Record what happens inside as done by `user` (a callable: asked when first needed)
    from `address`."""
    actor = Actor(user=user, address=address, username=username)
    token = _acting.set(actor)
    try:
        yield actor
    finally:
        try:
            _write_m2m(actor)
        finally:
            _acting.reset(token)


def from_command(handle):
    """A management command's `handle`, its changes recorded as made by `cli:OSUSER`
    (the account that ran it: a command has no partdash user)."""

    @wraps(handle)
    def audited(*args, **kwargs):
        with acting(lambda: None, username=f"cli:{_os_user()}"):
            return handle(*args, **kwargs)

    return audited


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container)
        return str(os.getuid())


class AuditMiddleware:
    """Every request is a context: its user (session or token, read when a change is
    recorded) and its address (the one lockouts count against)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        with acting(lambda: getattr(request, "user", None), address=client_address(request)):
            return self.get_response(request)


def register(
    model: type[models.Model],
    *,
    secrets: Iterable[str] = (),
    ignore: Iterable[str] = (),
    m2m: Iterable[str] = (),
) -> None:
    """Record every change people make to `model`: before and after of each field but
    `ignore`d ones, `secrets` as "(changed)", and the `m2m` fields' members."""
    auditlog.register(model, exclude_fields=[*ALWAYS_IGNORED, *ignore], mask_fields=list(secrets))
    for name in m2m:
        through = getattr(model, name).through
        m2m_changed.connect(
            _m2m_receiver(model, name), sender=through, weak=False, dispatch_uid=(model, name)
        )


def record(
    event: str,
    target: models.Model | type[models.Model],
    *,
    changes: dict | None = None,
    name: str = "",
    username: str = "",
) -> AuditEntry | None:
    """Record `event` on `target` (an object, or a model when there is no one object: a
    failed sign-in's unknown name, the fleet's plan), in a context only."""
    actor = _acting.get()
    if actor is None:
        return None
    is_object = isinstance(target, models.Model)
    return AuditEntry.objects.create(
        event=event,
        action=AuditEntry.Action.ACCESS,
        content_type=ContentType.objects.get_for_model(target),
        object_pk=str(target.pk) if is_object else "",
        object_id=target.pk if is_object and isinstance(target.pk, int) else None,
        object_repr=name or (str(target) if is_object else ""),
        changes=changes or {},
        username=username,
    )


def prune(now=None) -> int:
    """Delete the entries older than PARTDASH_AUDIT_KEEP_DAYS (the store's retention job)."""
    since = (now or timezone.now()) - timedelta(days=settings.PARTDASH_AUDIT_KEEP_DAYS)
    deleted, _ = AuditEntry.objects.filter(timestamp__lt=since).delete()
    return deleted


def _someone_acts(sender, **kwargs) -> bool:
    """auditlog's pre_log: outside a context (a worker) nothing is recorded."""
    return _acting.get() is not None


def _stamp(sender, instance: AuditEntry, **kwargs) -> None:
    """Who, from where, and what in words, on every entry before it is written."""
    instance.event = instance.event or EVENTS[instance.action]
    actor = _acting.get()
    if actor is None:
        return
    account = actor.account()
    if instance.actor_id is None and account is not None:
        instance.actor = account
        instance.actor_email = account.email or None
    instance.username = instance.username or actor.name()
    instance.remote_addr = instance.remote_addr or actor.address


def _m2m_receiver(model: type[models.Model], name: str):
    """Note a many-to-many field's members before its first change in the context; the
    entry (`[before, after]`) is written when the context ends, so `set()` (a remove,
    then an add) is one change."""

    def noted(sender, instance, action: str, reverse: bool, **kwargs) -> None:
        actor = _acting.get()
        if actor is None or reverse or not action.startswith("pre_"):
            return
        key = (model, instance.pk, name)
        if key not in actor.m2m_before:
            actor.m2m_before[key] = (instance, _members(instance, name))

    return noted


def _members(instance: models.Model, name: str) -> list[str]:
    return sorted(str(member) for member in getattr(instance, name).all())


def _write_m2m(actor: Actor) -> None:
    for (_, _, name), (instance, before) in actor.m2m_before.items():
        after = _members(instance, name)
        if after != before:
            AuditEntry.objects.log_create(
                instance, action=AuditEntry.Action.UPDATE, changes={name: [before, after]}
            )


def _signed_in(sender, request, user, **kwargs) -> None:
    record("sign_in", user, username=user.get_username())


def _sign_in_failed(sender, credentials, request=None, **kwargs) -> None:
    tried = str((credentials or {}).get("username", ""))[:150]
    record("sign_in_failed", get_user_model(), name=tried, username=tried)


def connect() -> None:
    """The receivers, and the accounts' own models (AccountsConfig.ready)."""
    from django.contrib.auth.models import Group

    from partdash.accounts.models import ApiToken

    pre_log.connect(_someone_acts, dispatch_uid="partdash.audit.someone_acts")
    pre_save.connect(_stamp, sender=AuditEntry, dispatch_uid="partdash.audit.stamp")
    user_logged_in.connect(_signed_in, dispatch_uid="partdash.audit.signed_in")
    user_login_failed.connect(_sign_in_failed, dispatch_uid="partdash.audit.sign_in_failed")
    register(
        get_user_model(),
        secrets=["password"],
        ignore=["last_login"],
        m2m=["groups", "user_permissions"],
    )
    register(Group, m2m=["permissions"])
    register(ApiToken, secrets=["key_hash"], ignore=["last_used_at"])
