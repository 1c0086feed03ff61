"""Alert evaluation: one state per (rule, table, partition) of a server, moved by what the
latest poll says about it. Pure: conditions, effective rules and the previous states in;
the new states and the transitions to announce out. No I/O, no Django.

The state machine of one key (Alertmanager's `for`, Grafana's pending period, with a
clear threshold for hysteresis):

- ok -> pending when the condition holds (its value is past the threshold and, for the
  rules that judge a finding, the stored finding exists); pending -> firing once it has
  held on `for_polls` consecutive polls. A pending alert whose condition stops holding
  just goes away: nothing was announced, nothing is.
- firing -> resolved once the value has been on the clear side of the clear threshold
  on `for_polls` consecutive polls. Between the clear threshold and the threshold (the
  band), a firing alert stays firing and an ok key stays ok, so a value hovering at the
  limit sends nothing.
- A key whose subject went away (a dropped table) or whose rule was switched off
  resolves at once, with the reason as its message.
- A silence marks the transitions it covers `silenced` (recorded, never sent). An alert
  that fired under a silence is announced at the first evaluation after the silence
  ends, if it is still firing then; only an announced alert is announced as resolved.
- Keys left out of an evaluation keep their state: while a server cannot be polled the
  caller passes only `unreachable`, so nothing else fires or resolves.
"""

from collections.abc import Container, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from partdash.health.shapes import FixShape

Level = Literal["breach", "band", "clear"]
Worse = Literal["above", "below"]
State = Literal["pending", "firing", "resolved"]
Kind = Literal["firing", "resolved"]

RULE_OFF = "the rule was switched off here"


class Key(NamedTuple):
    """What one alert is about, within one server: the rule, and the table and partition
    where it has them ("" for the server's own rules)."""

    rule: str
    schema: str = ""
    table: str = ""
    partition: str = ""


@dataclass(frozen=True, slots=True)
class Condition:
    """What the latest poll says about one key. `value` is the figure the rule judges
    (None: unknown, judged clear); `limit` the figure's own threshold, used where the
    rule sets none (skew's limit depends on the partitioning method); `holds` whether
    the stored finding exists, for the rules that judge a finding (always True for the
    others). `worse`, where set, overrides the rule's direction for this figure."""

    value: float | None
    limit: float | None = None
    holds: bool = True
    severity: str = "warning"
    message: str = ""
    fix: "FixShape | None" = None
    worse: Worse | None = None
    overridable: bool = True  # False: the rule's threshold does not apply to this figure


@dataclass(frozen=True, slots=True)
class Rule:
    """The rule in force for one key: the built-in one with its overrides applied.
    `threshold` None means the condition's own limit; `clear_threshold` None means the
    threshold times `clear_ratio` (divided by it where lower values are worse)."""

    name: str
    enabled: bool = True
    threshold: float | None = None
    clear_threshold: float | None = None
    for_polls: int = 2
    severity: str = ""  # "": the condition's
    recipients: str = ""
    channels: tuple[int, ...] | None = None  # None: every channel taking the rule
    worse: Worse = "above"
    clear_ratio: float = 0.9

    def limits(self, condition: Condition) -> tuple[float, float] | None:
        """(threshold, clear threshold) for this condition; None when neither the rule
        nor the figure has a threshold."""
        own = self.threshold is None or not condition.overridable
        threshold = condition.limit if own else self.threshold
        if threshold is None:
            return None
        if self.clear_threshold is not None and condition.overridable:
            return threshold, self.clear_threshold
        worse = condition.worse or self.worse
        ratio = self.clear_ratio
        return threshold, threshold * ratio if worse == "above" else threshold / ratio


@dataclass(frozen=True, slots=True)
class AlertState:
    """One alert as the evaluation sees it. `announced`: its firing transition went to
    the outbox unsilenced (the stored alert's `notified_at`)."""

    state: State
    started_at: datetime
    held_polls: int = 0
    clear_polls: int = 0
    announced: bool = False
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    value: float | None = None
    threshold: float | None = None
    severity: str = "warning"
    message: str = ""
    fix: "FixShape | None" = None


@dataclass(frozen=True, slots=True)
class Transition:
    """A change to announce (or, `silenced`, only to record)."""

    key: Key
    kind: Kind
    silenced: bool
    value: float | None
    threshold: float | None
    message: str
    recipients: str
    channels: tuple[int, ...] | None = None


@dataclass
class Outcome:
    """`states`: the new state of every key that had or now has an alert (None: no open
    alert; a resolved state is the alert's last). `transitions`: in key order."""

    states: dict[Key, AlertState | None]
    transitions: list[Transition]


