"""A test alert: one email to everyone alert emails go to, or one message through a
channel, sent now, so an operator knows delivery works before an alert depends on it
(`manage.py sendtestalert [CHANNEL]`, the alerts page's button, `POST
/api/v1/alerts/test/`, `POST /api/v1/channels/{id}/test/`, the admin's channel action).

Sent from a web request, a test is limited per user (at once and per minute, counted in
Redis across web processes: `partdash.lib.user_limits`) and answered within a deadline
(PARTDASH_TEST_ALERT_SECONDS): the send runs in a thread of its own, so a slow target
holds that thread, not the web thread, and the user's slot until it ends."""

import math
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from typing import TypeVar

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import connections
from django.template.loader import render_to_string
from django.utils import timezone

from partdash.accounts import audit
from partdash.alerts import emails
from partdash.alerts.models import AlertRule, Channel
from partdash.alerts.overrides import recipient_list
from partdash.alerts.transports import transport_for_channel
from partdash.lib.user_limits import TooMany, UserLimit, claim, release

__all__ = ["TooMany", "send_test_alert", "send_test_alert_as", "send_channel_tests_as"]
T = TypeVar("T")

EMAIL = "email"
CHANNELS = (EMAIL,)  # the kinds of channel a test alert can go through
NO_RECIPIENTS = "no email recipients: set ALERT_EMAILS, or recipients on an alert rule"


MAX_CHANNELS_PER_TEST = 5
"""Channels one admin action may test, side by side, in one web request."""


class TestAlertRefused(Exception):
    """Nothing to send to (or an unknown channel): a one-line reason."""


class TestAlertLate(Exception):
    """No answer within the deadline: the send goes on in the background (up to the
    channel's or SMTP's own timeout) and may still arrive."""


def sending_limit() -> UserLimit:
    """Test alerts' limits, read from settings at each test."""
    # A send outlives the wait: a channel's process is killed at its timeout plus 15 s of
    # start-up (`channels.run_sender`), an email after a few SMTP steps of EMAIL_TIMEOUT.
    # The user's slot is held until then; a crashed request's claim lapses after it.
    outlives = max(settings.PARTDASH_ALERT_CHANNEL_TIMEOUT_SECONDS + 15, settings.EMAIL_TIMEOUT * 4)
    return UserLimit(
        kind="test-alert",
        things="test alerts",
        at_once=settings.PARTDASH_TEST_ALERT_PER_USER,
        per_minute=settings.PARTDASH_TEST_ALERT_PER_MINUTE,
        lapse=math.ceil(outlives) + 10,
        deadline=math.ceil(settings.PARTDASH_TEST_ALERT_SECONDS),
    )


def email_recipients() -> list[str]:
    """Everyone an alert email can go to: ALERT_EMAILS and the recipients of every
    enabled alert rule, lower-cased, each once."""
    addresses = set(settings.ALERT_EMAILS)
    for recipients in AlertRule.objects.filter(enabled=True).values_list("recipients", flat=True):
        addresses.update(recipient_list(recipients or ""))
    return sorted({address.strip().lower() for address in addresses if address.strip()})


def prepared_send(channel: str | None, requested_by: str, timeout: float | None = None):
    """The send of a test alert through `channel` (None, "" or `email`: email to
    `email_recipients()`; else a channel's name), to call later: it returns who it went
    to. Refused here (`TestAlertRefused`) when there is nobody to send to."""
    if channel not in (None, "", *CHANNELS):
        found = Channel.objects.filter(name=channel).first()
        if found is None:
            names = [EMAIL, *Channel.objects.values_list("name", flat=True)]
            raise TestAlertRefused(f"unknown channel {channel!r}: one of {', '.join(names)}")
        return partial(_through_channel, found, requested_by)
    recipients = email_recipients()
    if not recipients:
        raise TestAlertRefused(NO_RECIPIENTS)
    return partial(_by_email, recipients, requested_by, timeout)


def _through_channel(channel: Channel, requested_by: str) -> list[str]:
    return [f"channel {channel.name} ({_test_through(channel, requested_by)})"]


def _test_through(channel: Channel, requested_by: str) -> str:
    """The channel's transport's test message; returns the service's name."""
    return transport_for_channel(channel).test(requested_by)


def _by_email(recipients: list[str], requested_by: str, timeout: float | None) -> list[str]:
    with get_connection(fail_silently=False, timeout=timeout) as connection:
        connection.send_messages([test_message(recipients, requested_by)])
    return recipients


def send_test_alert(channel: str | None = None, requested_by: str = "") -> list[str]:
    """Send the test alert through `channel` now, with no limit (`manage.py
    sendtestalert`); returns who it went to. SMTP failures are raised as they come, a
    channel's as its transport's `transports.DeliveryError`."""
    audit.record("test_alert", Channel, name=channel or "email")
    return prepared_send(channel, requested_by)()


def send_test_alert_as(user, channel: str | None = None) -> list[str]:
    """`send_test_alert` for `user` in a web request: refused past the user's limits
    (`TooMany`), `TestAlertLate` past the deadline."""
    deadline = sending_limit().deadline
    audit.record("test_alert", Channel, name=channel or "email")
    send = prepared_send(
        channel, user.get_username(), timeout=min(settings.EMAIL_TIMEOUT, deadline)
    )
    (outcome,) = run_limited(user.pk, [send])
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def send_channel_tests_as(user, chosen: list[Channel]) -> list[str | BaseException]:
    """Test messages through `chosen` channels for `user` in a web request, side by side:
    each the service's name, or the exception it failed with (`DeliveryError`,
    `TestAlertLate`). `TooMany` past the user's limits (each channel counts in the
    minute)."""
    who = user.get_username()
    for channel in chosen:
        audit.record("test_alert", channel)
    return run_limited(user.pk, [partial(_test_through, c, who) for c in chosen])


def run_limited(user_id: int, sends: list[Callable[[], T]]) -> list[T | BaseException]:
    """Run `sends` side by side in threads of their own, in one of `user_id`'s slots,
    waiting for them up to the deadline; the slot is given back when the last one ends,
    which may be after this returns."""
    if not sends:
        return []
    limit = sending_limit()
    claimed = claim(limit, user_id, weight=len(sends))
    pool = ThreadPoolExecutor(max_workers=len(sends), thread_name_prefix="test-alert")
    futures = [pool.submit(_in_thread, send) for send in sends]
    pool.shutdown(wait=False)
    if claimed:
        _release_after(futures, partial(release, limit, user_id))
    done, _ = wait(futures, timeout=limit.deadline)
    late = TestAlertLate(f"no answer within {limit.deadline} s (it may still arrive)")
    return [(f.exception() or f.result()) if f in done else late for f in futures]


def _in_thread(send: Callable[[], T]) -> T:
    try:
        return send()
    finally:
        connections.close_all()  # this thread's own, if the send opened one


def _release_after(futures: list[Future], release_slot: Callable[[], None]) -> None:
    left = [len(futures)]
    lock = threading.Lock()

    def one_ended(_: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            release_slot()

    for future in futures:
        future.add_done_callback(one_ended)


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
