"""The finding-kind registry (`partdash.health.kinds`): the built-in kinds in the plan's
order, and declarations it refuses in one line."""

import pytest

from partdash.health.kinds import FindingKind, register, registered, urgency_order


def test_the_built_in_kinds_rank_in_the_order_a_dba_fixes_them():
    assert urgency_order() == (
        "runway",
        "retention",
        "drift",
        "fragmentation",
        "staleness",
        "pressure",
        "compression",
        "skew",
        "pruning",
        "hotspot",
    )
    assert [k.name for k in registered() if k.analyse is None] == ["pressure", "drift"]


def test_a_kind_declared_twice_is_refused():
    with pytest.raises(ValueError, match="'skew' is already registered"):
        register(FindingKind("skew", "Skew again", urgency=0))


@pytest.mark.parametrize("name", ["", "Skew", "a name", "x" * 21, "1st"])
def test_a_name_the_alert_tables_cannot_hold_is_refused(name):
    with pytest.raises(ValueError, match="1 to 20 lowercase letters"):
        register(FindingKind(name, "Bad", urgency=0))
    assert name not in [k.name for k in registered()]
