"""The maintenance plan from stored findings: every fix due, grouped by server, most
urgent first (runway, retention, drift, fragmentation, statistics, then the rest), as
JSON, CSV and one server's SQL script; stale items marked; viewers read it."""

import codecs
import csv
import io
import unicodedata
from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.api.plan_script import comment
from tests import builders

pytestmark = pytest.mark.django_db

PLAN = "/api/v1/maintenance-plan/"


def fix(sql: str | None, safety: str | None = None, rows=None, size=None) -> dict:
    advice = "Do this." if sql else "Think about it."
    return {"advice": advice, "sql": sql, "safety": safety, "rows": rows, "bytes": size}


def finding(kind: str, severity: str = "warning", score: float = 10.0, **fields) -> dict:
    return {
        "kind": kind,
        "severity": severity,
        "score": score,
        "message": fields.pop("message", f"{kind} finding"),
        "fix": fields.pop(
            "fix", fix(f"ALTER TABLE `shop`.`{kind}` ANALYZE PARTITION ALL", "instant")
        ),
    }


def table(on, name: str, *findings: dict, ago=timedelta(minutes=5), **health):
    analysed = timezone.now() - ago
    return builders.table(
        on,
        "shop",
        name,
        health={"findings": list(findings), **health},
        analysed_at=analysed,
        definitions_read_at=analysed,
        score=sum(f["score"] for f in findings),
    )


@pytest.fixture
def fleet():
    """Two servers: db1 with a table of each kind, db2 with one table past its runway."""
    db1, db2 = builders.server("db1", port=3307), builders.server("db2")
    builders.snapshot(
        db1,
        pressure={
            "findings": [
                finding("pressure", fix=fix("SET GLOBAL table_open_cache = 3000", "instant"))
            ]
        },
    )
    table(db1, "skewed", finding("skew", "critical", 120))
    table(db1, "stale", finding("staleness", score=11))
    holey = table(
        db1,
        "holey",
        finding(
            "fragmentation",
            fix=fix("ALTER TABLE `shop`.`holey` REBUILD PARTITION `p0`", "copies", 2000, 5 << 20),
        ),
        method="RANGE",
    )
    # The plan checks each statement against the table's layout: p0 must be there.
    builders.partition(holey, "p0", 1, description="100", rows=2000, data_bytes=5 << 20)
    builders.partition(holey, "p1", 2, description="MAXVALUE", rows=0)
    table(db1, "drifted", finding("drift", "critical", 110))
    table(db1, "old", finding("retention", score=12), retention={"overdue_days": 40})
    table(db1, "older", finding("retention", score=11), retention={"overdue_days": 90})
    table(db1, "soon", finding("runway", score=15), runway={"days_left": 9.0, "catchall_rows": 0})
    table(
        db1,
        "sooner",
        finding("runway", "critical", 110),
        runway={"days_left": 2.5, "catchall_rows": 0},
    )
    table(db1, "hot", finding("hotspot", fix=fix(None)))
    table(
        db2,
        "full",
        finding("runway", "critical", 150),
        runway={"days_left": 0, "catchall_rows": 1200},
    )
    return db1, db2


def kinds_and_tables(server_plan: dict) -> list[tuple[str, str | None]]:
    return [(item["kind"], item["table"]) for item in server_plan["items"]]


def test_fixes_are_grouped_by_server_and_ordered_by_urgency(viewer_api, fleet):
    response = viewer_api.get(PLAN)
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["generated_at"] and plan["as_of"] is None
    # db2's rows already in the catch-all are the most urgent fix of the fleet.
    assert [server["name"] for server in plan["servers"]] == ["db2", "db1"]
    assert kinds_and_tables(plan["servers"][1]) == [
        ("runway", "sooner"),
        ("runway", "soon"),
        ("retention", "older"),
        ("retention", "old"),
        ("drift", "drifted"),
        ("fragmentation", "holey"),
        ("staleness", "stale"),
        ("pressure", None),
        ("skew", "skewed"),
        ("hotspot", "hot"),
    ]
    urgencies = [item["urgency"] for item in plan["servers"][1]["items"]][:4]
    assert urgencies == ["2.5 days left", "9 days left", "90 days overdue", "40 days overdue"]
    (full,) = plan["servers"][0]["items"]
    assert full["urgency"] == "1,200 rows in the catch-all"
    assert (full["server_name"], full["schema"], full["stale"]) == ("db2", "shop", False)


