"""A Celery worker that stops at one step of alert delivery, for the crash tests to SIGKILL
it there: `celery -A partdash worker --include tests.alerts.crashing_worker`, with
PARTDASH_TEST_DELIVERY_PAUSE_AT naming the step. Each pool process wraps the function of
`partdash.alerts.delivery` at that step; there a task writes its pid to
PARTDASH_TEST_DELIVERY_PAUSE_FILE and sleeps. Production code holds no hook.

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


def pause() -> None:
    """Tell the test where this process is, then wait for its SIGKILL."""
    Path(os.environ["PARTDASH_TEST_DELIVERY_PAUSE_FILE"]).write_text(str(os.getpid()))
    time.sleep(3600)


def pause_before(run: Callable) -> Callable:
    @functools.wraps(run)
    def paused_first(*args, **kwargs):
        pause()
        return run(*args, **kwargs)

    return paused_first


def pause_after_won_claim(claim: Callable) -> Callable:
    @functools.wraps(claim)
    def claim_then_pause(notification_id: int):
        claimed_at = claim(notification_id)
        if claimed_at is not None:  # only a won claim stops; a lost one is NOT_CLAIMED
            pause()
        return claimed_at

    return claim_then_pause


# Each step: the function of `delivery` it is at, and how to wrap that function.
STEPS = {
    "grouping": ("deliver_evaluation", pause_before),
    "grouped": ("send_unsent", pause_before),
    "claimed": ("claim", pause_after_won_claim),
    "accepted": ("record_sent", pause_before),
}


@worker_process_init.connect
def stop_at_step(**kwargs) -> None:
    """In each pool process, once forked: wrap the step's function. `delivery` calls its
    own functions through its module globals, and `tasks` through `delivery.`, so both
    meet the wrapper."""
    step = os.environ.get("PARTDASH_TEST_DELIVERY_PAUSE_AT")
    if not step:
        return
    from partdash.alerts import delivery

    name, wrap = STEPS[step]
    setattr(delivery, name, wrap(getattr(delivery, name)))
