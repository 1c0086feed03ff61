"""The pure alert state machine (`partdash.health.alerting`), driven poll by poll: unit
cases for each edge, then hypothesis feeding it random value sequences, silences and
rules, checking the invariants a DBA relies on."""

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from partdash.health.alerting import (
    RULE_OFF,
    AlertState,
    Condition,
    Key,
    Rule,
    evaluate,
    level,
)

KEY = Key("skew", "shop", "orders")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SKEW = Rule("skew", threshold=None, for_polls=2, clear_ratio=0.9)


def drive(values, rule=SKEW, limit=1.5, silenced=None, holds=None):
    """Evaluate KEY once per value; returns the transitions of each poll and the states."""
    state: dict[Key, AlertState] = {}
    polls, states = [], []
    for i, value in enumerate(values):
        condition = Condition(value, limit=limit, holds=True if holds is None else holds[i])
        quiet = {KEY} if silenced and silenced[i] else set()
        now = T0 + timedelta(minutes=i)
        outcome = evaluate(state, {KEY: condition}, {KEY: rule}, now, quiet)
        after = outcome.states.get(KEY)
        state = {KEY: after} if after is not None and after.state != "resolved" else {}
        polls.append([(t.kind, t.silenced) for t in outcome.transitions])
        states.append(after.state if after else "ok")
    return polls, states


# -- edges -----------------------------------------------------------------------------


def test_a_breach_fires_after_for_polls_and_only_once():
    polls, states = drive([2.0, 2.0, 2.0, 2.0])
    assert polls == [[], [("firing", False)], [], []]
    assert states == ["pending", "firing", "firing", "firing"]


def test_a_pending_alert_that_clears_just_goes_away():
    polls, states = drive([2.0, 1.0, 2.0, 1.0])
    assert polls == [[], [], [], []]
    assert states == ["pending", "ok", "pending", "ok"]


def test_it_resolves_after_as_many_clear_polls_and_says_so_once():
    polls, states = drive([2.0, 2.0, 1.0, 1.0, 1.0])
    assert polls == [[], [("firing", False)], [], [("resolved", False)], []]
    assert states[-2:] == ["resolved", "ok"]


def test_a_value_in_the_band_keeps_a_firing_alert_firing():
    # Fires above 1.5, clears below 1.35: 1.4 is in between.
    polls, states = drive([2.0, 2.0, 1.4, 1.4, 1.4, 1.49, 1.4])
    assert polls == [[], [("firing", False)], [], [], [], [], []]
    assert states[-1] == "firing"


def severities(readings):
    """Evaluate KEY once per (value, its finding's severity); (state, severity) after
    each. Without a finding a condition's severity is the default, warning (as
    `partdash.alerts.conditions` builds it)."""
    state: dict[Key, AlertState] = {}
    seen = []
    for i, (value, severity) in enumerate(readings):
        found = value >= 1.5
        condition = Condition(value, limit=1.5, holds=found, severity=severity or "warning")
        after = evaluate(state, {KEY: condition}, {KEY: SKEW}, T0 + timedelta(minutes=i))
        state = {KEY: after.states[KEY]}
        seen.append((state[KEY].state, state[KEY].severity))
    return seen


def test_a_resolved_alert_says_the_severity_of_its_latest_breach():
    fired_critical = [(4.0, "critical")] * 2
    assert severities([*fired_critical, (1.0, None), (1.0, None)]) == [
        ("pending", "critical"),
        ("firing", "critical"),
        ("firing", "critical"),
        ("resolved", "critical"),
    ]
    # In the band there is no finding either; a breach rated anew is taken.
    assert severities([*fired_critical, (1.4, None), (2.0, "warning"), (1.0, None), (1.0, None)])[
        2:
    ] == [
        ("firing", "critical"),
        ("firing", "warning"),
        ("firing", "warning"),
        ("resolved", "warning"),
    ]


