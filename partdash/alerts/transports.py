"""Transports: the ways partdash sends an alert message, one class each, in one registry
(like healthchecks' `TRANSPORTS`). Email is one of them, beside the channels' kinds; every
message goes through the one outbox (`delivery`): grouped, claimed by a conditional
UPDATE, handed to its transport's `notify`, recorded.

A transport says how a failure should be treated by the error it raises:

- `TransientError`: this attempt failed, a later one may not (a refused connection, a
  timeout, HTTP 5xx, an SMTP 4xx): the outbox retries it after its backoff, up to
  PARTDASH_ALERT_MAX_ATTEMPTS attempts;
- `PermanentError`: no attempt at this message will ever succeed (a URL partdash refuses
  to send through, the service refusing the message itself, every recipient refused):
  the outbox gives it up at once.

Anything else a transport lets through counts as transient. The error's `cause` (the
exception met, or its one-line text) is what the outbox records: never a secret.

The built-in transports are declared in `channel_kinds` (loaded by the app's `ready`);
this module imports nothing of partdash, so that the models can read the registry.
"""

from typing import Any, ClassVar

EMAIL = "email"


class DeliveryError(Exception):
    """A message not delivered: `cause` is what was met (an exception, or one line), and
    the error reads as the cause does."""

    def __init__(self, cause: BaseException | str) -> None:
        super().__init__(str(cause))
        self.cause = cause


class TransientError(DeliveryError):
    """Retried after the outbox's backoff."""


class PermanentError(DeliveryError):
    """Given up at once: retrying cannot help."""


class Transport:
    """One way of sending. A subclass declares its `kind` (what `Channel.kind` stores, at
    most 20 characters) and `label`, and how a channel's URL names it: `schemes` (URL
    schemes) and `hosts` (the service's own webhook hosts, or `.suffix`es, which take
    precedence over the http(s) schemes). `notify` sends one outbox message and raises
    `TransientError` or `PermanentError`; `test` sends a test message where the kind
    can (its service's name back), and by default checks nothing."""

    kind: ClassVar[str]
    label: ClassVar[str]
    schemes: ClassVar[tuple[str, ...]] = ()
    hosts: ClassVar[tuple[str, ...]] = ()
    is_channel: ClassVar[bool] = True  # (email is not a Channel row)
    via_apprise: ClassVar[bool] = False  # its schemes are Apprise's (the sender's check)

    def __init__(self, channel: Any = None) -> None:
        self.channel = channel

    def notify(self, notification: Any) -> None:
        raise NotImplementedError

    def test(self, requested_by: str = "") -> str:
        """A test message; this one sends nothing and checks nothing."""
        return ""


TRANSPORTS: dict[str, type[Transport]] = {}


def register(transport: type[Transport]) -> type[Transport]:
    """Class decorator: add `transport` to the registry under its kind (once)."""
    if transport.kind in TRANSPORTS and TRANSPORTS[transport.kind] is not transport:
        raise ValueError(f"transport kind {transport.kind!r} is registered twice")
    TRANSPORTS[transport.kind] = transport
    return transport


def registered() -> list[type[Transport]]:
    return list(TRANSPORTS.values())


def transport_of(kind: str) -> type[Transport]:
    """The transport of `kind`; a kind no longer declared fails permanently."""
    try:
        return TRANSPORTS[kind]
    except KeyError:
        raise PermanentError(f"no transport for channel kind {kind!r}") from None


def transport_for(notification: Any) -> Transport:
    """The transport of an outbox message: its channel's kind, or email."""
    if notification.channel_id is None:
        return transport_of(EMAIL)()
    return transport_for_channel(notification.channel)


def transport_for_channel(channel: Any) -> Transport:
    return transport_of(channel.kind)(channel)


def channel_kinds() -> list[tuple[str, str]]:
    """The channels' kinds as (kind, label): `Channel.kind`'s choices."""
    return [(t.kind, t.label) for t in registered() if t.is_channel]


def by_host(host: str) -> type[Transport] | None:
    """The transport whose service's own webhook URLs have this host."""
    for transport in registered():
        for known in transport.hosts:
            if host == known or (known.startswith(".") and host.endswith(known)):
                return transport
    return None


def by_scheme(scheme: str) -> type[Transport] | None:
    for transport in registered():
        if scheme in transport.schemes:
            return transport
    return None
