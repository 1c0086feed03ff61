"""A Celery worker that stops at steps of alert delivery, for the crash tests to SIGKILL
it there: `celery -A partdash worker --include tests.alerts.crashing_worker`, with
PARTDASH_TEST_DELIVERY_PAUSE_AT naming the steps (comma-separated). Each pool process
wraps the function of `partdash.alerts.delivery` at each step; a task delivering for the
server named after the step writes its pid to PARTDASH_TEST_DELIVERY_PAUSE_DIR/<step>
there and sleeps. One worker (a pool process per step) thus stops at every step at once,
for four servers, and one kill tests them all. Production code holds no hook.

- grouping: `deliver_evaluation` called, nothing grouped yet;
- grouped: the evaluation's notifications made, before `send_unsent` claims any;
- claimed: `claim` won (its UPDATE committed), before the email is built and sent;
- accepted: the SMTP server accepted the email, before `record_sent` writes `sent_at`.
"""

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

from celery.signals import worker_process_init


def pause(step: str) -> None:
    """Tell the test where this process is, then wait for its SIGKILL."""
    Path(os.environ["PARTDASH_TEST_DELIVERY_PAUSE_DIR"], step).write_text(str(os.getpid()))
    time.sleep(3600)


def server_of_evaluation(server_id: int, *args) -> str:
    from partdash.servers.models import Server

    return Server.objects.get(pk=server_id).name


def server_of_notification_id(notification_id: int) -> str:
    from partdash.alerts.models import Notification

    return Notification.objects.get(pk=notification_id).server.name


def server_of_notification(notification, *args) -> str:
    return notification.server.name


def pause_before(run: Callable, step: str, server_of: Callable[..., str]) -> Callable:
    @functools.wraps(run)
    def paused_first(*args, **kwargs):
        if server_of(*args) == step:
            pause(step)
        return run(*args, **kwargs)

    return paused_first


def pause_after_won_claim(claim: Callable, step: str, server_of: Callable[..., str]) -> Callable:
    @functools.wraps(claim)
    def claim_then_pause(notification_id: int):
        claimed_at = claim(notification_id)
        # Only a won claim stops; a lost one is NOT_CLAIMED.
        if claimed_at is not None and server_of(notification_id) == step:
            pause(step)
        return claimed_at

    return claim_then_pause


# Each step: the function of `delivery` it is at, how to wrap that function, and how to
# tell the server from its arguments.
STEPS = {
    "grouping": ("deliver_evaluation", pause_before, server_of_evaluation),
    "grouped": ("send_unsent", pause_before, server_of_evaluation),
    "claimed": ("claim", pause_after_won_claim, server_of_notification_id),
    "accepted": ("record_sent", pause_before, server_of_notification),
}


@worker_process_init.connect
def stop_at_steps(**kwargs) -> None:
    """In each pool process, once forked: wrap each step's function. `delivery` calls its
    own functions through its module globals, and `tasks` through `delivery.`, so both
    meet the wrappers."""
    steps = [s for s in os.environ.get("PARTDASH_TEST_DELIVERY_PAUSE_AT", "").split(",") if s]
    from partdash.alerts import delivery

    for step in steps:
        name, wrap, server_of = STEPS[step]
        setattr(delivery, name, wrap(getattr(delivery, name), step, server_of))
