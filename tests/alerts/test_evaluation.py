"""The alerts service after a poll, on stored rows built directly (no MariaDB, no poll):
what fires, when, what resolves, what is recorded in the outbox and what is queued."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts import service, windows
from partdash.alerts.models import Alert, AlertRule, Transition
from partdash.alerts.service import (
    evaluate_after_failure,
    evaluate_after_poll,
    evaluate_stale_polls,
)
from partdash.metrics.models import Partition, PartitionedTable, PartitionSample, ServerSnapshot
from partdash.servers.choices import ServerStatus
from tests import builders

pytestmark = pytest.mark.django_db

SKEW_FIX = {"advice": "Partition on a key with more distinct values.", "sql": None}


def skewed(ratio: float = 2.4) -> dict:
    """A HASH table's stored health with (above 1.5x) or without a skew finding."""
    health = {
        "skew": {"max_mean_ratio": ratio, "threshold": 1.5, "reason": f"{ratio}x the mean"},
        "hotspots": [],
        "findings": [],
        "fragmented": 0,
        "stale": 0,
    }
    if ratio > 1.5:
        health["findings"] = [
            {
                "kind": "skew",
                "severity": "warning",
                "score": 11.0,
                "message": f"uneven HASH partitions: the largest holds {ratio}x the mean rows",
                "fix": SKEW_FIX,
            }
        ]
    return health


class Fleet:
    """One server and its polls: each `poll()` stores a snapshot, marks the given tables
    analysed by it, and runs the evaluation as the poll service does, with the on-commit
    work (queued deliveries) run as if committed."""

    def __init__(self, django_capture_on_commit_callbacks, monkeypatch):
        self.server = builders.server("db1")
        self.at = timezone.now() - timedelta(days=3)
        self.capture = django_capture_on_commit_callbacks
        self.queued: list[tuple[int, str]] = []
        monkeypatch.setattr(service, "queue_delivery", lambda *args: self.queued.append(args))
        # The rules version the last poll evaluated under, as a poll's conductor keeps it.
        self.evaluated_under: str | None = None

    def table(self, name: str = "orders", health: dict | None = None, **fields):
        fields = {"method": "HASH", "first_seen_at": self.at, "health": health or {}, **fields}
        return builders.table(self.server, name=name, **fields)

    def set_health(self, table: PartitionedTable, health: dict) -> None:
        PartitionedTable.objects.filter(pk=table.pk).update(health=health)

    def poll(self, *analysed: PartitionedTable, pressure: dict | None = None) -> str | None:
        self.at += timedelta(minutes=1)
        snapshot = ServerSnapshot.objects.create(
            server=self.server,
            taken_at=self.at,
            poll_id=uuid.uuid4().hex,
            flavor="mariadb",
            version="10.11.6",
            pressure=pressure or {},
        )
        ids = [t.pk for t in analysed]
        PartitionedTable.objects.filter(pk__in=ids).update(analysed_at=self.at)
        with self.capture(execute=True):
            evaluated = evaluate_after_poll(self.server, snapshot, self.evaluated_under)
        self.evaluated_under = evaluated.rules_version  # as the conductor keeps it
        return evaluated.evaluation_id

    def fail(self) -> str | None:
        self.server.status = ServerStatus.UNREACHABLE
        self.server.last_error = "Can't connect to MySQL server on '10.0.0.9' (timed out)"
        self.server.save()
        with self.capture(execute=True):
            return evaluate_after_failure(self.server)


@pytest.fixture
def fleet(django_capture_on_commit_callbacks, monkeypatch) -> Fleet:
    return Fleet(django_capture_on_commit_callbacks, monkeypatch)


def kinds(rule: str | None = None) -> list[tuple[str, str, bool]]:
    rows = Transition.objects.order_by("id")
    if rule:
        rows = rows.filter(alert__rule=rule)
    return [(t.alert.rule, t.kind, t.silenced) for t in rows]


# -- a skewed table --------------------------------------------------------------------


