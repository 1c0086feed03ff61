"""`stale_polls` told without the worker: beat's own thread (`partdash.polling.watchdog`)
evaluates it and sends its emails and channels' messages itself, in beat's process, so
a worker that hangs or dies cannot silence the alert about its own silence.

The evaluation still queues its delivery for a worker, as every evaluation does: the
outbox's claims (`delivery`) let exactly one of the two send each message, and a send
that fails here is retried by the worker and the sweep, once there is one again.
"""

import logging

from partdash.alerts import delivery, service
from partdash.alerts.models import Transition

log = logging.getLogger(__name__)


def evaluate_and_send() -> int:
    """Evaluate `stale_polls` of every server, then send what the evaluations recorded.
    Returns how many messages this process sent."""
    sent = 0
    for evaluation in service.evaluate_stale_polls():
        server_id = (
            Transition.objects.filter(evaluation=evaluation)
            .values_list("server_id", flat=True)
            .first()
        )
        if server_id is None:
            continue
        outcomes = delivery.deliver_evaluation(server_id, evaluation)
        sent += sum(outcome.sent for _, outcome in outcomes)
    return sent
