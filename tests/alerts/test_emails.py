"""What an alert email says (CONTRACT "Alerts"): subject, one line per transition, the
details under it, an HTML part that says the same with every name escaped, a storm in one
bounded email, worst first. Rows are built in the database; Django's test outbox
receives."""

from datetime import timedelta

import pytest
from django.core import mail

from partdash.alerts import delivery
from partdash.alerts.models import Alert, Transition
from tests import builders
from tests.alerts.mailbox import transition

pytestmark = pytest.mark.django_db

BASE = "https://partdash.example.com"
RUNWAY_FIX = {
    "advice": "Add monthly partitions before rows land in the catch-all.",
    "sql": "ALTER TABLE `shop`.`orders` REORGANIZE PARTITION `pmax` INTO (\n"
    "  PARTITION `p202602` VALUES LESS THAN ('2026-03-01'),\n"
    "  PARTITION `pmax` VALUES LESS THAN MAXVALUE)",
    "safety": "copies",
    "rows": 12000,
    "bytes": 3 << 20,
}


@pytest.fixture(autouse=True)
def email_settings(settings):
    settings.ALERT_EMAILS = ["ops@example.com"]
    settings.PARTDASH_BASE_URL = BASE
    settings.DEFAULT_FROM_EMAIL = "partdash@example.com"


def firing(on, of=None, rule="runway", **fields):
    fields = {"notified_at": None, **fields}
    return builders.alert(on, rule=rule, of=of, **fields)


def deliver(server, evaluation="eval-1"):
    delivery.deliver_evaluation(server.pk, evaluation)
    return mail.outbox


def text_lines(message, *starts):
    return [line for line in message.body.splitlines() if line.startswith(starts)]


def html_of(message):
    (html, mimetype), *_ = message.alternatives
    assert mimetype == "text/html"
    return html


def test_one_evaluation_is_one_email_firing_first_then_resolved():
    db1 = builders.server("db1")
    orders, events = builders.table(db1, "shop", "orders"), builders.table(db1, "log", "events")
    transition(firing(db1, orders, value=3, threshold=14), evaluation="eval-1")
    transition(
        builders.alert(db1, "skew", Alert.State.RESOLVED, of=events, value=1.5, threshold=2.0),
        Transition.Kind.RESOLVED,
        evaluation="eval-1",
    )
    transition(firing(db1, None, "unreachable", value=2, threshold=2), evaluation="eval-1")
    transition(firing(db1, events, "hotspot"), evaluation="eval-2")  # another evaluation

    (sent,) = deliver(db1)

    assert sent.subject == "[partdash] db1: 2 firing, 1 resolved"
    assert sent.to == ["ops@example.com"]
    assert text_lines(sent, "FIRING", "RESOLVED") == [
        "FIRING runway shop.orders value 3 threshold 14",  # 3 days of 14: worst
        "FIRING unreachable db1 value 2 threshold 2",
        "RESOLVED skew log.events value 1.5 threshold 2",
    ]


@pytest.mark.parametrize(
    ("rule", "kind", "on_table", "subject"),
    [
        ("runway", "firing", True, "[partdash] db1: FIRING runway shop.orders"),
        ("skew", "resolved", True, "[partdash] db1: RESOLVED skew shop.orders"),
        ("unreachable", "firing", False, "[partdash] db1: FIRING unreachable db1"),
        ("stale_polls", "resolved", False, "[partdash] db1: RESOLVED stale_polls db1"),
    ],
)
def test_a_single_transition_is_named_in_the_subject(rule, kind, on_table, subject):
    db1 = builders.server("db1")
    orders = builders.table(db1) if on_table else None
    transition(firing(db1, orders, rule), kind)

    (sent,) = deliver(db1)

    assert sent.subject == subject
    (line,) = text_lines(sent, "FIRING", "RESOLVED")
    assert line.startswith(subject.removeprefix("[partdash] db1: ") + " value ")