def test_a_skewed_table_fires_once_after_for_polls_and_stays_quiet(fleet):
    orders = fleet.table(health=skewed(2.4))
    assert fleet.poll(orders) is None
    assert Alert.objects.get().state == "pending"
    evaluation = fleet.poll()  # health unchanged: the open alert is evaluated
    assert kinds() == [("skew", "firing", False)]
    assert fleet.queued == [(fleet.server.pk, evaluation)]
    alert = Alert.objects.get()
    assert alert.state == "firing" and alert.notified_at is not None
    assert (alert.value, alert.threshold) == (2.4, 1.5)
    assert alert.fix == SKEW_FIX and alert.partitioned_table_id == orders.pk
    for _ in range(5):
        assert fleet.poll(orders) is None
    assert len(kinds()) == 1 and len(fleet.queued) == 1


def test_an_evened_table_resolves_once(fleet):
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders), fleet.poll(orders)
    fleet.set_health(orders, skewed(1.02))
    fleet.poll(orders)
    assert Alert.objects.get().state == "firing"  # clear once: not yet
    fleet.poll(orders)
    for _ in range(3):
        fleet.poll(orders)
    assert kinds() == [("skew", "firing", False), ("skew", "resolved", False)]
    alert = Alert.objects.get()
    assert alert.state == "resolved" and alert.resolved_at is not None
    resolved = Transition.objects.get(kind="resolved")
    assert resolved.value == 1.02 and "1.02x" in resolved.message


def test_a_value_hovering_at_the_limit_sends_nothing_more(fleet):
    orders = fleet.table(health=skewed(1.6))
    fleet.poll(orders), fleet.poll(orders)
    for ratio in (1.45, 1.6, 1.4, 1.52, 1.38, 1.55):  # between 1.35 and 1.6
        fleet.set_health(orders, skewed(ratio))
        fleet.poll(orders)
    assert kinds() == [("skew", "firing", False)]


def test_a_table_too_small_to_judge_clears_its_skew_alert(fleet):
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders), fleet.poll()
    emptied = skewed(1.6)
    emptied["skew"].update(judged=False, reason="too little to judge: 12 rows per partition")
    emptied["findings"] = []
    fleet.set_health(orders, emptied)
    fleet.poll(orders), fleet.poll()
    assert kinds() == [("skew", "firing", False), ("skew", "resolved", False)]
    assert "too little to judge" in Transition.objects.get(kind="resolved").message


def test_a_pending_alert_that_clears_sends_nothing(fleet):
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders)
    fleet.set_health(orders, skewed(1.1))
    fleet.poll(orders)
    assert not Alert.objects.exists() and not Transition.objects.exists()


def test_only_the_tables_a_poll_analysed_are_read_once_the_rules_are_known(fleet):
    orders = fleet.table(health=skewed(1.1))
    fleet.poll(orders)
    fleet.set_health(orders, skewed(2.4))  # not analysed by the next poll: not read
    fleet.poll()
    assert not Alert.objects.exists()
    fleet.poll(orders)
    assert Alert.objects.get().state == "pending"


def test_a_rule_edit_re_evaluates_every_table_and_re_sends_nothing(fleet):
    orders = fleet.table(health=skewed(2.4))
    users = fleet.table("users", health=skewed(1.1))
    fleet.poll(orders, users), fleet.poll()
    AlertRule.objects.create(rule="skew", threshold=2.0)  # orders still past it
    fleet.set_health(users, skewed(2.6))  # users: past it, though not analysed again
    fleet.poll(), fleet.poll()
    assert kinds() == [("skew", "firing", False), ("skew", "firing", False)]
    assert Alert.objects.get(table="orders").threshold == 2.0


# -- the rules version: what re-evaluates a quiet table (not analysed again) --------------


def _big_quiet_table(fleet):
    """orders at 110 GiB, under the default table_size (1 TiB), then two polls that
    do not analyse it: quiet from then on."""
    orders = fleet.table(total_data_bytes=90 << 30, total_index_bytes=20 << 30)
    fleet.poll(orders), fleet.poll()
    assert not Alert.objects.exists()
    return orders


def test_lowering_a_threshold_setting_re_evaluates_a_quiet_table(fleet, settings):
    _big_quiet_table(fleet)
    settings.PARTDASH_ALERT_TABLE_SIZE_BYTES = 100 << 30
    fleet.poll(), fleet.poll()
    assert kinds() == [("table_size", "firing", False)]
    assert Alert.objects.get().threshold == 100 << 30


