"""The poll's last stage: evaluate the alert rules against what the poll stored, record
the alerts' new states and the transitions to announce (the outbox), and queue their
delivery once the poll's transaction commits.

The poll service (`partdash.polling.service`) calls these inside the poll's
transaction, after the analysis, so a poll's figures, findings and alert transitions
are stored all or nothing. The decisions are `partdash.health.alerting`'s (pure); this
module reads and writes.

Cost: a poll evaluates the tables its analysis touched and those with an open alert,
plus one query for the partitions past the `partition_size` threshold; every table only
when an input of the evaluation changed since the server's previous poll evaluated it
(`rules_version`).
"""

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from partdash.alerts import acks, alertmanager
from partdash.alerts import conditions as judged
from partdash.alerts.models import Acknowledgement, Alert, RuleName, Transition
from partdash.alerts.records import key_of, overrides_for, silences_for
from partdash.alerts.rules import BuiltinRule, catalogue
from partdash.health.alert_rules import Override, rule_in_force, silenced_keys
from partdash.health.alerting import AlertState, Condition, Key, Outcome, evaluate
from partdash.lib.bulk import update_each
from partdash.metrics.models import PartitionedTable, ServerSnapshot
from partdash.servers.models import Server

log = logging.getLogger(__name__)

OPEN = (Alert.State.PENDING, Alert.State.FIRING)
DELIVERY_TASK = "partdash.alerts.tasks.deliver_evaluation"
TABLE_FIELDS = (
    "id",
    "schema",
    "name",
    "health",
    "total_data_bytes",
    "total_index_bytes",
    "first_seen_at",
    "dropped_at",
)


# -- the hooks -------------------------------------------------------------------------


class Evaluated(NamedTuple):
    """What `evaluate_after_poll` did: the evaluation it recorded (None: no transition),
    and the rules version it evaluated under, for the next poll of the server
    (`evaluated_under`)."""

    evaluation_id: str | None
    rules_version: str


def evaluate_after_poll(
    server: Server, snapshot: ServerSnapshot, evaluated_under: str | None = None
) -> Evaluated:
    """Evaluate the server's rules on the health this poll stored (the snapshot's and
    its tables'), except `stale_polls` (beat's), and record the transitions.

    `evaluated_under`: the rules version the server's previous poll evaluated under
    (what it returned, kept by the poll's conductor): every table is evaluated when the
    version changed since (or that is unknown, None), else only what this poll
    analysed."""
    now = snapshot.taken_at
    open_alerts = list(
        Alert.objects.filter(server=server, state__in=OPEN).exclude(rule=RuleName.STALE_POLLS)
    )
    evaluation = Evaluation(server, now, open_alerts)
    version = rules_version(server, evaluation.rules, evaluation.overrides)
    full = evaluated_under != version
    tables = _tables_to_evaluate(server, snapshot, open_alerts, full)
    evaluation.judge_tables(tables)
    evaluation.judge_partitions()
    evaluation.conditions[Key("pressure")] = judged.pressure_condition(snapshot)
    evaluation.conditions[Key("drift")] = judged.drift_condition(snapshot)
    evaluation.conditions[Key(RuleName.WORKING_SET_FORECAST)] = (
        judged.working_set_forecast_condition(snapshot)
    )
    evaluation.conditions[Key(RuleName.UNREACHABLE)] = judged.unreachable_condition(
        server.name, failed=False
    )
    return Evaluated(evaluation.run(), version)


def evaluate_after_failure(server: Server) -> str | None:
    """Evaluate `unreachable` after a poll that failed (its status and `last_error` are
    recorded already); every other rule holds its state until the server answers."""
    last_error = Server.objects.filter(pk=server.pk).values_list("last_error", flat=True).first()
    open_alerts = list(
        Alert.objects.filter(server=server, state__in=OPEN, rule=RuleName.UNREACHABLE)
    )
    evaluation = Evaluation(server, timezone.now(), open_alerts)
    evaluation.conditions[Key(RuleName.UNREACHABLE)] = judged.unreachable_condition(
        server.name, failed=True, last_error=last_error or ""
    )
    return evaluation.run()


