"""The `pruning` finding (the pure `partdash.health.unpruned`): statements that read
every partition of a table, worst first by their share of its rows examined and time,
with advice naming the partitioning column and, where most of them filter on another
column, the wrong key; its alert condition, stored health and /metrics family."""

from datetime import UTC, datetime

import pytest

from partdash.health import kinds
from partdash.health.findings import with_fix
from partdash.health.fixes import TableFacts
from partdash.health.kinds import Observed
from partdash.health.pruning import StatementVerdict, Verdict
from partdash.health.unpruned import pruning_finding, stored

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
FACTS = TableFacts("shop", "orders", "RANGE", "to_days(`d`)", [], NOW)
SETTINGS = {"PARTDASH_ALERT_PRUNING_SHARE": 0.1, "PARTDASH_ALERT_PRUNING_CRITICAL_SHARE": 0.5}


def statement(digest, prunes, rows, seconds, filters=(), calls=100, text=None):
    read = {"all": 61, "one": 1, "some": None, "unknown": None}[prunes]
    return StatementVerdict(
        digest,
        text or f"SELECT * FROM `orders` WHERE `{(filters or ('x',))[0]}` = ?",
        calls,
        rows,
        seconds,
        Verdict(prunes, read, 61, "test", tuple(filters)),
    )


def observed(*statements):
    return Observed(FACTS, [], statements=list(statements))


def found(*statements):
    finding = pruning_finding(observed(*statements))
    return None if finding is None else with_fix(finding, FACTS)


def test_a_table_whose_statements_all_prune_has_no_finding():
    assert found(statement("a", "one", 10, 1.0, ["d"]), statement("b", "some", 900, 9.0)) is None
    assert found() is None
    assert pruning_finding(Observed(FACTS, [])) is None  # never read


def test_statements_reading_every_partition_are_named_worst_first():
    finding = found(
        statement("by-day", "one", 1_000, 1.0, ["d"]),
        statement("by-status", "all", 1_000, 4.0, ["status"]),
        statement("by-customer", "all", 8_000, 5.0, ["customer"]),
    )
    assert finding.kind == "pruning"
    assert finding.severity == "critical"  # 90% of the rows examined
    assert finding.message.startswith(
        "2 statement(s) read all 61 partitions: 90% of the rows examined on the table, 90% of "
        "its statement time; worst: SELECT * FROM `orders` WHERE `customer` = ?"
    )
    advice = finding.fix.advice
    assert finding.fix.sql is None
    assert "partitioned on `d`" in advice
    assert "add an equality, an IN list or a range on `d` to the statements" in advice
    assert advice.index("`customer` = ?") < advice.index("`status` = ?")
    assert "wrong key" not in advice  # no one other column for most of them


def test_most_filtering_on_another_column_says_the_key_may_be_wrong():
    finding = found(
        statement("a", "all", 500, 1.0, ["customer", "status"]),
        statement("b", "all", 500, 1.0, ["customer"]),
        statement("c", "all", 500, 1.0, ["total"]),
        statement("d", "one", 500, 1.0, ["d"]),
    )
    assert (
        "Most of them filter on `customer` instead: the table may be partitioned on the "
        "wrong key." in finding.fix.advice
    )


@pytest.mark.parametrize(
    ("rows", "seconds", "severity"),
    [
        (100, 0.1, None),  # under 1% of both: a rounding error, no finding
        (5_000, 0.1, "warning"),  # 33% of the rows examined
        (100, 30.0, "critical"),  # 75% of the time
    ],
)
def test_severity_by_the_larger_share_of_rows_and_time(rows, seconds, severity):
    finding = found(
        statement("scan", "all", rows, seconds, ["status"]),
        statement("day", "one", 10_000, 10.0, ["d"]),
    )
    assert (finding.severity if finding else None) == severity


def test_unknown_and_some_count_in_the_totals_not_as_unpruned():
    statements = [
        statement("scan", "all", 100, 1.0, ["status"]),
        statement("routine", "unknown", 900, 9.0),
        statement("range", "some", 1_000, 10.0, ["d"]),
    ]
    health = stored(observed(*statements))
    assert health["unpruned"] == 1 and health["statements"] == 3
    assert health["rows_share"] == pytest.approx(0.05)
    assert health["time_share"] == pytest.approx(0.05)
    assert [w["digest"] for w in health["worst"]] == ["scan"]
    assert stored(Observed(FACTS, [])) is None


def test_a_statement_never_called_is_not_counted():
    assert found(statement("idle", "all", 0, 0.0, calls=0)) is None


def test_a_table_of_one_partition_has_nothing_to_prune():
    only = StatementVerdict(
        "scan", "SELECT * FROM `orders`", 5, 100, 1.0, Verdict("all", 1, 1, "", ())
    )
    assert found(only) is None


def test_long_digest_texts_are_shortened_in_words():
    text = "SELECT " + ", ".join(f"`c{i}`" for i in range(200)) + " FROM `orders`"
    finding = found(statement("wide", "all", 100, 1.0, text=text))
    assert "..." in finding.message and len(finding.message) < 400


def kind():
    declared = kinds.kind("pruning")
    assert declared is not None and declared.alert is not None
    return declared


def test_the_alert_judges_the_share_against_the_settings():
    health = {"pruning": {"share": 0.3, "unpruned": 2}}
    condition = kind().alert.judge(health, {"message": "m", "severity": "warning"}, SETTINGS)
    assert (condition.value, condition.limit, condition.holds) == (0.3, 0.1, True)
    assert condition.severity == "warning"
    critical = kind().alert.judge({"pruning": {"share": 0.6}}, {"message": "m"}, SETTINGS)
    assert critical.severity == "critical"
    clear = kind().alert.judge({"pruning": {"share": 0.0}}, None, SETTINGS)
    assert (clear.value, clear.holds) == (0.0, False)
    assert kind().alert.read_names == tuple(SETTINGS)


def test_the_metrics_family_counts_the_unpruned_digests():
    (figure,) = kind().figures
    assert figure.name == "table_unpruned_statements"
    assert figure.value({"pruning": {"unpruned": 2}}) == 2
    assert figure.value({"pruning": None}) is None
    assert figure.value({}) is None


def test_a_hash_table_is_told_to_add_an_equality():
    facts = TableFacts("shop", "carts", "HASH", "`id`", [], NOW)
    seen = Observed(facts, [], statements=[statement("owner", "all", 100, 1.0, ["owner"])])
    advice = pruning_finding(seen).fix.advice
    assert "partitioned on `id`: add an equality or an IN list on `id`" in advice
    assert "Most of them filter on `owner` instead" in advice