def test_lowering_a_setting_a_condition_reads_re_evaluates_a_quiet_table(fleet, settings):
    health = {"retention": {"overdue_days": 0.5}, **_finding("retention", "warning")}
    archive = fleet.table("archive", health=health)
    fleet.poll(archive), fleet.poll()  # half a day late: within the day's grace
    assert not Alert.objects.exists()
    settings.PARTDASH_RETENTION_GRACE_DAYS = 0.25
    fleet.poll(), fleet.poll()
    assert kinds() == [("retention", "firing", False)]


def test_tagging_the_server_re_evaluates_a_quiet_table_under_the_tags_rule(fleet):
    AlertRule.objects.create(rule="table_size", tag="prod", threshold=100 << 30)
    _big_quiet_table(fleet)
    fleet.server.tags = "prod"
    fleet.server.save()
    fleet.poll(), fleet.poll()
    assert kinds() == [("table_size", "firing", False)]


def test_a_rule_edited_without_save_re_evaluates_a_quiet_table(fleet):
    """An UPDATE that leaves `updated_at` (a queryset's `update`, a script) counts too."""
    rule = AlertRule.objects.create(rule="table_size", threshold=200 << 30)
    _big_quiet_table(fleet)
    AlertRule.objects.filter(pk=rule.pk).update(threshold=100 << 30)
    fleet.poll(), fleet.poll()
    assert kinds() == [("table_size", "firing", False)]


def test_unchanged_inputs_leave_a_quiet_table_unread(fleet, settings):
    """The same rules, settings and tags: the digest is the same, so a quiet table's
    alerts are not evaluated (its health changed here behind the poll's back)."""
    orders = _big_quiet_table(fleet)
    PartitionedTable.objects.filter(pk=orders.pk).update(total_data_bytes=2 << 40)
    settings.PARTDASH_ALERT_REPEAT_HOURS = 1  # not an input of the evaluation
    fleet.poll(), fleet.poll()
    assert not Alert.objects.exists()


def test_a_window_starting_and_ending_on_a_quiet_table_holds_then_announces(fleet):
    """A window's occurrence begins while a quiet table's alert is pending: it fires
    silenced. The window is moved (its occurrence ends): the next poll announces it,
    though the table is still not analysed again."""
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders)
    window = builders.window_now(fleet.server)
    fleet.poll()
    assert kinds() == [("skew", "firing", True)] and fleet.queued == []
    window.rrule = f"FREQ=DAILY;BYHOUR={(timezone.now().hour + 12) % 24};BYMINUTE=0"
    window.save()
    windows.plan(window)
    evaluation = fleet.poll()
    assert kinds() == [("skew", "firing", True), ("skew", "firing", False)]
    assert fleet.queued == [(fleet.server.pk, evaluation)]


# -- overrides -------------------------------------------------------------------------


def test_a_table_level_override_switches_skew_off_for_that_table(fleet):
    AlertRule.objects.create(rule="skew", enabled=False, schema="shop", table="orders")
    orders = fleet.table(health=skewed(2.4))
    users = fleet.table("users", health=skewed(2.4))
    fleet.poll(orders, users), fleet.poll()
    assert list(Alert.objects.values_list("table", "state")) == [("users", "firing")]


def test_switching_a_rule_off_resolves_its_firing_alert_once(fleet):
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders), fleet.poll()
    AlertRule.objects.create(rule="skew", enabled=False, table="orders")
    fleet.poll(), fleet.poll()
    assert kinds() == [("skew", "firing", False), ("skew", "resolved", False)]
    assert "switched off" in Transition.objects.get(kind="resolved").message


def test_recipients_are_resolved_when_evaluated(fleet, settings):
    settings.ALERT_EMAILS = ["ops@example.com"]
    fleet.server.tags = "prod"
    fleet.server.save()
    AlertRule.objects.create(rule="skew", tag="prod", recipients="dba@example.com")
    orders = fleet.table(health=skewed(2.4))
    runway = fleet.table("events", health={"runway": {"days_left": 0}, **_finding("runway")})
    fleet.poll(orders, runway), fleet.poll()
    recipients = dict(Transition.objects.values_list("alert__rule", "recipients"))
    assert recipients == {"skew": "dba@example.com", "runway": "ops@example.com"}


def _finding(kind: str, severity: str = "critical") -> dict:
    return {"findings": [{"kind": kind, "severity": severity, "score": 150, "message": kind}]}


# -- the server: unreachable, stale polls ----------------------------------------------


