"""Celery tasks of alert delivery: thin, idempotent, carrying ids (see `delivery`)."""

import logging

from celery import shared_task

from partdash.alerts import belated, delivery, service

log = logging.getLogger(__name__)


@shared_task(name="partdash.alerts.tasks.deliver_evaluation", ignore_result=True)
def deliver_evaluation(server_id: int, evaluation: str) -> int:
    """Queued on commit of an evaluation (or a reminder run): its emails, one per set of
    recipients. Returns how many were sent; failed ones are retried after their backoff."""
    outcomes = delivery.deliver_evaluation(server_id, evaluation)
    for notification_id, outcome in outcomes:
        if outcome.failed:
            deliver_notification.apply_async((notification_id,), countdown=outcome.retry_in)
    return sum(outcome.sent for _, outcome in outcomes)


@shared_task(name="partdash.alerts.tasks.deliver_notification", ignore_result=True)
def deliver_notification(notification_id: int) -> bool:
    """One attempt at one email, and the next one queued if it failed. An attempt that
    finds the email sent or claimed by another worker does nothing."""
    outcome = delivery.send_notification(notification_id)
    if outcome.failed:
        deliver_notification.apply_async((notification_id,), countdown=outcome.retry_in)
    return outcome.sent


@shared_task(name="partdash.alerts.tasks.sweep_outbox", ignore_result=True)
def sweep_outbox() -> int:
    """Beat, every PARTDASH_ALERT_SWEEP_SECONDS: group what a killed worker left
    ungrouped, queue an attempt for each email whose lease has run out, and announce the
    alerts that fired while there were no recipients, once there are (`belated`)."""
    due = delivery.sweep()
    for notification_id in due:
        deliver_notification.delay(notification_id)
    for server_id, evaluation in belated.announce_belated():
        deliver_evaluation.delay(server_id, evaluation)
    return len(due)


@shared_task(name="partdash.alerts.tasks.send_reminders", ignore_result=True)
def send_reminders() -> int:
    """Beat: one digest per server of the alerts still firing after
    PARTDASH_ALERT_REPEAT_HOURS."""
    queued = delivery.queue_reminders()
    for server_id, evaluation in queued:
        deliver_evaluation.delay(server_id, evaluation)
    return len(queued)


@shared_task(name="partdash.alerts.tasks.evaluate_stale_polls", ignore_result=True)
def evaluate_stale_polls() -> int:
    """Beat, every PARTDASH_ALERT_STALE_CHECK_SECONDS: `stale_polls` of every server (no
    poll happens to evaluate it). Returns how many evaluations recorded transitions."""
    return len(service.evaluate_stale_polls())
