"""A RESOLVED transition's email, through a real SMTP server: the alert has cleared, so
its fix is not shown as something to run, and its severity is in the past tense; a
FIRING transition in the same email keeps its fix and statement."""

import pytest

from partdash.alerts import delivery
from partdash.alerts.models import Alert, Transition
from tests import builders
from tests.alerts.mailbox import transition

pytestmark = pytest.mark.django_db


def test_a_resolved_transition_shows_no_fix_to_run_beside_a_firing_one(mailbox, smtp_settings):
    db1 = builders.server("db1")
    orders, events = builders.table(db1, "shop", "orders"), builders.table(db1, "log", "events")
    fired = builders.alert(db1, "runway", of=orders, fix=builders.RUNWAY_FIX, notified_at=None)
    resolved = builders.alert(
        db1, "runway", Alert.State.RESOLVED, of=events, message="runway back to 40 days",
        fix={"advice": "Add partitions to log.events.",
             "sql": "ALTER TABLE `log`.`events` ADD PARTITION (PARTITION p9)",
             "safety": "instant"},
    )  # fmt: skip
    transition(fired)
    transition(resolved, Transition.Kind.RESOLVED)

    delivery.deliver_evaluation(db1.pk, "eval-1")

    (sent,) = mailbox.emails()
    text, html = sent.text, sent.html
    resolved_part = text[text.index("RESOLVED runway log.events") :]
    resolved_part = resolved_part[: resolved_part.index("Firing since")]
    assert "  Was critical: runway back to 40 days" in resolved_part
    assert "Nothing to run: the condition has cleared." in resolved_part
    for shown in (text, html):
        assert "Add partitions to log.events." not in shown
        assert "ADD PARTITION (PARTITION p9)" not in shown
        assert builders.RUNWAY_FIX["sql"] in shown.replace("&#x27;", "'").replace("&lt;", "<")
    assert "  Fix: Add monthly partitions before rows land in the catch-all." in text
    assert "CRITICAL: runway on shop.orders" in text and "CRITICAL: runway back" not in text
    resolved_html = html[html.index("RESOLVED</b> runway") :]
    assert "Was critical: runway back to 40 days" in resolved_html
    assert "Nothing to run: the condition has cleared." in resolved_html