def test_each_item_has_its_fix_safety_and_what_it_rewrites(viewer_api, fleet):
    db1, _ = fleet
    items = viewer_api.get(PLAN, {"server": db1.pk}).json()["servers"][0]["items"]
    holey = next(item for item in items if item["table"] == "holey")
    assert (holey["safety"], holey["rows"], holey["bytes"]) == ("copies", 2000, 5 << 20)
    assert holey["sql"] == "ALTER TABLE `shop`.`holey` REBUILD PARTITION `p0`"
    # A rewrite leaves the statistics at 0 rows: the plan says which ANALYZE follows.
    assert holey["analyze_after"] == "ALTER TABLE `shop`.`holey` ANALYZE PARTITION ALL"
    hot = next(item for item in items if item["kind"] == "hotspot")
    assert (hot["sql"], hot["safety"], hot["advice"]) == (None, None, "Think about it.")
    pressure = next(item for item in items if item["kind"] == "pressure")
    assert pressure["table_id"] is None and pressure["poll"] is not None


def test_the_server_filter_and_the_kind_and_safety_filters(viewer_api, fleet):
    db1, db2 = fleet
    only = viewer_api.get(PLAN, {"server": db2.pk}).json()["servers"]
    assert [server["name"] for server in only] == ["db2"]
    runway = viewer_api.get(PLAN, {"kind": "runway"}).json()["servers"]
    assert {item["kind"] for server in runway for item in server["items"]} == {"runway"}
    advice = viewer_api.get(PLAN, {"server": db1.pk, "safety": "none"}).json()["servers"]
    assert kinds_and_tables(advice[0]) == [("hotspot", "hot")]


@pytest.mark.parametrize("query", [{"server": "abc"}, {"safety": "sometimes"}, {"as_of": "soon"}])
def test_a_malformed_filter_is_a_one_line_400(viewer_api, query):
    response = viewer_api.get(PLAN, query)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert "\n" not in response.content.decode()


def test_an_unknown_server_is_a_404(viewer_api):
    assert viewer_api.get(PLAN, {"server": 999999}).status_code == 404
    assert viewer_api.get("/api/v1/servers/999999/maintenance-plan.sql").status_code == 404


