"""GET /api/v1/findings/ narrowed by server, schema, table, kind and severity, worst
first still; a bad filter is a 400 naming it."""

import pytest

from tests import builders

pytestmark = pytest.mark.django_db


def finding(kind: str, severity: str, score: float) -> dict:
    return {"kind": kind, "severity": severity, "score": score, "message": kind, "fix": None}


@pytest.fixture
def fleet():
    db1, db2 = builders.server("db1"), builders.server("db2")
    builders.table(
        db1, "shop", "orders", score=90, health={"findings": [finding("runway", "critical", 90)]}
    )
    builders.table(
        db1, "logs", "events", score=40, health={"findings": [finding("skew", "warning", 40)]}
    )
    builders.table(
        db2, "shop", "order_lines", score=60, health={"findings": [finding("skew", "critical", 60)]}
    )
    return db1, db2


def found(api, **params) -> list[tuple[str, str]]:
    response = api.get("/api/v1/findings/", params)
    assert response.status_code == 200, response.content
    return [(f["table"], f["kind"]) for f in response.json()]


def test_findings_narrow_by_server_kind_severity_schema_and_table(viewer_api, fleet):
    db1, db2 = fleet
    assert found(viewer_api, server=db1.pk) == [("orders", "runway"), ("events", "skew")]
    assert found(viewer_api, kind="skew") == [("order_lines", "skew"), ("events", "skew")]
    assert found(viewer_api, severity="CRITICAL", limit=1) == [("orders", "runway")]
    assert found(viewer_api, schema="shop", table="line") == [("order_lines", "skew")]
    assert found(viewer_api, kind="skew", limit=1) == [("order_lines", "skew")]


@pytest.mark.parametrize("params", [{"server": "db1"}, {"server": "9" * 30}, {"limit": "0"}])
def test_a_bad_findings_filter_is_a_400(viewer_api, params):
    response = viewer_api.get("/api/v1/findings/", params)
    assert response.status_code == 400
    assert set(response.json()) == set(params)


def test_an_api_answer_has_an_etag_that_a_client_can_revalidate(viewer_api, fleet):
    first = viewer_api.get("/api/v1/findings/")
    assert first["ETag"]
    assert viewer_api.get("/api/v1/findings/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    assert viewer_api.get("/api/v1/alerts/")["ETag"]


@pytest.mark.parametrize(
    "params", [{}, {"kind": "skew"}, {"limit": 2, "offset": 0}, {"limit": 1, "offset": 1}]
)
def test_every_finding_listed_carries_its_fix_as_every_reader_shows_it(viewer_api, params):
    """The fixes are built for the findings kept, after ranking: each in the contract's
    shape, a stored statement a client would misread withheld with the reason."""
    db1 = builders.server("db1")
    hostile = "ALTER TABLE `shop`.`t\x1b[2K` ANALYZE PARTITION ALL"
    for name, score, sql in (("a", 90, hostile), ("b", 60, "ALTER TABLE `shop`.`b` REBUILD")):
        fix = {"advice": "Rebuild.", "sql": sql, "safety": "instant", "rows": 1, "bytes": 2}
        builders.table(
            db1,
            "shop",
            name,
            score=score,
            health={"findings": [{**finding("skew", "warning", score), "fix": fix}]},
        )
    answer = viewer_api.get("/api/v1/findings/", params).json()
    listed = answer["results"] if "offset" in params else answer
    fixes = {f["table"]: f["fix"] for f in listed}
    assert len(fixes) == (1 if params.get("limit") == 1 else 2)
    if "a" in fixes:
        assert fixes["a"]["sql"] is None and fixes["a"]["safety"] is None
        assert "partdash withholds its statement: it holds invisible" in fixes["a"]["advice"]
    if "b" in fixes:
        assert fixes["b"] == {
            "advice": "Rebuild.",
            "sql": "ALTER TABLE `shop`.`b` REBUILD",
            "safety": "instant",
            "rows": 1,
            "bytes": 2,
        }


def test_the_worst_findings_are_the_worst_whatever_their_tables_sum_to(viewer_api):
    """A table's score is the sum of its findings': 30 tables of two findings of 30
    (60 each) outrank one of a single finding of 55, which is still the worst finding.
    Every shape of the list, and every page, agrees with ranking all of them."""
    db1, db2 = builders.server("db1"), builders.server("db2")
    for n in range(30):
        twice = [finding("skew", "warning", 30), finding("hotspot", "warning", 30)]
        builders.table(db1, "shop", f"t{n:02}", score=60, health={"findings": twice})
    builders.table(
        db2, "shop", "one", score=55, health={"findings": [finding("runway", "warning", 55)]}
    )
    builders.table(db2, "shop", "none", score=0, health={})
    assert found(viewer_api, limit=1) == [("one", "runway")]
    every = found(viewer_api, limit=500)
    assert len(every) == 61 and every[0] == ("one", "runway")
    pages, offset = [], 0
    while offset is not None:
        answer = viewer_api.get("/api/v1/findings/", {"limit": 7, "offset": offset}).json()
        assert answer["count"] == 61
        pages += [(f["table"], f["kind"]) for f in answer["results"]]
        offset = offset + 7 if answer["next"] else None
    assert pages == every
    narrowed = viewer_api.get("/api/v1/findings/", {"limit": 5, "offset": 0, "kind": "skew"})
    assert narrowed.json()["count"] == 30