def evaluate_stale_polls(now: datetime | None = None) -> list[str]:
    """Beat: `stale_polls` of every enabled server (no poll happens to evaluate it),
    one transaction and evaluation per server. Returns the evaluations recorded."""
    now = now or timezone.now()
    recorded = []
    stale = Alert.objects.filter(state__in=OPEN, rule=RuleName.STALE_POLLS)
    for server in Server.objects.filter(Q(enabled=True) | Q(alerts__in=stale)).distinct():
        with transaction.atomic():
            open_alerts = list(stale.filter(server=server))
            evaluation = Evaluation(server, now, open_alerts)
            key = Key(RuleName.STALE_POLLS)
            if server.enabled:
                evaluation.conditions[key] = judged.stale_polls_condition(server, now)
            else:  # paused on purpose: no poll is due
                evaluation.gone[key] = f"polling {server.name} is switched off"
            evaluation_id = evaluation.run()
        if evaluation_id:
            recorded.append(evaluation_id)
    return recorded


def rules_version(server: Server, rules: dict[str, BuiltinRule], overrides: list[Override]) -> str:
    """A digest of everything, besides a table's stored figures and health, that decides
    whether its alerts fire: the built-in rules' defaults (the PARTDASH_ALERT_*
    settings), the settings the conditions read (`conditions.judging_settings`), the
    default recipients, the overrides that can match the server and its tags. A poll
    evaluates every table when this differs from the version its server's previous poll
    evaluated under (in the poll memory, shared through Redis, so across restarts too):
    an edit to any of them reaches a quiet table at the next poll, not at its next
    analysis. It digests the values themselves, not row counts and times, so an edit
    that bypasses `save()` (a queryset's `update`) or a channel added to an override
    counts too.

    Silences and maintenance windows are not in it: they only mark a transition
    `silenced`, and a table with a transition to mark has an open alert, which is
    evaluated at every poll (an alert that fired under a silence is announced at the
    first poll after it ends)."""
    inputs = (
        sorted((name, rule.defaults) for name, rule in rules.items()),
        [(name, judged.setting_value(name)) for name in judged.judging_settings()],
        list(settings.ALERT_EMAILS),
        sorted(overrides, key=lambda override: override.id),
        sorted(server.tag_list),
    )
    # The records' own reprs (frozen dataclasses of plain values: the same text in every
    # process). Measured: 0.2 ms with no override, 0.5 ms with 50, 3.3 ms with 500
    # (`asdict` and JSON took 0.7, 2.6 and 25 ms).
    encoded = repr(inputs).encode()
    return hashlib.sha256(encoded).hexdigest()[:32]  # 128 bits: no collision by chance


def _tables_to_evaluate(server, snapshot, open_alerts: list[Alert], full: bool):
    """The tables this poll's analysis wrote (all live ones when `full`), and those
    with an open alert (dropped ones included: their alerts resolve)."""
    with_alerts = {a.partitioned_table_id for a in open_alerts if a.partitioned_table_id}
    analysed = (
        Q(dropped_at=None) if full else Q(dropped_at=None, analysed_at__gte=snapshot.taken_at)
    )
    return list(
        PartitionedTable.objects.filter(server=server)
        .filter(analysed | Q(pk__in=with_alerts))
        .only(*TABLE_FIELDS)
    )


# -- one evaluation --------------------------------------------------------------------


