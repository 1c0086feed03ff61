"""The findings and scores that rank tables across the fleet (pure functions)."""

from datetime import date

import pytest

from partdash.health import findings as rules
from partdash.health.hotspots import HotPartition, Hotspots
from partdash.health.runway import Runway, warning_days
from partdash.health.skew import Skew, SkewFinding


def runway(days_left, catchall_rows=0) -> Runway:
    return Runway(days_left, catchall_rows, 0, date(2026, 12, 1), None, None, "date")


def test_rows_in_the_catch_all_are_critical_and_outrank_a_runway_warning():
    spilled = rules.runway_finding(runway(0, catchall_rows=1200))
    soon = rules.runway_finding(runway(10))
    assert spilled.severity == "critical" and "1,200 rows" in spilled.message
    assert soon.severity == "warning" and "10 days left" in soon.message
    assert spilled.score > soon.score


@pytest.mark.parametrize(
    ("days", "severity"),
    [
        (0, "critical"),
        (2, "critical"),
        (2.9, "critical"),
        (3, "warning"),  # docs/pages.md: under 3 days is critical
        (14, "warning"),
        (15, None),
        (None, None),
    ],
)
def test_runway_thresholds(days, severity):
    finding = rules.runway_finding(runway(days))
    assert (finding.severity if finding else None) == severity


def spanned(days_left, span_days) -> Runway:
    warning = warning_days(span_days)
    return Runway(
        days_left,
        None,
        0,
        date(2027, 1, 1),
        None,
        None,
        "date",
        span_days=span_days,
        warning_days=warning,
    )


@pytest.mark.parametrize(
    ("span", "warning"), [(1, 14), (7, 14), (31, 31), (42, 42), (92, 45), (365, 45), (None, 14)]
)
def test_the_runway_warning_comes_one_span_ahead_up_to_six_weeks(span, warning):
    assert rules.runway_finding(spanned(warning, span)).severity == "warning"
    assert rules.runway_finding(spanned(warning + 1, span)) is None


def test_a_yearly_table_34_days_before_its_bound_warns():
    finding = rules.runway_finding(spanned(34, 365))
    assert finding.severity == "warning"
    assert finding.message.startswith("34 days left before")


@pytest.mark.parametrize(
    ("days", "words"),
    [
        (1, "1 day"),
        (1.0, "1 day"),
        (2, "2 days"),
        (2.2, "2.2 days"),
        (485.783, "485.8 days"),
        (1200, "1,200 days"),
        (0.96, "1 day"),
    ],
)
def test_day_counts_read_as_english(days, words):
    assert rules.day_count(days) == words


def test_one_day_left_is_singular_in_the_finding():
    assert rules.runway_finding(runway(1)).message.startswith("1 day left before")


def skew(ratio: float, is_finding: bool) -> SkewFinding:
    return SkewFinding(Skew(ratio, 0.5, 0.3), ["p0", "p1"], is_finding, "r", "rows", "p0", 1.5)


def test_skew_twice_past_its_limit_is_critical():
    assert rules.skew_finding(skew(1.6, True)).severity == "warning"
    assert rules.skew_finding(skew(3.0, True)).severity == "critical"
    assert rules.skew_finding(skew(1.2, False)) is None


def hot(source: str, *detail: HotPartition) -> Hotspots:
    names = list(dict.fromkeys(d.partition for d in detail))
    shares = {d.partition: d.share for d in detail if d.kind == "write"}
    reads = {d.partition: d.share for d in detail if d.kind == "read"}
    return Hotspots(source, shares, reads, names, source != "io", detail)


def test_a_hot_newest_range_partition_is_shown_but_not_raised():
    newest = hot("io", HotPartition("p2", "write", 0.95, 11, 12))
    assert rules.hotspot_finding(newest, "RANGE") is None
    raised = rules.hotspot_finding(newest, "HASH")
    assert raised.kind == "hotspot"
    assert raised.message == "p2 takes 95% of the writes (hot in 11 of 12 slots with writes)"


