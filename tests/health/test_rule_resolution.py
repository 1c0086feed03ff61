"""Which rule is in force for an alert (`partdash.health.alert_rules`): the most specific
override wins, figures fall back to less specific ones, recipients to ALERT_EMAILS; and
which silences hold it."""

from datetime import UTC, datetime, timedelta

from partdash.health.alert_rules import (
    Override,
    SilenceScope,
    recipients_text,
    rule_in_force,
    silenced_keys,
)
from partdash.health.alerting import Key, Rule

SKEW = Rule("skew", threshold=None, for_polls=2)
ORDERS = Key("skew", "shop", "orders")
USERS = Key("skew", "shop", "users")
SERVER, OTHER = 1, 2
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def in_force(overrides, key=ORDERS, server=SERVER, tags=("prod",), default="ops@example.com"):
    return rule_in_force(SKEW, overrides, server, tags, key, default)


def test_without_overrides_the_builtin_rule_holds_with_the_default_recipients():
    rule = in_force([])
    assert (rule.enabled, rule.threshold, rule.for_polls) == (True, None, 2)
    assert rule.recipients == "ops@example.com"


def test_a_table_level_override_switches_the_rule_off_for_that_table_alone():
    skewed_by_design = Override("skew", enabled=False, schema="shop", table="orders", id=1)
    assert not in_force([skewed_by_design]).enabled
    assert in_force([skewed_by_design], key=USERS).enabled
    assert in_force([skewed_by_design], key=Key("hotspot", "shop", "orders")).enabled


def test_the_most_specific_override_wins():
    overrides = [
        Override("skew", threshold=2.0, id=1),  # everywhere
        Override("skew", threshold=3.0, server=SERVER, id=2),
        Override("skew", threshold=4.0, tag="prod", id=3),
        Override("skew", threshold=5.0, schema="shop", id=4),
        Override("skew", threshold=6.0, schema="shop", table="orders", id=5),
    ]
    assert in_force(overrides).threshold == 6.0
    assert in_force(overrides, key=USERS).threshold == 5.0
    assert in_force(overrides, key=Key("skew", "crm", "users")).threshold == 4.0
    assert in_force(overrides, key=Key("skew", "crm", "users"), tags=()).threshold == 3.0
    assert in_force(overrides, key=Key("skew", "crm", "x"), server=OTHER, tags=()).threshold == 2.0


def test_an_override_of_another_server_or_tag_does_not_match():
    overrides = [
        Override("skew", enabled=False, server=OTHER, id=1),
        Override("skew", enabled=False, tag="staging", id=2),
    ]
    assert in_force(overrides).enabled


def test_figures_left_unset_fall_back_to_less_specific_overrides():
    overrides = [
        Override("skew", threshold=2.5, for_polls=5, recipients="team@example.com", id=1),
        Override("skew", severity="critical", schema="shop", table="orders", id=2),
    ]
    rule = in_force(overrides)
    assert (rule.threshold, rule.for_polls, rule.severity) == (2.5, 5, "critical")
    assert rule.recipients == "team@example.com"


def test_a_disabled_general_rule_is_overridden_by_an_enabled_specific_one():
    overrides = [
        Override("skew", enabled=False, id=1),
        Override("skew", enabled=True, tag="prod", id=2),
    ]
    assert in_force(overrides).enabled
    assert not in_force(overrides, tags=()).enabled


def test_recipients_per_server_or_tag_then_alert_emails():
    overrides = [
        Override("skew", recipients="tag-team@example.com", tag="prod", id=1),
        Override("skew", recipients="db1-owner@example.com", server=SERVER, id=2),
    ]
    assert in_force(overrides).recipients == "tag-team@example.com"  # tag over server
    assert in_force(overrides, tags=()).recipients == "db1-owner@example.com"
    assert in_force(overrides, server=OTHER, tags=()).recipients == "ops@example.com"
    assert in_force([], default="").recipients == ""


def test_recipients_are_spelled_one_way():
    assert recipients_text("b@x.org; a@x.org,  b@x.org\nc@x.org") == "a@x.org,b@x.org,c@x.org"


def test_equally_specific_overrides_the_older_wins():
    overrides = [
        Override("skew", threshold=9.0, tag="b", id=7),
        Override("skew", threshold=8.0, tag="a", id=3),
    ]
    assert in_force(overrides, tags=("a", "b")).threshold == 8.0


def test_silences_match_by_server_schema_table_and_rule_while_they_last():
    hour = timedelta(hours=1)
    silences = [
        SilenceScope(NOW - hour, NOW + hour, server=SERVER, schema="shop", table="orders"),
        SilenceScope(NOW - hour, NOW + hour, rule="unreachable"),
        SilenceScope(NOW - 2 * hour, NOW - hour, server=SERVER),  # over
    ]
    keys = [ORDERS, USERS, Key("unreachable"), Key("pressure")]
    assert silenced_keys(silences, SERVER, keys, NOW) == {ORDERS, Key("unreachable")}
    assert silenced_keys(silences, OTHER, keys, NOW) == {Key("unreachable")}
    assert silenced_keys(silences, SERVER, keys, NOW + 2 * hour) == frozenset()


def test_a_schema_silence_never_matches_the_servers_own_alerts():
    silence = SilenceScope(NOW, NOW + timedelta(hours=1), schema="shop")
    assert silenced_keys([silence], SERVER, [Key("unreachable"), ORDERS], NOW) == {ORDERS}
