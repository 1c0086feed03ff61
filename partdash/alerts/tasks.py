"""Celery tasks of alert delivery: thin, idempotent, carrying ids (see `delivery`)."""

import logging

from celery import shared_task

from partdash.alerts import acks, alertmanager, belated, channels, delivery, service, windows

log = logging.getLogger(__name__)


@shared_task(name="partdash.alerts.tasks.deliver_evaluation", ignore_result=True)
def deliver_evaluation(server_id: int, evaluation: str) -> int:
    """Queued on commit of an evaluation (or a reminder run): its emails, one per set of
    recipients, and its channels' messages. Returns how many were sent; failed ones are
    retried after their backoff, unless given up."""
    outcomes = delivery.deliver_evaluation(server_id, evaluation)
    for notification_id, outcome in outcomes:
        if outcome.retrying:
            deliver_notification.apply_async((notification_id,), countdown=outcome.retry_in)
    return sum(outcome.sent for _, outcome in outcomes)


@shared_task(name="partdash.alerts.tasks.deliver_notification", ignore_result=True)
def deliver_notification(notification_id: int) -> bool:
    """One attempt at one message, and the next one queued if it failed and is not given
    up. An attempt that finds it sent or claimed by another worker does nothing."""
    outcome = delivery.send_notification(notification_id)
    if outcome.retrying:
        deliver_notification.apply_async((notification_id,), countdown=outcome.retry_in)
    return outcome.sent


@shared_task(name="partdash.alerts.tasks.sweep_outbox", ignore_result=True)
def sweep_outbox() -> int:
    """Beat, every PARTDASH_ALERT_SWEEP_SECONDS: group what a killed worker left
    ungrouped, queue an attempt for each message whose lease has run out, announce the
    alerts that fired while there were no recipients, once there are (`belated`), and
    to each new channel the alerts firing when it was added (`channels.welcome`), and
    send alerts nobody acknowledged in time to their escalation channel (`acks`)."""
    due = delivery.sweep()
    for notification_id in due:
        deliver_notification.delay(notification_id)
    announce = [*belated.announce_belated(), *channels.welcome(), *acks.escalate()]
    for server_id, evaluation in announce:
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


@shared_task(name="partdash.alerts.tasks.push_to_alertmanager", ignore_result=True)
def push_to_alertmanager() -> int:
    """Beat, every PARTDASH_ALERTMANAGER_PUSH_SECONDS, and after an evaluation that
    changed something: every firing alert (and those resolved lately) to
    PARTDASH_ALERTMANAGER_URL. A failed push is logged and made again at the next."""
    if not alertmanager.enabled():
        return 0
    try:
        return alertmanager.push()
    except alertmanager.PushFailed as failed:
        log.warning("alerts not pushed: %s", failed)
        return 0


@shared_task(name="partdash.alerts.tasks.plan_maintenance_windows", ignore_result=True)
def plan_maintenance_windows() -> int:
    """Beat, every hour: each maintenance window's occurrences of the next days made
    silences (`windows.plan`). Returns how many it made."""
    return windows.plan_all()