def test_each_line_carries_the_fix_the_table_page_since_partitions_and_a_silence_link():
    db1 = builders.server("db1")
    orders = builders.table(db1)
    alert = firing(db1, orders, fix=RUNWAY_FIX, partition="pmax", ago=timedelta(hours=5))
    started = alert.started_at
    transition(alert)

    (sent,) = deliver(db1)

    body = sent.body
    assert "FIRING runway shop.orders value 3 threshold 14\n" in body
    assert "Fix: Add monthly partitions before rows land in the catch-all." in body
    assert "    ALTER TABLE `shop`.`orders` REORGANIZE PARTITION `pmax` INTO (\n" in body
    assert "      PARTITION `p202602` VALUES LESS THAN ('2026-03-01')," in body
    assert f"Page: {BASE}/tables/{orders.pk}/" in body
    assert f"Since: {started:%Y-%m-%d %H:%M} UTC" in body
    assert "Partitions: pmax" in body
    silence = f"{BASE}/alerts/silence/?server={db1.pk}&schema=shop&table=orders&rule=runway"
    assert f"Silence: {silence}" in body
    html = html_of(sent)
    assert "FIRING</b> runway" in html
    assert f'href="{BASE}/tables/{orders.pk}/"' in html
    assert "ALTER TABLE `shop`.`orders` REORGANIZE PARTITION `pmax`" in html
    assert f'href="{silence.replace("&", "&amp;")}"' in html
    assert sent.extra_headers["Message-ID"].endswith("@example.com>")


def test_a_fix_says_in_one_line_what_running_it_does():
    db1 = builders.server("db1")
    transition(firing(db1, builders.table(db1), fix=RUNWAY_FIX, partition="pmax"))
    transition(
        firing(
            db1,
            builders.table(db1, "shop", "items"),
            "staleness",
            fix={"advice": "Analyze.", "sql": "ALTER TABLE x ANALYZE PARTITION ALL"}
            | {"safety": "instant", "rows": None, "bytes": None},
        )
    )
    transition(firing(db1, builders.table(db1, "shop", "carts"), "skew", fix={"advice": "Key."}))

    (sent,) = deliver(db1)

    safety = [line.strip() for line in sent.body.splitlines() if "Safety:" in line]
    assert safety == ["Safety: copies ~12,000 rows, 3.0 MiB", "Safety: instant"]
    html = html_of(sent)
    assert "Safety: copies ~12,000 rows, 3.0 MiB</p>" in html
    assert html.count("Safety: ") == 2  # none for the fix without a statement


def test_a_fix_stored_before_safety_classes_shows_no_statement():
    """Written by a partdash that copied what the server sent into its statements."""
    db1 = builders.server("db1")
    old = {"advice": "Add partitions.", "sql": "ALTER TABLE t ADD PARTITION (PARTITION p9)"}
    transition(firing(db1, builders.table(db1), fix=old))

    (sent,) = deliver(db1)

    assert "ADD PARTITION" not in sent.body and "Safety:" not in sent.body
    assert "Fix: Add partitions. (The statement returns with the table's next analysis.)" in (
        sent.body
    )


def test_a_server_rule_links_the_server_page_and_a_resolved_one_says_when():
    db1 = builders.server("db1")
    alert = builders.alert(db1, "unreachable", Alert.State.RESOLVED, value=0, threshold=2)
    transition(alert, Transition.Kind.RESOLVED)

    (sent,) = deliver(db1)

    assert f"Page: {BASE}/servers/{db1.pk}/" in sent.body
    assert f"resolved {alert.resolved_at:%Y-%m-%d %H:%M} UTC" in sent.body
    assert "Silence:" not in sent.body  # nothing left to silence


def test_byte_rules_show_the_number_and_its_size():
    db1 = builders.server("db1")
    alert = firing(db1, builders.table(db1), "partition_size", value=12 * 2**30, threshold=2**33)
    transition(alert)

    (sent,) = deliver(db1)

    (line,) = text_lines(sent, "FIRING")
    assert line == (
        "FIRING partition_size shop.orders value 12884901888 (12.0 GiB) "
        "threshold 8589934592 (8.0 GiB)"
    )


