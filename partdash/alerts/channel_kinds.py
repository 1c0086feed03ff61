"""The built-in transports (`transports`), one class per kind: email over SMTP, the chat
and pager services Apprise reaches, and partdash's own JSON webhook. docs/development.md,
"Add a channel", says how to add one.

A channel's message goes through its own process (`channels.run_sender`), its URL
checked first (`channels.admissible`); a refusal is permanent when no retry can change
it (`channels.ChannelRefused.permanent`), else transient.
"""

import smtplib
from typing import Any

from django.core.mail import get_connection
from django.utils import timezone

from partdash.alerts import channels, emails
from partdash.alerts.models import Channel, ChannelKind, Notification
from partdash.alerts.transports import (
    EMAIL,
    PermanentError,
    TransientError,
    Transport,
    register,
)
from partdash.lib.secrets import SecretError

TEST_SUBJECT = "[partdash] test alert"


@register
class Email(Transport):
    """One email per message, to its set of recipients, over SMTP (Django's EMAIL_*
    settings). Every recipient refused, or the message refused with a 5xx, is permanent;
    the rest (connection, TLS, authentication, 4xx) transient. Its test alert goes to
    every recipient (`testalert`): this test checks nothing."""

    kind = EMAIL
    label = "Email"
    is_channel = False

    def notify(self, notification: Notification) -> None:
        message = emails.build_message(notification)
        try:
            with get_connection(fail_silently=False) as connection:
                connection.send_messages([message])
        except smtplib.SMTPRecipientsRefused as refused:
            raise PermanentError(refused) from refused
        except smtplib.SMTPDataError as refused:
            error = PermanentError if 500 <= refused.smtp_code < 600 else TransientError
            raise error(refused) from refused
        except Exception as error:  # SMTP, network, TLS: tried again
            raise TransientError(error) from error


class ChannelTransport(Transport):
    """A channel's message through the sender process: the email's subject as title,
    `channels.body_of` as text, and the JSON `document` where the kind posts one."""

    channel: Channel

    def notify(self, notification: Notification) -> None:
        lines = emails.lines_of(notification)
        self.send(
            title=notification.subject,
            body=channels.body_of(notification, lines),
            failure=any(line.state == "FIRING" for line in lines),
            document=self.document(notification, lines),
        )

    def document(self, notification: Notification, lines: list[emails.Line]) -> dict | None:
        return None

    def test(self, requested_by: str = "") -> str:
        """Send a test message now; returns the service's name."""
        return self.send(
            title=TEST_SUBJECT,
            body=test_body(requested_by),
            failure=False,
            document=test_document(self.channel, requested_by),
        )

    def send(self, **message: Any) -> str:
        try:
            url = self.channel.url()
        except SecretError as error:  # (a key may come back)
            raise TransientError(error) from None
        try:
            channels.admissible(url)  # (one stored before the rules it breaks never sends)
            return channels.run_sender({"action": "send", "url": url, "kind": self.kind, **message})
        except channels.ChannelRefused as refused:
            raise (PermanentError if refused.permanent else TransientError)(refused) from None


def test_body(requested_by: str) -> str:
    who = f" by {requested_by}" if requested_by else ""
    return (
        f"A test alert from partdash, sent{who} at {emails.when(timezone.now())}: "
        f"alerts of this channel's rules reach here.\n  {emails.link('/alerts/')}"
    )


def test_document(channel: Channel, requested_by: str) -> dict:
    return {
        "version": channels.DOCUMENT_VERSION,
        "source": "partdash",
        "test": True,
        "subject": TEST_SUBJECT,
        "channel": channel.name,
        "requested_by": requested_by,
        "alerts_url": emails.link("/alerts/"),
        "transitions": [],
    }


@register
class Webhook(ChannelTransport):
    """partdash's own JSON webhook: any http(s) URL no other kind claims; the document
    is docs/alerts.md's "Webhook" (`channels.document_of`). The worked example of
    docs/development.md's "Add a channel"."""

    kind = ChannelKind.WEBHOOK.value
    label = ChannelKind.WEBHOOK.label
    schemes = ("http", "https")

    def document(self, notification: Notification, lines: list[emails.Line]) -> dict | None:
        return channels.document_of(notification, lines)


@register
class Apprise(ChannelTransport):
    """Any other Apprise URL (kept for channels stored as such; no URL is given it
    now)."""

    kind = ChannelKind.APPRISE.value
    label = ChannelKind.APPRISE.label
    via_apprise = True


def apprise_service(
    kind: str, label: str, schemes: tuple[str, ...], hosts: tuple[str, ...] = ()
) -> type[Transport]:
    """Register a service Apprise sends to: its kind, named by the schemes the docs list
    and the hosts of the service's own webhook URLs that Apprise takes as they are."""
    name = "".join(part.title() for part in kind.split("_"))
    fields = {"kind": kind, "label": label, "schemes": schemes, "hosts": hosts}
    return register(type(name, (Apprise,), {**fields, "__doc__": f"{label}, through Apprise."}))


K = ChannelKind
apprise_service(K.SLACK.value, K.SLACK.label, ("slack",), ("hooks.slack.com",))
apprise_service(
    K.MSTEAMS.value,
    K.MSTEAMS.label,
    ("msteams", "workflow", "workflows"),
    (".webhook.office.com", ".logic.azure.com"),
)
apprise_service(K.PAGERDUTY.value, K.PAGERDUTY.label, ("pagerduty",))
apprise_service(K.OPSGENIE.value, K.OPSGENIE.label, ("opsgenie",))
apprise_service(K.TELEGRAM.value, K.TELEGRAM.label, ("tgram",), ("api.telegram.org",))
apprise_service(K.DISCORD.value, K.DISCORD.label, ("discord",), ("discord.com", "discordapp.com"))
apprise_service(K.MATRIX.value, K.MATRIX.label, ("matrix", "matrixs"))
apprise_service(K.NTFY.value, K.NTFY.label, ("ntfy", "ntfys"), ("ntfy.sh",))
