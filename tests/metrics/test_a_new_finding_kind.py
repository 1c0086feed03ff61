"""A finding kind declared once (`partdash.health.kinds`) flows everywhere with no other
edit: a throwaway kind registered here is found by a table's analysis, stored, ranked in
the maintenance plan at its urgency, offered as an alert rule with its defaults (the API
takes an override of it), judged as a condition, and exported on /metrics: the recipe
"Add a finding kind" of docs/development.md, followed in a test."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from partdash.alerts.conditions import table_conditions
from partdash.alerts.models import AlertRule, rule_choices
from partdash.alerts.rules import catalogue
from partdash.health.alerting import Condition, Key
from partdash.health.findings import Finding
from partdash.health.fixes import Fix
from partdash.health.kinds import AlertSpec, Figure, FindingKind, Observed, register, unregister
from partdash.health.partitions import PartitionState
from partdash.metrics.analysis import PollConditions, table_health
from partdash.metrics.models import PartitionedTable
from partdash.prometheus.exposition import exposition
from tests import builders
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

NAME = "empty_partitions"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _empty(seen: Observed) -> int:
    return sum(1 for state in seen.states if state.rows == 0)


def _finding(seen: Observed) -> Finding | None:
    empty = _empty(seen)
    if empty < 3:
        return None
    return Finding(NAME, "warning", 10.0 + empty, f"{empty} empty partitions")


def _condition(health, finding, settings) -> Condition:
    count = (health.get(NAME) or {}).get("count") or 0
    return Condition(
        count,
        limit=3,
        holds=finding is not None,
        message=f"{count} empty partitions",
        fix=(finding or {}).get("fix"),
    )


THROWAWAY = FindingKind(
    NAME,
    "Empty partitions",
    urgency=1.5,  # after runway (1), before retention (2)
    analyse=_finding,
    fix=lambda table, _horizon: Fix(f"Merge the empty partitions of {table.name}."),
    alert=AlertSpec(
        "table", "partitions holding no row", "partitions", {"for_polls": 5}, _condition
    ),
    figures=(
        Figure(
            "table_empty_partitions",
            "Partitions holding no row.",
            lambda health: (health.get(NAME) or {}).get("count"),
        ),
    ),
    stores=lambda seen: {"count": _empty(seen)},
)


@pytest.fixture
def throwaway():
    register(THROWAWAY)
    try:
        yield THROWAWAY
    finally:
        unregister(NAME)


def analysed_table(server, name: str, rows: list[int]) -> PartitionedTable:
    """A HASH table as its analysis leaves it, stored."""
    table = builders.table(server, "shop", name, method="HASH", expression="`id`")
    states = [PartitionState(f"p{i}", ordinal=i, rows=r) for i, r in enumerate(rows)]
    health = table_health(
        table,
        PollConditions(now=NOW, page_size=16384, buffer_pool=1 << 30),
        states=states,
        recents=[None] * len(states),
    )
    table.health, table.score = health, health["score"]
    table.analysed_at = table.definitions_read_at = timezone.now() - timedelta(minutes=5)
    table.save()
    return table


def test_a_registered_kind_is_found_stored_and_fixed_by_the_analysis(throwaway):
    table = analysed_table(builders.server("db1"), "sparse", [0, 0, 0, 5000])
    found = [f for f in table.health["findings"] if f["kind"] == NAME]
    assert [(f["severity"], f["message"]) for f in found] == [("warning", "3 empty partitions")]
    assert found[0]["fix"]["advice"] == "Merge the empty partitions of sparse."
    assert table.health[NAME] == {"count": 3}
    assert not [
        f
        for f in analysed_table(builders.server("db2"), "full", [10, 10, 10, 10]).health["findings"]
        if f["kind"] == NAME
    ]


def test_it_is_ranked_in_the_plan_at_its_urgency(throwaway, viewer_api):
    db1 = builders.server("db1")
    analysed_table(db1, "sparse", [0, 0, 0, 5000])
    ranked = {"runway": "soon", "retention": "old"}
    for kind, name in ranked.items():
        advice = {"advice": "Do it.", "sql": None, "safety": None, "rows": None, "bytes": None}
        finding = {
            "kind": kind,
            "severity": "warning",
            "score": 5.0,
            "message": kind,
            "fix": advice,
        }
        builders.table(
            db1,
            "shop",
            name,
            health={"findings": [finding]},
            score=5.0,
            analysed_at=timezone.now(),
            definitions_read_at=timezone.now(),
        )
    plan = viewer_api.get("/api/v1/maintenance-plan/").json()
    items = [(i["kind"], i["table"]) for i in plan["servers"][0]["items"]]
    assert items[:3] == [("runway", "soon"), (NAME, "sparse"), ("retention", "old")]


def test_its_rule_is_a_choice_with_its_defaults_and_takes_overrides(throwaway, operator):
    assert (NAME, "Empty partitions") in rule_choices()
    rule = catalogue()[NAME]
    assert (rule.subject, rule.finding, rule.defaults.for_polls) == ("table", NAME, 5)
    AlertRule(rule=NAME, threshold=4).full_clean()  # the model's validator takes it
    response = token_client(operator).post(
        "/api/v1/alert-rules/", {"rule": NAME, "threshold": 4}, format="json"
    )
    assert response.status_code == 201, response.content
    assert AlertRule.objects.get().rule == NAME


def test_an_unregistered_kind_is_refused_as_a_rule_in_one_line(operator):
    response = token_client(operator).post(
        "/api/v1/alert-rules/", {"rule": NAME, "threshold": 4}, format="json"
    )
    assert response.status_code == 400
    assert NAME in str(response.json()["rule"])


def test_its_condition_is_judged_from_the_stored_health(throwaway):
    table = analysed_table(builders.server("db1"), "sparse", [0, 0, 0, 5000])
    condition = table_conditions(table)[Key(NAME, "shop", "sparse")]
    assert (condition.holds, condition.value, condition.message) == (
        True,
        3,
        "3 empty partitions",
    )


def test_its_family_is_on_metrics(throwaway):
    analysed_table(builders.server("db1"), "sparse", [0, 0, 0, 5000])
    families = {
        family.name: family for family in text_string_to_metric_families(exposition().decode())
    }
    samples = families["partdash_table_empty_partitions"].samples
    assert [(s.labels, s.value) for s in samples] == [
        ({"server": "db1", "schema": "shop", "table": "sparse"}, 3.0)
    ]