def test_a_value_in_the_band_never_fires():
    polls, states = drive([1.4, 1.49, 1.4, 1.45])
    assert all(p == [] for p in polls) and set(states) == {"ok"}


def test_a_clear_poll_inside_the_band_resets_the_clear_count():
    polls, _ = drive([2.0, 2.0, 1.0, 1.4, 1.0, 1.0])
    assert polls[3] == [] and polls[4] == [] and polls[5] == [("resolved", False)]


def test_a_finding_rule_does_not_fire_without_its_finding():
    polls, states = drive([2.0, 2.0, 2.0], holds=[False, False, False])
    assert all(p == [] for p in polls) and set(states) == {"ok"}


def test_lower_is_worse_for_runway():
    runway = Rule("runway", for_polls=2, worse="below", clear_ratio=14 / 15)
    assert level(Condition(3, limit=14), runway) == "breach"
    assert level(Condition(14.5, limit=14), runway) == "band"
    assert level(Condition(16, limit=14), runway) == "clear"
    assert level(Condition(None, limit=14), runway) == "clear"


def test_an_override_threshold_can_only_raise_the_bar_of_a_finding_rule():
    stricter = Rule("skew", threshold=3.0)
    assert level(Condition(2.0, limit=1.5), stricter) == "clear"  # under 2.7
    assert level(Condition(2.8, limit=1.5), stricter) == "band"
    assert level(Condition(3.1, limit=1.5), stricter) == "breach"
    assert level(Condition(3.1, limit=1.5, holds=False), stricter) == "band"


def test_firing_under_a_silence_is_recorded_silenced_and_announced_when_it_ends():
    polls, _ = drive([2.0, 2.0, 2.0, 2.0], silenced=[True, True, True, False])
    assert polls == [[], [("firing", True)], [], [("firing", False)]]


def test_an_alert_never_announced_resolves_silenced():
    polls, _ = drive([2.0, 2.0, 1.0, 1.0], silenced=[True, True, False, False])
    assert polls == [[], [("firing", True)], [], [("resolved", True)]]


def test_a_silence_that_ends_while_the_alert_clears_announces_nothing():
    polls, _ = drive([2.0, 2.0, 1.0, 1.0], silenced=[True, True, True, False])
    assert polls[2:] == [[], [("resolved", True)]]


def firing(announced=True) -> AlertState:
    return AlertState("firing", T0, held_polls=2, announced=announced, fired_at=T0)


def test_a_dropped_table_resolves_at_once_saying_so():
    outcome = evaluate({KEY: firing()}, {}, {KEY: SKEW}, T0, gone={KEY: "shop.orders was dropped"})
    [transition] = outcome.transitions
    assert (transition.kind, transition.silenced) == ("resolved", False)
    assert transition.message == "shop.orders was dropped"
    assert outcome.states[KEY].state == "resolved"


def test_a_pending_alert_of_a_dropped_table_goes_away_quietly():
    pending = AlertState("pending", T0, held_polls=1)
    outcome = evaluate({KEY: pending}, {}, {KEY: SKEW}, T0, gone={KEY: "dropped"})
    assert outcome.transitions == [] and outcome.states == {KEY: None}


def test_a_rule_switched_off_resolves_its_firing_alert():
    off = Rule("skew", enabled=False)
    outcome = evaluate({KEY: firing()}, {KEY: Condition(2.0, limit=1.5)}, {KEY: off}, T0)
    assert [(t.kind, t.message) for t in outcome.transitions] == [("resolved", RULE_OFF)]


def test_editing_a_threshold_of_a_firing_alert_sends_nothing():
    edited = Rule("skew", threshold=1.8)
    outcome = evaluate({KEY: firing()}, {KEY: Condition(2.0, limit=1.5)}, {KEY: edited}, T0)
    assert outcome.transitions == []
    assert outcome.states[KEY].threshold == 1.8


