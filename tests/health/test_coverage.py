"""What a server's polls measure, said per signal: measured, or why not and the one
change that enables it (`partdash.health.coverage`), on plain values."""

from partdash.health.coverage import TABLESTATS_OFF, Blind, cache_needed, coverage, uncached

PS_OFF = Blind("performance_schema is OFF (per-partition I/O)", "performance_schema = ON")


def by_signal(entries):
    return {entry["signal"]: entry for entry in entries}


def test_the_cache_needed_holds_the_dictionary_with_half_again_in_hundreds():
    assert cache_needed(455) == 700
    assert cache_needed(64_000) == 96_000
    assert cache_needed(1) == 100
    assert cache_needed(10_000_000) == 2_097_152  # MariaDB's maximum: SET GLOBAL fails above


def test_a_cache_smaller_than_the_dictionary_names_both_and_the_set_global():
    blind = uncached(400, 455, 448)
    assert blind.enable == "SET GLOBAL table_definition_cache = 700"
    assert blind.why.startswith(
        "table_definition_cache holds 400, fewer than this server's 455 InnoDB tables, "
        "448 partitions among them: "
    )
    assert "dynamic" in blind.why


def test_write_hotspots_are_not_measured_with_neither_rows_changed_nor_disk_writes():
    writes = by_signal(coverage(uncached(400, 455), PS_OFF))["write_hotspots"]
    assert writes["measured"] is False
    assert writes["line"].startswith("write hotspots: not measured here. Why: rows changed")
    assert "(table_definition_cache holds 400, fewer than this server's 455" in writes["why"]
    assert "(performance_schema is OFF)" in writes["why"]
    assert "never for UPDATEs" in writes["why"]
    # The change a running server takes: the cache is dynamic, performance_schema is not.
    assert writes["enable"] == "SET GLOBAL table_definition_cache = 700"


def test_either_signal_measures_write_hotspots():
    assert by_signal(coverage(None, PS_OFF))["write_hotspots"]["measured"]
    measured = by_signal(coverage(TABLESTATS_OFF, None))
    assert measured["write_hotspots"] == {
        "signal": "write_hotspots",
        "label": "write hotspots",
        "measured": True,
        "why": None,
        "enable": None,
        "line": "write hotspots: measured",
    }
    assert (
        measured["rows_changed"]["enable"]
        == "PARTDASH_READ_TABLESTATS=auto in partdash's environment"
    )


def test_other_sources_not_read_follow_with_their_fix():
    grant = Blind("cannot read INNODB_CMP", "GRANT PROCESS ON *.* TO 'm'@'%'")
    entries = coverage(None, None, (("innodb_cmp", "compression counters", grant),))
    assert [e["signal"] for e in entries] == [
        "write_hotspots",
        "rows_changed",
        "disk_io",
        "innodb_cmp",
    ]
    assert entries[-1]["line"] == (
        "compression counters: not measured here. Why: cannot read INNODB_CMP. "
        "To measure: GRANT PROCESS ON *.* TO 'm'@'%'"
    )