def level(condition: Condition | None, rule: Rule) -> Level:
    """Where the condition's value stands against the rule: past the threshold (with
    the finding present), on the clear side of the clear threshold, or in between."""
    if condition is None or condition.value is None:
        return "clear"
    limits = rule.limits(condition)
    if limits is None:
        return "clear"
    threshold, clear = limits
    value = condition.value
    if (condition.worse or rule.worse) == "above":
        past, cleared = value >= threshold, value < clear
    else:
        past, cleared = value <= threshold, value > clear
    if past and condition.holds:
        return "breach"
    return "clear" if cleared else "band"


def evaluate(
    previous: Mapping[Key, AlertState],
    conditions: Mapping[Key, Condition],
    rules: Mapping[Key, Rule],
    now: datetime,
    silenced: Container[Key] = frozenset(),
    gone: Mapping[Key, str] | None = None,
) -> Outcome:
    """Move every key of `previous`, `conditions` and `gone` one poll on.

    `previous`: the open (pending or firing) alerts. `conditions`: what this poll says
    (a key of `previous` without one is clear). `rules`: the rule in force per key (a
    key without one, or with it disabled, resolves). `silenced`: the keys a silence
    holds now. `gone`: keys whose subject went away, with the reason."""
    gone = gone or {}
    outcome = Outcome({}, [])
    for key in sorted(set(previous) | set(conditions) | set(gone)):
        rule = rules.get(key)
        reason = gone.get(key)
        if reason is None and (rule is None or not rule.enabled):
            reason = RULE_OFF
        before = previous.get(key)
        if reason is not None:
            after, transition = _vanish(key, before, reason, rule, key in silenced, now)
        else:
            after, transition = _step(key, before, conditions.get(key), rule, key in silenced, now)
        if before is not None or after is not None:
            outcome.states[key] = after
        if transition is not None:
            outcome.transitions.append(transition)
    return outcome


def _vanish(key, before, reason, rule, silenced, now):
    """The subject or the rule went away: a firing alert resolves now, saying why; a
    pending one goes away."""
    if before is None or before.state != "firing":
        return None, None
    after = replace(before, state="resolved", resolved_at=now, message=reason)
    return after, _transition(key, after, "resolved", silenced or not before.announced, rule)


def _step(key, before, condition, rule, silenced, now):
    where = level(condition, rule)
    if before is None:
        if where != "breach":
            return None, None
        before = AlertState("pending", started_at=now)
    if before.state == "pending":
        return _pending(key, before, condition, rule, where, silenced, now)
    return _firing(key, before, condition, rule, where, silenced, now)


def _figures(
    state: AlertState, condition: Condition | None, rule: Rule, breach: bool = True
) -> AlertState:
    """The alert's value, threshold, severity, message and fix as of this poll. Its
    severity is that of its latest breach: a reading in the band or clear has none of its
    own (no finding), so a resolved alert still says how bad it was."""
    if condition is None:
        return replace(state, value=None)
    limits = rule.limits(condition)
    return replace(
        state,
        value=condition.value,
        threshold=limits[0] if limits else state.threshold,
        severity=rule.severity or (condition.severity if breach else state.severity),
        message=condition.message or state.message,
        fix=condition.fix if condition.fix is not None else state.fix,
    )


def _pending(key, before, condition, rule, where, silenced, now):
    if where != "breach":
        return None, None  # never announced: it just goes away
    after = _figures(replace(before, held_polls=before.held_polls + 1), condition, rule)
    if after.held_polls < rule.for_polls:
        return after, None
    after = replace(after, state="firing", fired_at=now, clear_polls=0, announced=not silenced)
    return after, _transition(key, after, "firing", silenced, rule)


def _firing(key, before, condition, rule, where, silenced, now):
    clear_polls = before.clear_polls + 1 if where == "clear" else 0
    after = _figures(replace(before, clear_polls=clear_polls), condition, rule, where == "breach")
    if clear_polls >= rule.for_polls:
        after = replace(after, state="resolved", resolved_at=now)
        return after, _transition(key, after, "resolved", silenced or not before.announced, rule)
    if not before.announced and not silenced and where != "clear":
        # It fired under a silence that has ended, and still holds: announce it now.
        after = replace(after, announced=True)
        return after, _transition(key, after, "firing", False, rule)
    return after, None


def _transition(key, state: AlertState, kind: Kind, silenced: bool, rule: Rule | None):
    return Transition(
        key,
        kind,
        silenced,
        state.value,
        state.threshold,
        state.message,
        rule.recipients if rule is not None else "",
        rule.channels if rule is not None else None,
    )