def test_an_open_alert_without_a_condition_is_clear():
    once = evaluate({KEY: firing()}, {}, {KEY: SKEW}, T0)
    assert once.transitions == [] and once.states[KEY].clear_polls == 1
    twice = evaluate({KEY: once.states[KEY]}, {}, {KEY: SKEW}, T0)
    assert [t.kind for t in twice.transitions] == ["resolved"]


def test_transitions_carry_the_rule_recipients():
    rule = Rule("skew", for_polls=1, recipients="dba@example.com")
    outcome = evaluate({}, {KEY: Condition(2.0, limit=1.5)}, {KEY: rule}, T0)
    assert [t.recipients for t in outcome.transitions] == ["dba@example.com"]


# -- invariants over random sequences --------------------------------------------------

LIMIT, CLEAR = 10.0, 9.0  # threshold, and the clear threshold at the default 0.9
values = st.one_of(
    st.floats(min_value=0, max_value=20, allow_nan=False),
    st.sampled_from([LIMIT, CLEAR, 9.5, 9.999, 10.001]),  # at and around the edges
    st.none(),
)


@st.composite
def histories(draw):
    n = draw(st.integers(min_value=1, max_value=40))
    return (
        draw(st.integers(min_value=1, max_value=5)),
        draw(st.lists(values, min_size=n, max_size=n)),
        draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        draw(st.lists(st.booleans(), min_size=n, max_size=n)),
    )


def classify(value, holds) -> str:
    if value is None or value < CLEAR:
        return "clear"
    return "breach" if value >= LIMIT and holds else "band"


@settings(max_examples=500, deadline=None)
@given(histories())
def test_invariants_hold_for_any_sequence(history):
    for_polls, sequence, silences, holds = history
    rule = Rule("skew", for_polls=for_polls, clear_ratio=0.9)
    polls, states = drive(sequence, rule=rule, limit=LIMIT, silenced=silences, holds=holds)
    levels = [classify(v, h) for v, h in zip(sequence, holds, strict=True)]
    episode_fired = episode_announced = False
    for i, transitions in enumerate(polls):
        fired_before = episode_fired
        assert len(transitions) <= 1  # one key: at most one transition per poll
        for kind, silenced in transitions:
            run = levels[max(0, i - for_polls + 1) : i + 1]
            if kind == "firing":
                if not episode_fired:
                    # Nothing fires before for_polls consecutive breaches.
                    assert len(run) == for_polls and set(run) == {"breach"}
                    assert silenced == silences[i]
                else:
                    # The late announcement of an alert that fired under a silence.
                    assert not episode_announced and not silenced and not silences[i]
                episode_fired = True
                episode_announced = episode_announced or not silenced
            else:
                # No resolve without a firing; announced only if the firing was.
                assert episode_fired and (silenced or episode_announced)
                assert len(run) == for_polls and set(run) == {"clear"}
                episode_fired = episode_announced = False
        # No two notifications for one firing: at most one unsilenced firing per episode.
        # Inside the band nothing fires or resolves, and a firing alert stays firing.
        if levels[i] == "band":
            assert all(kind == "firing" and fired_before for kind, _ in transitions)
            before = states[i - 1] if i else "ok"
            assert states[i] == ("firing" if before == "firing" else "ok")


@settings(max_examples=200, deadline=None)
@given(histories())
def test_a_sequence_that_stays_in_the_band_sends_nothing(history):
    for_polls, sequence, _, _ = history
    rule = Rule("skew", for_polls=for_polls, clear_ratio=0.9)
    band = [CLEAR + (LIMIT - CLEAR) * ((i * 7919) % 97) / 97 for i in range(len(sequence))]
    # Fire first, then hover in the band: nothing more, whatever for_polls is.
    polls, states = drive([LIMIT + 1] * for_polls + band, rule=rule, limit=LIMIT)
    assert polls[for_polls - 1] == [("firing", False)]
    assert all(p == [] for p in polls[for_polls:])
    assert set(states[for_polls - 1 :]) == {"firing"}
