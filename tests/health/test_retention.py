"""Which partitions are past a retention policy, the finding and the DROP PARTITION that
enforces it (the pure `partdash.health.retention`)."""

from dataclasses import replace
from datetime import date, timedelta

import pytest

from partdash.health.findings import retention_finding, with_fix
from partdash.health.fixes import TableFacts
from partdash.health.retention import (
    Policy,
    matches,
    matching_policy,
    names_case_sensitive,
    table_retention,
)
from tests.health.builders import NOW, MiB, monthly, ranged, table

DAYS_90 = Policy(1, "shop.events", keep_days=90)
KEEP_3 = Policy(2, "shop.orders", keep_partitions=3)

# NOW is 2026-03-10 12:00 UTC: 90 days back is 2025-12-10 12:00.
MONTHS = [
    (date(2025, 10, 1), 100),  # p0: all of September and before
    (date(2025, 11, 1), 200),  # p1
    (date(2025, 12, 1), 300),  # p2: its whole range ended 99.5 days ago
    (date(2026, 1, 1), 400),  # p3: holds days within the 90
    (date(2026, 4, 1), 500),
    (date(2026, 5, 1), 0),
]


def sized(states, data=MiB, index=MiB // 2):
    return [replace(s, data_bytes=data, index_bytes=index) for s in states]


def test_partitions_whose_whole_range_is_older_than_keep_days_are_past_it():
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", sized(monthly(MONTHS)), NOW)
    assert [p.name for p in found.overdue] == ["p0", "p1", "p2"]
    assert found.rows == 600
    assert found.bytes == 3 * (MiB + MiB // 2)
    assert found.oldest_age_days == pytest.approx((NOW.date() - date(2025, 10, 1)).days + 0.5)
    # p0 went past the policy 90 days after its bound (2025-10-01 + 90 days = 2025-12-30).
    assert found.overdue_days == pytest.approx(70.5)


def test_a_partition_is_kept_until_its_last_day_is_older_than_keep_days():
    exact = Policy(1, "*.*", keep_days=(NOW.date() - date(2025, 12, 1)).days)
    found = table_retention(exact, "RANGE", "to_days(`d`)", monthly(MONTHS), NOW)
    assert [p.name for p in found.overdue] == ["p0", "p1", "p2"]  # p2's bound + keep < now
    later = replace(exact, keep_days=exact.keep_days + 1)
    found = table_retention(later, "RANGE", "to_days(`d`)", monthly(MONTHS), NOW)
    assert [p.name for p in found.overdue] == ["p0", "p1"]


def test_nothing_is_past_a_policy_the_table_keeps():
    found = table_retention(
        Policy(1, "*", keep_days=365), "RANGE", "to_days(`d`)", monthly(MONTHS), NOW
    )
    assert found.overdue == () and found.reason is None
    assert retention_finding(found) is None


def test_range_columns_dates_and_datetimes_are_read():
    states = ranged(
        [("'2025-01-01'", 5), ("'2025-02-01 00:00:00'", 6), ("'2026-04-01'", 7), ("MAXVALUE", 0)]
    )
    found = table_retention(DAYS_90, "RANGE COLUMNS", "`d`", states, NOW)
    assert [p.name for p in found.overdue] == ["p0", "p1"]


def test_the_catchall_and_the_newest_bounded_partition_are_never_past_it():
    old = [(date(2020, 1, 1), 10), (date(2020, 2, 1), 20)]
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", monthly(old, catchall=5), NOW)
    assert [p.name for p in found.overdue] == ["p0"]


def test_leading_empty_guard_partitions_are_not_past_it():
    guard = [(date(1970, 1, 1), 0), *MONTHS]
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", monthly(guard), NOW)
    assert [p.name for p in found.overdue] == ["p1", "p2", "p3"]


def test_keep_days_on_an_id_range_says_why_it_does_not_apply():
    states = ranged([("1000", 10), ("2000", 10), ("MAXVALUE", 0)])
    found = table_retention(DAYS_90, "RANGE", "`id`", states, NOW)
    assert found.overdue == ()
    assert "keep_partitions" in found.reason


IDS = [("1000", 10), ("2000", 10), ("3000", 10), ("4000", 10), ("5000", 3), ("6000", 0)]


def test_keep_partitions_counts_back_from_the_newest_partition_holding_rows():
    states = ranged([*IDS, ("MAXVALUE", 0)])
    found = table_retention(KEEP_3, "RANGE", "`id`", states, NOW)
    # p4 holds the newest rows; p2..p4 are kept; p5 is empty and ahead, kept for free.
    assert [p.name for p in found.overdue] == ["p0", "p1"]
    assert found.rows == 20
    assert found.overdue_since == NOW and found.overdue_days == 0
    seen = NOW - timedelta(days=2)
    again = table_retention(KEEP_3, "RANGE", "`id`", states, NOW, overdue_seen_at=seen)
    assert again.overdue_days == 2


def test_keep_partitions_with_no_more_than_it_keeps_is_quiet():
    found = table_retention(Policy(1, "*", keep_partitions=5), "RANGE", "`id`", ranged(IDS), NOW)
    assert found.overdue == ()


@pytest.mark.parametrize("method", ["LIST", "LIST COLUMNS", "HASH", "KEY", "LINEAR HASH"])
def test_list_hash_and_key_tables_get_a_reason_and_no_finding(method):
    found = table_retention(KEEP_3, method, "`id`", table([5, 5, 5, 5, 5]), NOW)
    assert found.overdue == () and "RANGE tables only" in found.reason
    assert retention_finding(found) is None


def test_no_policy_no_retention():
    assert table_retention(None, "RANGE", "to_days(`d`)", monthly(MONTHS), NOW) is None


def test_subpartitions_are_summed_into_their_partition():
    states = [
        replace(s, subpartition=f"{s.name}sp{k}", rows=(s.rows or 0) // 2)
        for s in monthly(MONTHS)
        for k in range(2)
    ]
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", states, NOW)
    assert [p.name for p in found.overdue] == ["p0", "p1", "p2"]
    assert found.rows == 600


def facts(schema, name, retention):
    return TableFacts(
        schema, name, "RANGE", "to_days(`d`)", monthly(MONTHS), NOW, retention=retention
    )


def test_the_finding_names_the_partitions_and_its_fix_drops_them():
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", sized(monthly(MONTHS)), NOW)
    finding = with_fix(retention_finding(found), facts("shop", "events", found))
    assert finding.kind == "retention"
    assert finding.severity == "critical"  # 70 days overdue
    assert "3 partition(s)" in finding.message and "oldest p0" in finding.message
    assert finding.fix.sql == "ALTER TABLE `shop`.`events` DROP PARTITION `p0`, `p1`, `p2`"
    assert finding.fix.safety == "destroys"
    assert (finding.fix.rows, finding.fix.bytes) == (600, found.bytes)
    assert "Irreversible" in finding.fix.advice and "never runs it" in finding.fix.advice
    assert "EXCHANGE PARTITION" in finding.fix.advice


def test_half_a_day_overdue_is_a_warning():
    policy = Policy(1, "*", keep_days=(NOW.date() - date(2025, 10, 1)).days)
    found = table_retention(policy, "RANGE", "to_days(`d`)", monthly(MONTHS), NOW)
    assert [p.name for p in found.overdue] == ["p0"]
    assert found.overdue_days == 0.5
    assert retention_finding(found).severity == "warning"


@pytest.mark.parametrize(
    ("schema", "name"), [("a/b", "events"), ("shop", "ev/ents"), ("#mysql50#x", "events")]
)
def test_tables_partdash_writes_no_statement_for_get_advice_only(schema, name):
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", monthly(MONTHS), NOW)
    fix = with_fix(retention_finding(found), facts(schema, name, found)).fix
    assert fix.sql is None and fix.safety is None


def test_a_partition_name_that_cannot_be_quoted_gets_no_statement():
    states = [replace(s, name="p\x01" if s.name == "p0" else s.name) for s in monthly(MONTHS)]
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", states, NOW)
    fix = with_fix(retention_finding(found), facts("shop", "events", found)).fix
    assert fix.sql is None


def test_names_with_backquotes_are_quoted():
    states = [replace(s, name="p`0" if s.name == "p0" else s.name) for s in monthly(MONTHS)]
    found = table_retention(DAYS_90, "RANGE", "to_days(`d`)", states, NOW)
    fix = with_fix(retention_finding(found), facts("sh`op", "events", found)).fix
    assert fix.sql == "ALTER TABLE `sh``op`.`events` DROP PARTITION `p``0`, `p1`, `p2`"


@pytest.mark.parametrize(
    ("pattern", "schema", "name", "expected"),
    [
        ("shop.events_*", "shop", "events_2026", True),
        ("shop.events_*", "shop2", "events_x", False),
        ("*.audit", "any", "audit", True),
        ("audit", "any", "audit", True),
        ("*.audit", "any", "audit_log", False),
        ("s?op.[eo]*", "shop", "orders", True),
        # Schema and table are matched each alone, never as the dotted `schema.table`.
        ("s.*", "s.keep", "events", False),
        ("s.*", "s", "keep.events", True),
        ("s*.events", "s.keep", "events", True),
        ("s.keep*", "s", "keep", True),
        ("s.keep*", "s.keep", "x", False),
        ("*", "s.keep", "x", True),
    ],
)
def test_patterns_match_the_schema_and_the_table_each_alone(pattern, schema, name, expected):
    assert matches(pattern, schema, name) is expected
    assert matches(pattern, schema, name, case_sensitive=False) is expected


@pytest.mark.parametrize(
    ("pattern", "schema", "name"),
    [("s.events", "s", "Events"), ("shop.events_*", "Shop", "events_x"), ("S.*", "s", "t")],
)
def test_patterns_tell_case_apart_where_the_server_does(pattern, schema, name):
    assert matches(pattern, schema, name) is False  # lower_case_table_names=0
    assert matches(pattern, schema, name, case_sensitive=False) is True


def test_only_lower_case_table_names_0_and_unknown_tell_case_apart():
    assert [names_case_sensitive(v) for v in ("0", None, "1", "2")] == [True, True, False, False]


def test_the_most_specific_policy_wins():
    fleet_exact = Policy(1, "shop.events", keep_days=30)
    fleet_glob = Policy(2, "shop.*", keep_days=60)
    server_glob = Policy(3, "*.*", keep_days=90, server_scoped=True)
    server_exact = Policy(4, "shop.events", keep_days=10, server_scoped=True)
    assert matching_policy([fleet_glob, fleet_exact], "shop", "events") == fleet_exact
    assert matching_policy([fleet_exact, server_glob], "shop", "events") == server_glob
    assert matching_policy([server_glob, server_exact], "shop", "events") == server_exact
    assert matching_policy([fleet_glob], "other", "events") is None
    longer = Policy(5, "shop.events_*", keep_days=1)
    assert matching_policy([Policy(6, "shop.*", keep_days=2), longer], "shop", "events_a") == longer
