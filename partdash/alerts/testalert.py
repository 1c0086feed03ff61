"""A test alert: one email to everyone alert emails go to, or one message through a
channel, sent now, so an operator knows delivery works before an alert depends on it
(`manage.py sendtestalert [CHANNEL]`, the alerts page's button, `POST
/api/v1/alerts/test/`, `POST /api/v1/channels/{id}/test/`)."""

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.template.loader import render_to_string
from django.utils import timezone

from partdash.alerts import channels, emails
from partdash.alerts.models import AlertRule, Channel
from partdash.alerts.overrides import recipient_list

EMAIL = "email"
CHANNELS = (EMAIL,)  # the kinds of channel a test alert can go through
NO_RECIPIENTS = "no email recipients: set ALERT_EMAILS, or recipients on an alert rule"


class TestAlertRefused(Exception):
    """Nothing to send to (or an unknown channel): a one-line reason."""


def email_recipients() -> list[str]:
    """Everyone an alert email can go to: ALERT_EMAILS and the recipients of every
    enabled alert rule, lower-cased, each once."""
    addresses = set(settings.ALERT_EMAILS)
    for recipients in AlertRule.objects.filter(enabled=True).values_list("recipients", flat=True):
        addresses.update(recipient_list(recipients or ""))
    return sorted({address.strip().lower() for address in addresses if address.strip()})


def send_test_alert(channel: str | None = None, requested_by: str = "") -> list[str]:
    """Send the test alert through `channel` (default: email, to `email_recipients()`; or
    a channel's name); returns who it went to. SMTP failures are raised as they come, a
    channel's as `channels.ChannelRefused`."""
    if channel not in (None, "", *CHANNELS):
        found = Channel.objects.filter(name=channel).first()
        if found is None:
            names = [EMAIL, *Channel.objects.values_list("name", flat=True)]
            raise TestAlertRefused(f"unknown channel {channel!r}: one of {', '.join(names)}")
        service = channels.send_test(found, requested_by)
        return [f"channel {found.name} ({service})"]
    recipients = email_recipients()
    if not recipients:
        raise TestAlertRefused(NO_RECIPIENTS)
    with get_connection(fail_silently=False) as connection:
        connection.send_messages([test_message(recipients, requested_by)])
    return recipients


def test_message(recipients: list[str], requested_by: str) -> EmailMultiAlternatives:
    context = {
        "requested_by": requested_by,
        "sent_at": timezone.now(),
        "recipients": recipients,
        "base_url": settings.PARTDASH_BASE_URL,
    }
    message = EmailMultiAlternatives(
        subject="[partdash] test alert",
        body=render_to_string("alerts/email/test.txt", context),
        to=recipients,
        headers={
            "Message-ID": emails.new_message_id(),
            "Auto-Submitted": "auto-generated",
            "X-Partdash-Test": "yes",
        },
    )
    message.attach_alternative(render_to_string("alerts/email/test.html", context), "text/html")
    return message
