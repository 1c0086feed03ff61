"""The poll's last stage: evaluate the alert rules against what the poll stored.

The poll service (`partdash.collector.service`) calls these inside the poll's
transaction, after the analysis, so a poll's figures, findings and alert transitions
are stored all or nothing.
"""

from partdash.metrics.models import ServerSnapshot
from partdash.servers.models import Server


def evaluate_after_poll(server: Server, snapshot: ServerSnapshot) -> None:
    """Evaluate the server's rules on the health this poll stored (the snapshot's and
    its tables'), and record the transitions. Placeholder: the alert evaluation work
    of issue 10 fills it in."""


def evaluate_after_failure(server: Server) -> None:
    """Evaluate `unreachable` (and hold every other rule) after a poll that failed; the
    server's status and `last_error` are already recorded. Placeholder: the alert
    evaluation work of issue 10 fills it in."""