def test_unreachable_fires_after_for_polls_failures_and_holds_every_other_alert(fleet):
    orders = fleet.table(health=skewed(2.4))
    users = fleet.table("users", health=skewed(2.4))
    fleet.poll(orders, users), fleet.poll()  # both firing
    fleet.set_health(users, skewed(1.0))
    fleet.poll(users)  # users clear once: one more clear poll resolves it
    fleet.set_health(orders, skewed(1.0))
    crm = fleet.table("crm", health=skewed(2.4))
    assert fleet.fail() is None
    evaluation = fleet.fail()
    for _ in range(3):
        fleet.fail()
    assert kinds() == [
        ("skew", "firing", False),
        ("skew", "firing", False),
        ("unreachable", "firing", False),
    ]
    assert fleet.queued[-1] == (fleet.server.pk, evaluation)
    unreachable = Alert.objects.get(rule="unreachable")
    assert "timed out" in unreachable.message and unreachable.severity == "critical"
    assert Alert.objects.get(table="users").clear_polls == 1
    assert not Alert.objects.filter(table="crm").exists()
    # Back: unreachable resolves after as many good polls; the rest moves on again.
    fleet.poll(orders, users, crm), fleet.poll()
    assert kinds()[3:] == [
        ("skew", "resolved", False),  # users, on its second clear poll
        ("skew", "firing", False),  # crm, after two polls
        ("skew", "resolved", False),  # orders, after two clear polls
        ("unreachable", "resolved", False),  # after two good polls
    ]


def test_stale_polls_fires_when_no_poll_succeeds_for_three_intervals(fleet):
    server = fleet.server
    server.enabled, server.poll_interval = True, 60
    server.status = ServerStatus.OK
    server.last_success_at = timezone.now() - timedelta(minutes=2)
    server.save()
    now = timezone.now()
    with fleet.capture(execute=True):
        assert evaluate_stale_polls(now) == []
        [evaluation] = evaluate_stale_polls(now + timedelta(minutes=2))
    assert kinds() == [("stale_polls", "firing", False)]
    assert fleet.queued == [(server.pk, evaluation)]
    server.last_success_at = now + timedelta(minutes=2, seconds=30)
    server.save()
    with fleet.capture(execute=True):
        evaluate_stale_polls(now + timedelta(minutes=3))
    assert kinds() == [("stale_polls", "firing", False), ("stale_polls", "resolved", False)]


def test_stale_polls_resolves_when_polling_is_switched_off(fleet):
    server = fleet.server
    server.enabled, server.status, server.poll_interval = True, ServerStatus.OK, 60
    server.last_success_at = timezone.now() - timedelta(hours=1)
    server.save()
    evaluate_stale_polls()
    server.enabled = False
    server.save()
    evaluate_stale_polls()
    assert kinds() == [("stale_polls", "firing", False), ("stale_polls", "resolved", False)]
    assert Transition.objects.get(kind="resolved").message == "polling db1 is switched off"


def test_stale_polls_leaves_a_failing_server_to_unreachable(fleet):
    server = fleet.server
    server.enabled, server.status = True, ServerStatus.UNREACHABLE
    server.last_success_at = timezone.now() - timedelta(hours=5)
    server.save()
    assert evaluate_stale_polls() == []
    assert not Alert.objects.exists()


# -- dropped tables --------------------------------------------------------------------


def test_a_dropped_table_resolves_its_alerts_once_saying_so(fleet):
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders), fleet.poll()
    PartitionedTable.objects.filter(pk=orders.pk).update(dropped_at=fleet.at)
    fleet.poll()
    fleet.poll()
    assert kinds() == [("skew", "firing", False), ("skew", "resolved", False)]
    assert Transition.objects.get(kind="resolved").message == "shop.orders was dropped"
    assert not Alert.objects.filter(state__in=("pending", "firing")).exists()


# -- silences --------------------------------------------------------------------------


def test_a_silence_marks_the_transitions_it_covers(fleet):
    silence = builders.silence(hours=1, server=fleet.server, table="orders")
    orders = fleet.table(health=skewed(2.4))
    users = fleet.table("users", health=skewed(2.4))
    fleet.poll(orders, users)
    fleet.poll()
    silenced = dict(Transition.objects.values_list("alert__table", "silenced"))
    assert silenced == {"orders": True, "users": False}
    assert Alert.objects.get(table="orders").notified_at is None
    assert len(fleet.queued) == 1  # for users
    # The silence ends while orders still fires: announced at the next evaluation.
    silence.ends_at = timezone.now() - timedelta(seconds=1)
    silence.save()
    fleet.poll()
    fleet.poll()
    announced = Transition.objects.filter(alert__table="orders").order_by("id")
    assert [(t.kind, t.silenced) for t in announced] == [("firing", True), ("firing", False)]
    assert Alert.objects.get(table="orders").notified_at is not None