@dataclass
class Evaluation:
    """One server's evaluation: the open alerts and what this poll says, in; the alerts'
    new states and the outbox's new transitions, out (under one evaluation id)."""

    server: Server
    now: datetime
    open_alerts: list[Alert]

    def __post_init__(self) -> None:
        self.conditions: dict[Key, Condition] = {}
        self.gone: dict[Key, str] = {}
        self.alerts = {key_of(alert): alert for alert in self.open_alerts}
        self.table_ids: dict[tuple[str, str], int] = {
            (a.schema, a.table): a.partitioned_table_id
            for a in self.open_alerts
            if a.partitioned_table_id
        }
        self.rules = catalogue()
        self.overrides = overrides_for(self.server)

    # -- conditions --------------------------------------------------------------------

    def judge_tables(self, tables: list[PartitionedTable]) -> None:
        live = [t for t in tables if t.dropped_at is None]
        for table in live:
            self.table_ids[(table.schema, table.name)] = table.pk
            self.conditions.update(judged.table_conditions(table))
        growth = judged.growth_per_day(self.server, live, self.now)
        for table in live:
            key = Key(RuleName.TABLE_GROWTH, table.schema, table.name)
            self.conditions[key] = judged.growth_condition(growth.get(table.pk))
        for table in tables:
            if table.dropped_at is not None:
                self._vanish(table.schema, table.name, f"{table.schema}.{table.name} was dropped")
        for key, alert in self.alerts.items():
            if alert.table and alert.partitioned_table_id is None:
                self.gone[key] = f"{alert.schema}.{alert.table} no longer exists"

    def _vanish(self, schema: str, table: str, reason: str) -> None:
        for key in self.alerts:
            if key.schema == schema and key.table == table:
                self.gone[key] = reason

    def judge_partitions(self) -> None:
        """`partition_size`: one query for the partitions past the lowest threshold any
        override could set here; an open alert's partition it leaves out is read alone
        (below the threshold, or dropped)."""
        floor = self._partition_floor()
        found, table_ids = judged.partition_size_conditions(self.server, floor)
        self.conditions.update(found)
        self.table_ids.update(table_ids)
        missing = [
            (key, alert)
            for key, alert in self.alerts.items()
            if key.rule == RuleName.PARTITION_SIZE and key not in found and key not in self.gone
        ]
        sizes = judged.partition_sizes({alert.partitioned_table_id for _, alert in missing})
        for key, alert in missing:
            size = sizes.get((alert.partitioned_table_id, key.partition), -1)
            if size == -1:
                self.gone[key] = f"partition {key.partition} of {key.schema}.{key.table} is gone"
            elif size is not None:
                self.conditions[key] = judged.partition_condition(size)

    def _partition_floor(self) -> float:
        builtin = self.rules[RuleName.PARTITION_SIZE].defaults
        figures = [builtin.threshold * builtin.clear_ratio]
        for override in self.overrides:
            if override.rule == RuleName.PARTITION_SIZE:
                figures += [
                    f for f in (override.threshold, override.clear_threshold) if f is not None
                ]
                if override.threshold is not None:
                    figures.append(override.threshold * builtin.clear_ratio)
        return max(min(figures), 0)

    # -- deciding and recording --------------------------------------------------------

    def run(self) -> str | None:
        """Decide, then record; returns the evaluation id if any transition was made."""
        previous = {key: state_of(alert) for key, alert in self.alerts.items()}
        conditions = {
            key: condition
            for key, condition in self.conditions.items()
            if key in previous or (condition.holds and condition.value is not None)
        }
        keys = set(previous) | set(conditions) | set(self.gone)
        tags = self.server.tag_list
        default_recipients = ",".join(settings.ALERT_EMAILS)
        rules = {
            key: rule_in_force(
                self.rules[key.rule].defaults,
                self.overrides,
                self.server.pk,
                tags,
                key,
                default_recipients,
            )
            for key in keys
            if key.rule in self.rules
        }
        silenced = silenced_keys(silences_for(self.server), self.server.pk, keys, timezone.now())
        outcome = evaluate(previous, conditions, rules, self.now, silenced, self.gone)
        return self.record(outcome)

    def record(self, outcome: Outcome) -> str | None:
        evaluation = uuid.uuid4().hex
        created = [
            self._new_alert(key, state)
            for key, state in outcome.states.items()
            if state is not None and key not in self.alerts
        ]
        Alert.objects.bulk_create(created, batch_size=500)
        by_key = {**self.alerts, **{key_of(a): a for a in created}}
        _ensure_ids(self.server, by_key)
        changed, dropped, clearings = [], [], []
        for key, state in outcome.states.items():
            alert = self.alerts.get(key)
            if alert is None:
                continue
            if state is None:
                dropped.append(alert.pk)
            elif state != state_of(alert):
                if (cleared := acks.clear_if_worse(alert, state.severity, self.now)) is not None:
                    clearings.append(cleared)
                changed.append(apply_state(alert, state, self.now))
        Alert.objects.filter(pk__in=dropped).delete()
        _update_alerts(changed, self.now)
        if clearings:  # (its own UPDATE: an acknowledgement made meanwhile is not undone)
            worse = [c.alert.pk for c in clearings]
            Alert.objects.filter(pk__in=worse).update(
                acknowledged_by=None, acknowledged_at=None, ack_comment=""
            )
            Acknowledgement.objects.bulk_create(clearings)
        if not outcome.transitions:
            return None
        created_at = timezone.now()
        Transition.objects.bulk_create(
            (
                Transition(
                    alert_id=by_key[t.key].pk,
                    server=self.server,
                    kind=t.kind,
                    evaluation=evaluation,
                    recipients=t.recipients,
                    channels=None if t.channels is None else list(t.channels),
                    value=t.value,
                    threshold=t.threshold,
                    message=t.message,
                    created_at=created_at,
                    silenced=t.silenced,
                )
                for t in outcome.transitions
            ),
            batch_size=500,
        )
        if any(not t.silenced for t in outcome.transitions):
            server_id = self.server.pk
            transaction.on_commit(lambda: queue_delivery(server_id, evaluation))
        transaction.on_commit(alertmanager.queue_push)
        return evaluation

    def _new_alert(self, key: Key, state: AlertState) -> Alert:
        alert = Alert(
            rule=key.rule,
            server=self.server,
            partitioned_table_id=self.table_ids.get((key.schema, key.table)) if key.table else None,
            schema=key.schema,
            table=key.table,
            partition=key.partition,
            started_at=state.started_at,
        )
        return apply_state(alert, state, self.now)


