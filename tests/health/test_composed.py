"""One table's fixes composed into one sequence (partdash.health.composed), on plain
values: the statements partdash writes for runway, drift, retention, skew, staleness and
fragmentation, as the issue found them colliding."""

from partdash.health.composed import Part, Proposal, bound_key, compose

RUNWAY = Proposal(
    "runway",
    "critical",
    "runway",
    "ALTER TABLE `s`.`t` REORGANIZE PARTITION `pmax` INTO (\n"
    "  PARTITION `p20261129` VALUES LESS THAN (TO_DAYS('2026-11-30')),\n"
    "  PARTITION `p20261130` VALUES LESS THAN (TO_DAYS('2026-12-01')),\n"
    "  PARTITION `pmax` VALUES LESS THAN MAXVALUE\n)",
    "copies",
)
DRIFT = Proposal(
    "drift",
    "warning",
    "drift",
    "ALTER TABLE `s`.`t` REORGANIZE PARTITION `pmax` INTO (PARTITION `p20261128` VALUES "
    "LESS THAN (740314), PARTITION `p20261129` VALUES LESS THAN (740315), "
    "PARTITION `pmax` VALUES LESS THAN MAXVALUE)",
    "copies",
)
RETENTION = Proposal(
    "retention",
    "warning",
    "retention",
    "ALTER TABLE `s`.`t` DROP PARTITION `p20261101`",
    "destroys",
)
STALE = Proposal(
    "staleness", "warning", "stale", "ALTER TABLE `s`.`t` ANALYZE PARTITION `p20261127`", "instant"
)
LAYOUT = [
    Part("p20261101", "740287", 10, 100),
    Part("p20261127", "740313", 20, 200),
    Part("pmax", "MAXVALUE", 5, 50),
]


def test_to_days_and_the_servers_integer_compare_alike():
    assert bound_key("VALUES LESS THAN (TO_DAYS('2026-11-30'))") == bound_key("740315")
    assert bound_key("VALUES LESS THAN MAXVALUE") > bound_key("740315")


def test_runway_and_drift_reorganizing_one_catchall_become_one_statement():
    fix = compose("s", "t", [RUNWAY, DRIFT, RETENTION, STALE], LAYOUT)
    sections = [s.section for s in fix.statements]
    assert sections == ["copies", "statistics", "destroys"], fix
    reorganize = fix.statements[0].sql
    assert reorganize.count("PARTITION `p20261129`") == 1
    assert reorganize.index("`p20261128`") < reorganize.index("`p20261129`")
    assert reorganize.index("`p20261130`") < reorganize.index("`pmax` VALUES")
    assert {p.kind for p in fix.statements[0].clears} == {"runway", "drift"}
    assert fix.statements[0].rows == 5
    assert fix.statements[1].sql == "ALTER TABLE `s`.`t` ANALYZE PARTITION ALL"
    assert [p.kind for p in fix.statements[1].clears] == ["staleness"]
    assert fix.statements[2].sql == RETENTION.sql
    assert fix.refused == ()


def test_a_name_wanted_at_two_bounds_refuses_the_later_fix():
    other = Proposal(
        "drift",
        "warning",
        "drift",
        "ALTER TABLE `s`.`t` REORGANIZE PARTITION `pmax` INTO (PARTITION `p20261129` "
        "VALUES LESS THAN (740400), PARTITION `pmax` VALUES LESS THAN MAXVALUE)",
        "copies",
    )
    fix = compose("s", "t", [RUNWAY, other], LAYOUT)
    assert [s.sql for s in fix.statements if s.section == "copies"] == [RUNWAY.sql]
    assert [r.proposal.kind for r in fix.refused] == ["drift"]
    assert "another bound" in fix.refused[0].reason


def test_drift_and_skew_adding_hash_partitions_become_the_larger_count():
    drift = Proposal(
        "drift",
        "warning",
        "d",
        "ALTER TABLE `s`.`h` ADD PARTITION (PARTITION `p2`, PARTITION `p3`)",
        "copies",
    )
    skew = Proposal(
        "skew",
        "warning",
        "k",
        "ALTER TABLE `s`.`h` ADD PARTITION (PARTITION `p2`, PARTITION `p3`, PARTITION `p4`)",
        "copies",
    )
    fix = compose("s", "h", [drift, skew], [Part("p0", None, 9), Part("p1", None, 1)], spread=True)
    (add, analyze) = fix.statements
    assert add.sql == skew.sql and {p.kind for p in add.clears} == {"drift", "skew"}
    assert add.rows == 10 and analyze.section == "statistics"


def test_a_rebuild_of_a_partition_retention_drops_is_folded_into_the_drop():
    rebuild = Proposal(
        "fragmentation",
        "warning",
        "f",
        "ALTER TABLE `s`.`t` REBUILD PARTITION `p20261101`, `p20261127`",
        "copies",
    )
    fix = compose("s", "t", [RETENTION, rebuild], LAYOUT)
    assert [s.sql for s in fix.statements] == [
        "ALTER TABLE `s`.`t` REBUILD PARTITION `p20261127`",
        "ALTER TABLE `s`.`t` ANALYZE PARTITION ALL",
        RETENTION.sql,
    ]


def test_a_statement_that_would_fail_on_the_layout_is_refused():
    add = Proposal(
        "runway",
        "critical",
        "r",
        "ALTER TABLE `s`.`t` ADD PARTITION (PARTITION `p20261201` VALUES LESS THAN (740400))",
        "instant",
    )
    gone = Proposal(
        "retention", "warning", "x", "ALTER TABLE `s`.`t` DROP PARTITION `p1999`", "destroys"
    )
    fix = compose("s", "t", [add, gone], LAYOUT)
    assert fix.statements == ()
    reasons = {r.proposal.kind: r.reason for r in fix.refused}
    assert "MAXVALUE" in reasons["runway"] and "does not exist" in reasons["retention"]


def test_a_rebuild_of_a_hash_table_being_rehashed_is_folded_into_the_add():
    add = Proposal(
        "skew", "warning", "k", "ALTER TABLE `s`.`h` ADD PARTITION (PARTITION `p2`)", "copies"
    )
    rebuild = Proposal(
        "fragmentation", "warning", "f", "ALTER TABLE `s`.`h` REBUILD PARTITION `p0`", "copies"
    )
    fix = compose("s", "h", [add, rebuild], [Part("p0", None, 9), Part("p1", None, 1)], True)
    assert [s.sql for s in fix.statements] == [add.sql, "ALTER TABLE `s`.`h` ANALYZE PARTITION ALL"]
    assert {p.kind for p in fix.statements[0].clears} == {"skew", "fragmentation"}
    assert fix.statement_of(rebuild) == 0


def test_analyze_without_copies_stays_instant_and_skips_dropped_partitions():
    analyze = Proposal(
        "staleness",
        "warning",
        "s",
        "ALTER TABLE `s`.`t` ANALYZE PARTITION `p20261101`, `p20261127`",
        "instant",
    )
    fix = compose("s", "t", [RETENTION, analyze], LAYOUT)
    assert [(s.section, s.sql) for s in fix.statements] == [
        ("instant", "ALTER TABLE `s`.`t` ANALYZE PARTITION `p20261127`"),
        ("destroys", RETENTION.sql),
    ]