def test_an_evaluation_of_silenced_transitions_only_queues_nothing(fleet):
    builders.silence(hours=1, rule="skew")
    orders = fleet.table(health=skewed(2.4))
    fleet.poll(orders), fleet.poll()
    assert kinds() == [("skew", "firing", True)] and fleet.queued == []


# -- a storm ---------------------------------------------------------------------------


def test_500_tables_crossing_at_once_are_one_evaluation(fleet):
    tables = PartitionedTable.objects.bulk_create(
        PartitionedTable(
            server=fleet.server,
            schema="shop",
            name=f"t{i:03}",
            method="HASH",
            first_seen_at=fleet.at,
            health=skewed(2.0 + i / 1000),
        )
        for i in range(500)
    )
    fleet.poll(*tables)
    evaluation = fleet.poll()
    transitions = Transition.objects.filter(kind="firing")
    assert transitions.count() == 500
    assert set(transitions.values_list("evaluation", flat=True)) == {evaluation}
    assert fleet.queued == [(fleet.server.pk, evaluation)]
    fleet.poll()
    assert Transition.objects.count() == 500


# -- sizes -----------------------------------------------------------------------------


def _partition(table, name: str, gib: float, **fields) -> Partition:
    size = int(gib * (1 << 30))
    return Partition.objects.create(
        table=table, key=f"{name}#", name=name, data_bytes=size, index_bytes=0, **fields
    )


def test_a_partition_past_partition_size_fires_and_its_split_resolves_it(fleet, settings):
    settings.PARTDASH_ALERT_PARTITION_SIZE_BYTES = 10 << 30
    orders = fleet.table()
    big = _partition(orders, "p0", 12)
    _partition(orders, "p1", 9.5)  # in the band: never fires
    fleet.poll(), fleet.poll()
    alert = Alert.objects.get(rule="partition_size")
    assert (alert.partition, alert.value, alert.threshold) == ("p0", 12 * (1 << 30), 10 << 30)
    assert alert.partitioned_table_id == orders.pk and alert.state == "firing"
    Partition.objects.filter(pk=big.pk).update(dropped_at=fleet.at)  # REORGANIZEd away
    fleet.poll()
    assert kinds("partition_size") == [
        ("partition_size", "firing", False),
        ("partition_size", "resolved", False),
    ]
    assert "is gone" in Transition.objects.get(kind="resolved").message


def test_table_size_judges_the_stored_totals(fleet, settings):
    settings.PARTDASH_ALERT_TABLE_SIZE_BYTES = 100 << 30
    orders = fleet.table(total_data_bytes=90 << 30, total_index_bytes=20 << 30)
    fleet.poll(orders), fleet.poll()
    alert = Alert.objects.get(rule="table_size")
    assert alert.value == 110 << 30 and alert.state == "firing"


def test_table_growth_is_measured_over_a_day_of_samples(fleet, settings):
    settings.PARTDASH_ALERT_TABLE_GROWTH_BYTES_PER_DAY = 5 << 30
    orders = fleet.table()
    day_ago = fleet.poll()  # the reference poll, at least a day before the next
    reference = ServerSnapshot.objects.latest()
    growing = _partition(orders, "p0", 1)
    _partition(orders, "p1", 3)  # unchanged since
    PartitionSample.objects.create(
        partition=growing, snapshot=reference, data_bytes=1 << 30, index_bytes=0
    )
    Partition.objects.filter(pk=growing.pk).update(
        data_bytes=9 << 30, changed_at=fleet.at + timedelta(days=1)
    )
    assert day_ago is None
    fleet.at += timedelta(days=1)
    fleet.poll(orders)
    fleet.poll(orders)
    alert = Alert.objects.get(rule="table_growth")
    assert alert.state == "firing"
    assert alert.value == pytest.approx(8 * (1 << 30) / (1 + 2 / 1440), rel=1e-3)