def test_the_plan_as_csv_has_one_row_per_item(viewer_api, fleet):
    response = viewer_api.get(PLAN, {"format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response.content.startswith(codecs.BOM_UTF8)
    assert 'filename="partdash-plan.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert len(rows) == 11
    assert (rows[0]["server_name"], rows[0]["kind"], rows[0]["safety"]) == (
        "db2",
        "runway",
        "instant",
    )
    assert rows[0]["stale"] == "false"
    same = viewer_api.get(PLAN, HTTP_ACCEPT="text/csv")
    assert same["Content-Type"].startswith("text/csv")


def test_a_table_changed_after_its_fix_was_computed_is_stale(viewer_api):
    db = builders.server("db1")
    changed = table(db, "changed", finding("runway"), runway={"days_left": 3})
    table(db, "steady", finding("staleness"))
    # A poll read the table's new definition after the analysis that wrote the fix.
    changed.definitions_read_at = changed.analysed_at + timedelta(seconds=30)
    changed.save()
    stale = {i["table"]: i["stale"] for i in viewer_api.get(PLAN).json()["servers"][0]["items"]}
    assert stale == {"changed": True, "steady": False}


def test_a_plan_held_since_marks_the_tables_changed_or_dropped_since_stale(viewer_api):
    db = builders.server("db1")
    table(db, "steady", finding("staleness"), ago=timedelta(hours=2))
    altered = table(db, "altered", finding("staleness"), ago=timedelta(hours=2))
    gone = table(db, "gone", finding("staleness"), ago=timedelta(hours=2))
    held = viewer_api.get(PLAN).json()["generated_at"]
    later = timezone.now() + timedelta(seconds=1)
    altered.definitions_read_at = gone.dropped_at = later
    altered.save()
    gone.save()
    now = viewer_api.get(PLAN, {"as_of": held}).json()
    assert now["as_of"] is not None
    stale = {i["table"]: i["stale"] for i in now["servers"][0]["items"]}
    assert stale == {"steady": False, "altered": True, "gone": True}
    # Without as_of, a dropped table is no longer part of the plan.
    assert "gone" not in {i["table"] for i in viewer_api.get(PLAN).json()["servers"][0]["items"]}


def test_strangers_get_nothing(client, fleet):
    assert client.get(PLAN).status_code in (401, 403)
    assert client.get(f"/api/v1/servers/{fleet[0].pk}/maintenance-plan.sql").status_code in (
        401,
        403,
    )


# -- the SQL script --------------------------------------------------------------------


def script(client, server) -> tuple[str, object]:
    response = client.get(f"/api/v1/servers/{server.pk}/maintenance-plan.sql")
    assert response.status_code == 200, response.content
    return response.content.decode(), response


def test_the_script_says_what_it_is_when_and_from_which_poll(viewer_api, fleet):
    db1, _ = fleet
    text, response = script(viewer_api, db1)
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    disposition = response["Content-Disposition"]
    assert disposition.startswith('attachment; filename="partdash-plan-db1-')
    assert disposition.endswith('.sql"')
    poll = db1.snapshots.get()
    head = text.split("\n\n")[0]
    assert "partdash maintenance plan for server db1 (127.0.0.1:3307)" in head
    assert f"-- Generated at {timezone.now():%Y-%m-%dT%H}" in head
    assert f"From poll {poll.poll_id} taken at {poll.taken_at:%Y-%m-%dT%H:%M}" in head
    # Nine fixes (the hotspot is advice only), and the ANALYZE after the REBUILD, by
    # safety class.
    assert "-- 10 statements to run (9 instant, 1 copies)" in head
    assert "1 item of advice only" in head
    assert "partdash never runs this script" in head and "irreversibly" in head


def test_the_script_lists_the_statements_in_urgency_order_then_the_analyze(viewer_api, fleet):
    db1, _ = fleet
    text, _ = script(viewer_api, db1)
    statements = [line for line in text.splitlines() if line and not line.startswith("--")]
    # First, before any name: the client reads what follows as utf8mb4, whatever its own
    # character set (tests/api/test_plan_script_charsets.py runs it under sjis).
    assert statements[:2] == ["charset utf8mb4", "SET NAMES utf8mb4;"]
    assert text.startswith("charset utf8mb4\nSET NAMES utf8mb4;\n-- partdash maintenance")
    assert statements[2] == "ALTER TABLE `shop`.`runway` ANALYZE PARTITION ALL;"
    assert "ALTER TABLE `shop`.`holey` REBUILD PARTITION `p0`;" in statements
    assert statements[-1] == "ALTER TABLE `shop`.`holey` ANALYZE PARTITION ALL;"
    assert "-- Safety: copies ~2,000 rows, 5.0 MiB" in text
    assert "-- Advice only: Think about it." in text


def test_a_newline_in_a_message_cannot_start_a_line_outside_a_comment(viewer_api):
    db = builders.server("db1")
    hostile = "evil\nDROP DATABASE shop;\r\u2028DROP TABLE x;\x0bnext\x85end"
    table(db, "bad\nDROP DATABASE x;", finding("hotspot", message=hostile, fix=fix(None)))
    table(db, "ok", finding("staleness", message=hostile))
    text, _ = script(viewer_api, db)
    for line in text.splitlines()[2:]:
        assert line == "" or line.startswith("-- ") or line.startswith("ALTER TABLE `shop`."), line
    assert "DROP DATABASE shop;" in text  # as words inside a comment, on its line
    assert comment("a\nb\u2029c\x00") == "-- a<U+000A>b<U+2029>c<U+0000>"


def test_bidi_controls_in_names_and_messages_are_written_out_in_comments(viewer_api):
    """U+202E (right-to-left override) and its kin would make an editor show a comment
    line, or the statement after it, otherwise than the client reads it."""
    db = builders.server("db1")
    name = "evt\u202e;1 ELBAT PORD\u2066x\u2069\u200b"
    message = f"skew on {name}\u061c\ufeff"
    table(db, name, finding("hotspot", message=message, fix=fix(None)))
    text, _ = script(viewer_api, db)
    assert "evt<U+202E>;1 ELBAT PORD<U+2066>x<U+2069><U+200B>" in text
    assert "<U+061C><U+FEFF>" in text
    assert not any(unicodedata.category(char) in ("Cf", "Zl", "Zp") for char in text)
    assert all(char == "\n" or unicodedata.category(char) != "Cc" for char in text)


def test_a_stale_item_is_in_the_script_as_comments_only(viewer_api):
    db = builders.server("db1")
    changed = table(db, "changed", finding("staleness"))
    changed.definitions_read_at = changed.analysed_at + timedelta(seconds=30)
    changed.save()
    text, _ = script(viewer_api, db)
    assert "STALE" in text and "-- ALTER TABLE `shop`.`staleness` ANALYZE PARTITION ALL;" in text
    assert "-- 0 statements to run" in text


def test_the_plan_page_lists_each_servers_items_with_its_script(client, viewer, fleet):
    db1, db2 = fleet
    client.force_login(viewer)
    page = client.get("/plan/").content.decode()
    assert page.index(f'id="plan-server-{db2.pk}"') < page.index(f'id="plan-server-{db1.pk}"')
    assert f"/api/v1/servers/{db1.pk}/maintenance-plan.sql" in page
    assert "/api/v1/maintenance-plan/?format=csv" in page
    assert "copies ~2,000 rows, 5.0 MiB" in page and "1,200 rows in the catch-all" in page


def test_the_plan_page_shows_a_non_ascii_statement_after_set_names(client, viewer):
    """Copied from the page into a client of any character set, the block reads the
    names as utf8mb4; an ASCII statement needs no such line and gets none."""
    db = builders.server("db1")
    drop = "ALTER TABLE `shop`.`café` DROP PARTITION `été`"
    cafe = table(db, "café", finding("retention", fix=fix(drop, "destroys")), method="LIST")
    builders.partition(cafe, "été", 1, description="1")
    builders.partition(cafe, "p1", 2, description="2")
    table(db, "plain", finding("staleness"))
    client.force_login(viewer)
    page = client.get("/plan/").content.decode()
    assert f"<code>SET NAMES utf8mb4;\n{drop};" in page
    assert "<code>ALTER TABLE `shop`.`staleness` ANALYZE PARTITION ALL;" in page
    # Once with the finding, once in the statements in run order; never before ASCII.
    assert page.count("SET NAMES utf8mb4;") == page.count(f"SET NAMES utf8mb4;\n{drop};") == 2


def test_a_tables_fixes_are_one_script_destroys_last_and_a_failing_one_refused(viewer_api):
    """Runway's and drift's REORGANIZE of one catch-all, retention's DROP, and a REBUILD
    of a partition that no longer exists, on one table: one REORGANIZE, its ANALYZE, the
    DROP last in a section saying what it removes; the REBUILD refused, advice only."""
    db = builders.server("db1")
    reorganize = (
        "ALTER TABLE `shop`.`ev` REORGANIZE PARTITION `pmax` INTO (PARTITION `p2` VALUES "
        "LESS THAN (300), {more}PARTITION `pmax` VALUES LESS THAN MAXVALUE)"
    )
    runway = reorganize.format(more="PARTITION `p3` VALUES LESS THAN (400), ")
    drift = reorganize.format(more="")
    drop = "ALTER TABLE `shop`.`ev` DROP PARTITION `p0`"
    ev = table(
        db,
        "ev",
        finding("runway", "critical", 20, fix=fix(runway, "copies", 5)),
        finding("drift", fix=fix(drift, "copies", 5)),
        finding("retention", fix=fix(drop, "destroys", 7)),
        finding(
            "fragmentation", fix=fix("ALTER TABLE `shop`.`ev` REBUILD PARTITION `p9`", "copies")
        ),
        method="RANGE",
    )
    for ordinal, (name, bound) in enumerate((("p0", "100"), ("p1", "200"), ("pmax", "MAXVALUE"))):
        builders.partition(ev, name, ordinal, description=bound, rows=7)
    text, _ = script(viewer_api, db)
    statements = [line for line in text.splitlines() if line and not line.startswith("--")]
    assert statements[2:] == [
        "ALTER TABLE `shop`.`ev` REORGANIZE PARTITION `pmax` INTO (",
        "  PARTITION `p2` VALUES LESS THAN (300),",
        "  PARTITION `p3` VALUES LESS THAN (400),",
        "  PARTITION `pmax` VALUES LESS THAN MAXVALUE",
        ");",
        "ALTER TABLE `shop`.`ev` ANALYZE PARTITION ALL;",
        f"{drop};",
    ]
    destroys = text.index("-- == DESTROYS DATA, last")
    assert destroys < text.index("-- Removes: partitions `p0` of `shop`.`ev`") < text.index(drop)
    assert "stops at the first statement that fails" in text.replace("\n-- ", " ")
    assert "-- Clears critical runway" in text and "-- Clears warning drift" in text
    items = viewer_api.get(PLAN).json()["servers"][0]["items"]
    refused = next(i for i in items if i["kind"] == "fragmentation")
    assert refused["sql"] is None and refused["statement"] is None
    assert "partition p9 does not exist there" in refused["advice"]
