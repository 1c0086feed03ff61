"""Delivery of alert messages from the outbox (Transition rows), like healthchecks'
sendalerts: every step is a conditional UPDATE (or a unique INSERT) whose row count says
who won. Emails and channels' messages take the one path; only what sends a message
differs, its transport (`transports`).

1. Grouping (`group_evaluation`): an evaluation's unsilenced transitions become one
   Notification per distinct set of email recipients, each set taken by one UPDATE ...
   WHERE notification IS NULL; and one per channel that receives any of them, taken by
   its INSERT (unique per channel and evaluation, `channels`). Two workers never split
   or share one.
2. Claiming: a worker takes a notification with an UPDATE that must change one row
   (not sent, not given up, attempts left, and unclaimed or its lease run out).
3. Sending through the message's transport, then recording `sent_at`. A worker that
   dies before the SMTP server (or the channel's service) accepts leaves the
   notification claimed: once the lease ends, the sweeper sends it. One that dies after
   it accepted and before `sent_at` is written causes the one possible duplicate, with
   the same Message-ID (fixed when the notification was made).

Every claim counts an attempt (`attempts`). A failed one is recorded (`last_error`) and,
by the class of its error: a transient one moves the lease so that it ends when the next
attempt is due (backoff), nothing competing for the notification meanwhile, and after
PARTDASH_ALERT_MAX_ATTEMPTS it is given up; a permanent one (`transports.PermanentError`)
is given up at once (`given_up_at`).
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import uuid4

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from partdash.alerts import channels, emails
from partdash.alerts.models import Alert, Notification, Transition
from partdash.alerts.silences import silenced_now
from partdash.alerts.transports import DeliveryError, PermanentError, transport_for

log = logging.getLogger(__name__)

NO_RECIPIENTS = "not sent: no recipients (set ALERT_EMAILS, or recipients on the rule)"
MAX_BACKOFF = timedelta(hours=1)


# --- the outbox ---------------------------------------------------------------------------


def recipient_set(raw: str) -> str:
    """A transition's recipients as one canonical string: "" stands for ALERT_EMAILS;
    addresses lower-cased, deduplicated and sorted, so the same people written two ways
    get one email."""
    addresses = raw.split(",") if raw.strip() else settings.ALERT_EMAILS
    return ",".join(sorted({a.strip().lower() for a in addresses if a.strip()}))


def waiting(server_id: int | None = None, evaluation: str | None = None) -> QuerySet:
    """Transitions to email that no notification holds yet (silenced ones never are, nor
    a channel's own announcements)."""
    query = Transition.objects.filter(
        notification=None, silenced=False, only_channel=None, only_channel_name=""
    )
    if server_id is not None:
        query = query.filter(server_id=server_id)
    if evaluation is not None:
        query = query.filter(evaluation=evaluation)
    return query


def group_evaluation(server_id: int, evaluation: str) -> list[Notification]:
    """Group the evaluation's transitions into messages: its emails, then its channels'
    messages; returns the notifications this call made."""
    return [*group_emails(server_id, evaluation), *channels.group_evaluation(server_id, evaluation)]


def group_emails(server_id: int, evaluation: str) -> list[Notification]:
    """Group the evaluation's waiting transitions into one email per set of recipients;
    returns the notifications this call made."""
    raw_sets = set(waiting(server_id, evaluation).values_list("recipients", flat=True))
    spellings: dict[str, list[str]] = {}
    for raw in raw_sets:
        spellings.setdefault(recipient_set(raw), []).append(raw)
    made = [_take(server_id, evaluation, rs, raws) for rs, raws in sorted(spellings.items())]
    return [notification for notification in made if notification is not None]


def _take(server_id: int, evaluation: str, recipients: str, raws: list[str]):
    with transaction.atomic():
        notification = Notification.objects.create(
            server_id=server_id,
            evaluation=evaluation,
            message_id=emails.new_message_id(),
            recipients=recipients,
            last_error="" if recipients else NO_RECIPIENTS,
        )
        taken = waiting(server_id, evaluation).filter(recipients__in=raws)
        if not taken.update(notification=notification):
            notification.delete()  # another worker grouped them first
            return None
        notification.subject = emails.subject_of(
            notification.server.name, emails.lines_of(notification)
        )
        notification.save(update_fields=["subject"])
    return notification


def lease() -> timedelta:
    return timedelta(seconds=settings.PARTDASH_ALERT_CLAIM_LEASE_SECONDS)


def deliverable(now: datetime) -> QuerySet:
    """Notifications a worker may claim at `now`."""
    return (
        Notification.objects.filter(sent_at=None, given_up_at=None)
        .filter(attempts__lt=settings.PARTDASH_ALERT_MAX_ATTEMPTS)
        .exclude(recipients="", channel=None)
        .filter(Q(claimed_at=None) | Q(claimed_at__lt=now - lease()))
    )


def claim(notification_id: int) -> datetime | None:
    """Take the notification for one attempt; returns the claim time, or None when it is
    sent, given up, or held by another worker."""
    now = timezone.now()
    won = (
        deliverable(now)
        .filter(pk=notification_id)
        .update(claimed_at=now, attempts=F("attempts") + 1)
    )
    return now if won == 1 else None


# --- sending ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    sent: bool = False
    failed: bool = False
    retry_in: float = 0.0  # seconds until the next attempt is due, when failed
    given_up: bool = False  # failed, and no attempt is due

    @property
    def retrying(self) -> bool:
        return self.failed and not self.given_up


NOT_CLAIMED = Outcome()


def send_notification(notification_id: int) -> Outcome:
    """Claim, send and record one notification."""
    claimed_at = claim(notification_id)
    if claimed_at is None:
        return NOT_CLAIMED
    notification = Notification.objects.select_related("server", "channel").get(pk=notification_id)
    try:
        transport_for(notification).notify(notification)
    except PermanentError as error:
        return record_failure(notification, claimed_at, error.cause, permanent=True)
    except DeliveryError as error:
        return record_failure(notification, claimed_at, error.cause)
    except Exception as error:  # templates, the database: recorded and retried
        return record_failure(notification, claimed_at, error)
    record_sent(notification)
    return Outcome(sent=True)


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure: doubling from PARTDASH_ALERT_RETRY_SECONDS."""
    seconds = settings.PARTDASH_ALERT_RETRY_SECONDS * 2 ** min(max(attempts - 1, 0), 20)
    return min(timedelta(seconds=seconds), MAX_BACKOFF)


def one_line(error: BaseException | str) -> str:
    if isinstance(error, str):
        return " ".join(error.split())[:1000] or "no detail"
    text = " ".join(str(error).split()) or "no detail"
    return f"{type(error).__name__}: {text}"[:1000]


def record_failure(
    notification: Notification,
    claimed_at: datetime,
    error: BaseException | str,
    permanent: bool = False,
) -> Outcome:
    """Record a failed attempt: retried after its backoff, or given up (a permanent
    error, or the last attempt)."""
    attempts = notification.attempts  # this one included: counted when it was claimed
    wait = backoff(attempts)
    now = timezone.now()
    last = f"{now:%Y-%m-%d %H:%M:%S} UTC, attempt {attempts}: {one_line(error)}"
    given_up = permanent or attempts >= settings.PARTDASH_ALERT_MAX_ATTEMPTS
    if given_up:
        last = f"gave up after {attempts} attempt{'' if attempts == 1 else 's'}; {last}"
    # The lease now ends when the next attempt is due.
    Notification.objects.filter(pk=notification.pk, sent_at=None).update(
        last_error=last, claimed_at=now + wait - lease(), given_up_at=now if given_up else None
    )
    log.warning("alert %s to %s failed: %s", _what(notification), _to(notification), last)
    return Outcome(failed=True, retry_in=wait.total_seconds(), given_up=given_up)


def record_sent(notification: Notification) -> None:
    """Sent: the notification, and the firing of its alerts as announced. `last_error`
    stays, telling what an earlier attempt met."""
    now = timezone.now()
    with transaction.atomic():
        Notification.objects.filter(pk=notification.pk).update(sent_at=now)
        held = notification.carried if notification.channel_id else notification.transitions
        announced = held.filter(kind=Transition.Kind.FIRING).values("alert_id")
        Alert.objects.filter(pk__in=announced, notified_at=None).update(notified_at=now)
    log.info("alert %s sent to %s", _what(notification), _to(notification))


def _what(notification: Notification) -> str:
    return f"{'message' if notification.channel_id else 'email'} {notification.pk}"


def _to(notification: Notification) -> str:
    if notification.channel_id is not None:
        return f"channel {notification.channel.name!r}"  # (never its URL)
    return notification.recipients


def deliver_evaluation(server_id: int, evaluation: str) -> list[tuple[int, Outcome]]:
    """Group the evaluation's transitions (emails, then channels), then send each of its
    unsent notifications."""
    group_evaluation(server_id, evaluation)
    return send_unsent(server_id, evaluation)


def send_unsent(server_id: int, evaluation: str) -> list[tuple[int, Outcome]]:
    """Attempt each of the evaluation's notifications not sent yet that has recipients."""
    pending = Notification.objects.filter(
        server_id=server_id, evaluation=evaluation, sent_at=None
    ).exclude(recipients="", channel=None)
    ids = pending.order_by("pk").values_list("pk", flat=True)
    return [(pk, send_notification(pk)) for pk in ids]


# --- the sweeper --------------------------------------------------------------------------


def sweep() -> list[int]:
    """What a killed or absent worker left behind, longer than a lease ago: transitions
    it did not group (grouped now), and notifications it did not send. Returns the
    notifications to attempt."""
    now = timezone.now()
    stale = now - lease()
    emails_left = waiting().filter(created_at__lt=stale).values_list("server_id", "evaluation")
    leftovers = sorted({*emails_left.distinct(), *channels.leftovers(now)})
    made = [
        n.pk
        for server_id, evaluation in leftovers
        for n in group_evaluation(server_id, evaluation)
        if n.recipients or n.channel_id  # (an email to nobody is not attempted)
    ]
    # An unclaimed one younger than a lease is its evaluation's task's to send.
    left = deliverable(now).filter(Q(claimed_at__isnull=False) | Q(created_at__lt=stale))
    return sorted({*made, *left.values_list("pk", flat=True)})


# --- reminders ----------------------------------------------------------------------------


def due_reminders(now: datetime) -> QuerySet:
    """Firing alerts announced more than PARTDASH_ALERT_REPEAT_HOURS ago, and not
    reminded of since, that no silence holds and nobody acknowledged."""
    cutoff = now - timedelta(hours=settings.PARTDASH_ALERT_REPEAT_HOURS)
    return (
        Alert.objects.filter(state=Alert.State.FIRING, notified_at__lt=cutoff, acknowledged_at=None)
        .filter(Q(reminded_at=None) | Q(reminded_at__lt=cutoff))
        .annotate(is_silenced=silenced_now(now))
        .filter(is_silenced=False)
    )


def queue_reminders() -> list[tuple[int, str]]:
    """One reminder evaluation per server with alerts due: a Transition (kind reminder)
    for each, the alert's `reminded_at` moved in the same transaction. Returns the
    (server, evaluation) pairs to deliver."""
    now = timezone.now()
    by_server: dict[int, list[Alert]] = {}
    for alert in due_reminders(now).order_by("server_id", "pk"):
        by_server.setdefault(alert.server_id, []).append(alert)
    queued = []
    for server_id, alerts in by_server.items():
        evaluation = f"reminder-{uuid4().hex}"
        with transaction.atomic():
            # Each alert is reminded of by the run whose UPDATE moved its reminded_at.
            taken = [alert for alert in alerts if _take_reminder(alert, now)]
            Transition.objects.bulk_create(reminder(alert, evaluation, now) for alert in taken)
        if taken:
            queued.append((server_id, evaluation))
    return queued


def _take_reminder(alert: Alert, now: datetime) -> bool:
    return due_reminders(now).filter(pk=alert.pk).update(reminded_at=now) == 1


def reminder(alert: Alert, evaluation: str, now: datetime) -> Transition:
    """A reminder goes to whom the firing went (the recipients resolved when it fired)."""
    fired = alert.transitions.filter(kind=Transition.Kind.FIRING).order_by("-created_at").first()
    return Transition(
        alert=alert,
        server_id=alert.server_id,
        kind=Transition.Kind.REMINDER,
        evaluation=evaluation,
        recipients=fired.recipients if fired else "",
        value=alert.value,
        threshold=alert.threshold,
        message=alert.message,
        created_at=now,
    )