# -- rows <-> states -------------------------------------------------------------------


def state_of(alert: Alert) -> AlertState:
    return AlertState(
        state=alert.state,
        started_at=alert.started_at,
        held_polls=alert.held_polls,
        clear_polls=alert.clear_polls,
        announced=alert.notified_at is not None,
        fired_at=alert.fired_at,
        resolved_at=alert.resolved_at,
        value=alert.value,
        threshold=alert.threshold,
        severity=alert.severity,
        message=alert.message,
        fix=alert.fix,
    )


def apply_state(alert: Alert, state: AlertState, now: datetime) -> Alert:
    """`state` written onto the row; `notified_at` is when its firing transition went to
    the outbox unsilenced."""
    alert.state = state.state
    alert.held_polls, alert.clear_polls = state.held_polls, state.clear_polls
    alert.fired_at, alert.resolved_at = state.fired_at, state.resolved_at
    alert.value, alert.threshold = state.value, state.threshold
    alert.severity, alert.message, alert.fix = state.severity, state.message, state.fix
    if state.announced and alert.notified_at is None:
        alert.notified_at = now
    return alert


UPDATED = (
    "state",
    "held_polls",
    "clear_polls",
    "fired_at",
    "resolved_at",
    "notified_at",
    "value",
    "threshold",
    "severity",
    "message",
    "fix",
    "updated_at",
)


def _update_alerts(alerts: list[Alert], now: datetime) -> None:
    for alert in alerts:
        alert.updated_at = now
    update_each(Alert, alerts, UPDATED)


def _ensure_ids(server: Server, alerts: dict[Key, Alert]) -> None:
    """Backends that do not return ids from a bulk insert (MySQL): read them back."""
    missing = {key: a for key, a in alerts.items() if a.pk is None}
    if not missing:
        return
    rows = Alert.objects.filter(server=server, state__in=OPEN).values_list(
        "id", "rule", "schema", "table", "partition"
    )
    for pk, *key in rows:
        alert = missing.get(Key(*key))
        if alert is not None:
            alert.pk = pk


# -- delivery --------------------------------------------------------------------------


def queue_delivery(server_id: int, evaluation: str) -> None:
    """Queue the email of an evaluation. A broker that cannot take it must not fail the
    poll: the outbox keeps the transitions and beat's sweep delivers them later."""
    from celery import current_app

    try:
        current_app.send_task(DELIVERY_TASK, args=(server_id, evaluation), retry=False)
    except Exception as exc:  # noqa: BLE001 any broker failure: the sweep sends it later
        log.warning("alert delivery of %s not queued (%s): the sweep will send it", evaluation, exc)