def test_hostile_names_are_escaped_in_html_and_cannot_break_a_line():
    db1 = builders.server("db1")
    table = builders.table(db1, "<script>alert(1)</script>", 'x"\nFIRING fake\u202e')
    alert = firing(db1, table, "skew", partition="<b>p0</b>", message="<img src=x onerror=1>")
    Alert.objects.filter(pk=alert.pk).update(
        fix={
            "advice": 'Rebuild x"\nFIRING fake.',
            "sql": "ALTER TABLE `t`\nFIRING x",
            "safety": "instant",
        }
    )
    transition(alert)

    (sent,) = deliver(db1)

    assert "\n" not in sent.subject
    assert text_lines(sent, "FIRING") == [
        'FIRING skew <script>alert(1)</script>.x"\\nFIRING fake\\u202e value 3 threshold 14'
    ]
    assert '  Fix: Rebuild x"\n       FIRING fake.\n' in sent.body
    assert "    ALTER TABLE `t`\n    FIRING x\n" in sent.body
    assert "\u202e" not in sent.body and "\u202e" not in sent.subject
    html = html_of(sent)
    assert "<script>" not in html and "<b>p0</b>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=1&gt;" in html
    assert "\u202e" not in html


def test_worst_first_severity_then_how_far_past_the_threshold():
    db1 = builders.server("db1")
    tables = {name: builders.table(db1, "s", name) for name in "abcde"}
    transition(firing(db1, tables["a"], "skew", severity="warning", value=2.5, threshold=2))
    transition(firing(db1, tables["b"], "skew", severity="critical", value=4.1, threshold=2))
    transition(firing(db1, tables["c"], "skew", severity="warning", value=9, threshold=2))
    # Runway: fewer days left is worse.
    transition(firing(db1, tables["d"], "runway", severity="critical", value=1, threshold=14))
    transition(firing(db1, tables["e"], "runway", severity="critical", value=0.5, threshold=3))

    (sent,) = deliver(db1)

    assert [line.split()[2] for line in text_lines(sent, "FIRING")] == [
        "s.d",  # critical, 14 times short
        "s.e",  # critical, 6 times short
        "s.b",  # critical, 2.05 times over
        "s.c",  # warning, 4.5 times over
        "s.a",
    ]


def test_a_storm_is_one_bounded_email_worst_first_with_a_count(settings):
    db1 = builders.server("db1")
    for n in range(500):
        table = builders.table(db1, "shop", f"t{n:03}")
        severity = "critical" if n in (137, 421) else "warning"
        transition(
            firing(db1, table, "table_size", severity=severity, value=1000 + n, threshold=1000)
        )
    for n in range(3):
        resolved = builders.alert(
            db1, "skew", Alert.State.RESOLVED, of=builders.table(db1, "r", f"r{n}")
        )
        transition(resolved, Transition.Kind.RESOLVED)

    (sent,) = deliver(db1)

    assert len(mail.outbox) == 1
    assert sent.subject == "[partdash] db1: 500 firing, 3 resolved"
    shown = text_lines(sent, "FIRING", "RESOLVED")
    assert len(shown) == settings.PARTDASH_ALERT_EMAIL_DETAILED == 50
    assert [line.split()[2] for line in shown[:4]] == [
        "shop.t421",
        "shop.t137",
        "shop.t499",
        "shop.t498",
    ]
    assert f"...and 453 more (450 firing, 3 resolved): {BASE}/alerts/?server={db1.pk}" in sent.body
    assert sent.body.startswith("500 firing, 3 resolved on db1.")
    assert len(sent.body) < 40_000 and len(html_of(sent)) < 80_000
    assert "and 453 more" in html_of(sent)


def test_every_transition_of_the_evaluation_is_in_exactly_one_email():
    db1 = builders.server("db1")
    made = [transition(firing(db1, builders.table(db1, "s", f"t{n}"))) for n in range(5)]

    deliver(db1)
    deliver(db1)  # again: nothing left to group, the email is sent

    assert len(mail.outbox) == 1
    notifications = {Transition.objects.get(pk=t.pk).notification_id for t in made}
    assert len(notifications) == 1 and None not in notifications