def test_writes_into_an_old_range_partition_are_raised_with_what_they_usually_mean():
    old = HotPartition("p20261028", "write", 0.98, 6, 6)
    raised = rules.hotspot_finding(hot("rows_changed", old), "RANGE", [old])
    assert (raised.kind, raised.severity) == ("hotspot", "warning")
    assert raised.message.startswith("p20261028 takes 98% of the rows changed (hot in 6 of 6")
    assert "not the partition new rows go to" in raised.message
    assert "old rows updated" in raised.message and "timestamps written wrong" in raised.message


def test_write_and_read_hotspots_are_reported_separately():
    write, read = HotPartition("p5", "write", 1.0, 4, 4), HotPartition("p2", "read", 0.8, 3, 5)
    both = hot("rows_changed", write, read)
    message = rules.hotspot_finding(both, "KEY").message
    assert message.startswith("p5 takes 100% of the rows changed (hot in 4 of 4 slots")
    assert "p2 takes 80% of the disk reads (hot in 3 of 5 slots with reads)" in message


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("disk", "disk writes (page flushes, standing in for rows changed)"),
        ("growth", "row growth (standing in for rows changed)"),
    ],
)
def test_a_hotspot_names_the_signal_that_stood_in_for_rows_changed(source, what):
    changes = hot(source, HotPartition("p1", "write", 0.7, 3, 3))
    assert f"p1 takes 70% of the {what}" in rules.hotspot_finding(changes, "HASH").message


def test_shares_without_a_persistent_partition_are_no_finding():
    burst = Hotspots("disk", {"p0": 1.0, "p1": 0.0}, {}, [], False)
    assert rules.hotspot_finding(burst, "HASH") is None


def test_scores_add_up_and_a_healthy_table_scores_zero():
    found = [rules.runway_finding(runway(2)), rules.skew_finding(skew(1.6, True))]
    assert rules.table_score(found) == pytest.approx(sum(f.score for f in found))
    assert rules.table_score([]) == 0


# -- server pressure -------------------------------------------------------------------


def test_partitions_past_a_limit_are_critical_and_near_it_a_warning():
    from partdash.health.findings import limit_finding
    from partdash.health.pressure import limit_pressure

    past = limit_finding(limit_pressure("table_open_cache", 64_000, "400"))
    assert (past.kind, past.severity) == ("pressure", "critical")
    assert past.message.startswith("64,000 partitions against table_open_cache=400 (16000%)")
    assert "raise table_open_cache" in past.message
    near = limit_finding(limit_pressure("open_files_limit", 850, 1000))
    assert near.severity == "warning" and "LimitNOFILE" in near.message
    assert past.score > near.score
    assert limit_finding(limit_pressure("table_open_cache", 700, 1000)) is None
    assert limit_finding(limit_pressure("table_open_cache", 700, None)) is None


def test_a_working_set_past_the_buffer_pool_is_critical():
    from partdash.health.findings import working_set_finding
    from partdash.health.pressure import written_against_pool

    found = working_set_finding(written_against_pool(900, 3, 1000))
    assert found.severity == "critical" and "raise innodb_buffer_pool_size" in found.message
    assert "3 written partitions take 90% of the buffer pool" in found.message
    assert working_set_finding(written_against_pool(500, 3, 1000)) is None
    assert working_set_finding(written_against_pool(500, 3, None)) is None


def test_a_table_without_a_catchall_is_told_inserts_will_fail():
    bare = Runway(2, None, 0, date(2027, 1, 1), None, None, "date", has_catchall=False)
    finding = rules.runway_finding(bare)
    assert finding.severity == "critical"
    assert finding.message == (
        "2 days left before inserts past the last bound (2027-01-01) fail: "
        "the table has no catch-all"
    )


def test_an_estimated_id_is_said_to_be_estimated():
    ids = Runway(1.5, None, 0, 4000, 100.0, None, "id", current_id=3850, current_id_from="rows")
    message = rules.runway_finding(ids).message
    assert message.startswith("1.5 days left before inserts past the last bound (4,000) fail")
    assert message.endswith("(the id reached estimated from the rows: no AUTO_INCREMENT read)")


def test_a_cyclic_table_has_no_runway_finding_whatever_its_catchall_holds():
    hourly = Runway(None, 5000, 0, None, None, None, None, reason="cyclic", cyclic="HOUR()")
    assert rules.runway_finding(hourly) is None
