"""`?format=csv` on a server's tables, a table's partitions and the alerts: a header
row, quoted cells, nested figures as dotted columns, and nothing a spreadsheet runs."""

import codecs
import csv
import io
import re
from datetime import date, timedelta

import pytest
from django.core.cache import cache

from partdash.api.export import csv_text
from partdash.metrics.models import Partition
from tests import builders

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def read_csv(response) -> list[dict]:
    """The rows, read as a spreadsheet reads them: the UTF-8 byte order mark first."""
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    assert response.content.startswith(codecs.BOM_UTF8)
    return list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))


def test_cells_that_start_a_formula_are_quoted_and_commas_and_quotes_survive():
    text = csv_text([{"a": "=1+1", "b": "-2", "c": "+x", "d": "@SUM(A1)", "e": 'x, "y"', "f": -3}])
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b", "c", "d", "e", "f"],
        ["'=1+1", "'-2", "'+x", "'@SUM(A1)", 'x, "y"', "-3"],
    ]


def test_a_servers_tables_as_csv(viewer_api):
    server = builders.server("db1")
    builders.table(
        server, "shop", "=cmd|' /C calc'!A0", score=5, health={"skew": {"max_mean_ratio": 2.5}}
    )
    builders.table(server, "shop", "orders", score=50, health={"hotspots": ["p1", "p2"]})
    response = viewer_api.get(
        f"/api/v1/servers/{server.pk}/tables/", {"format": "csv", "ordering": "-score"}
    )
    table = read_csv(response)
    assert response["Content-Disposition"] == 'attachment; filename="db1-tables.csv"'
    assert [row["name"] for row in table] == ["orders", "'=cmd|' /C calc'!A0"]
    assert table[0]["hotspots"] == "p1; p2"
    assert table[1]["skew.max_mean_ratio"] == "2.5"


def test_a_tables_partitions_as_csv(viewer_api):
    table = builders.table(builders.server("db1"), total_rows=30)
    for ordinal, size in enumerate([10, 20]):
        Partition.objects.create(
            table=table, key=f"p{ordinal}", name=f"p{ordinal}", ordinal=ordinal, rows=size
        )
    response = viewer_api.get(f"/api/v1/tables/{table.pk}/partitions/", {"format": "csv"})
    partitions = read_csv(response)
    assert [(p["name"], p["rows"]) for p in partitions] == [("p0", "10"), ("p1", "20")]
    assert "shop.orders-partitions.csv" in response["Content-Disposition"]


def test_the_alerts_as_csv(viewer_api):
    server = builders.server("db1")
    builders.alert(
        server, of=builders.table(server), message="@risk: runway ends", fix=builders.RUNWAY_FIX
    )
    (alert,) = read_csv(viewer_api.get("/api/v1/alerts/", {"format": "csv"}))
    assert alert["rule"] == "runway"
    assert alert["message"] == "'@risk: runway ends"
    assert alert["fix.sql"].startswith("ALTER TABLE")


def test_the_server_table_and_alerts_pages_link_their_csv(client, viewer):
    server = builders.server("db1")
    table = builders.table(server)
    client.force_login(viewer)
    pages = {
        f"/servers/{server.pk}/": f"/api/v1/servers/{server.pk}/tables/?format=csv",
        f"/tables/{table.pk}/": f"/api/v1/tables/{table.pk}/partitions/?format=csv",
        f"/alerts/?server={server.pk}": f"/api/v1/alerts/?format=csv&amp;server={server.pk}",
    }
    for page, csv_url in pages.items():
        html = client.get(page).content.decode()
        assert f'href="{csv_url}" download>Download CSV</a>' in html, page
        assert client.get(csv_url.replace("&amp;", "&"))["Content-Type"].startswith("text/csv")


def test_polled_tables_as_csv_are_plain_text_one_column_per_figure(viewer_api):
    """What a poll stores, exported: a skewed HASH table named with accents, a RANGE table
    with runway, KEY tables. No cell holds a Python repr (`{'advice': ...}`, `None`,
    `True`); each figure has one column, a figure null for some tables (runway for the
    HASH ones) included; findings read as the pages say them; accents survive as
    UTF-8 behind a byte order mark."""
    today = date.today()
    day = builders.day_bound
    server = builders.server("db1")
    held = [
        builders.hash_table("ventes", "commandes_été", [4000, 20, 20, 20]),
        builders.range_table(
            "ventes",
            "orders",
            [
                ("p_old", day(today - timedelta(days=30)), 50),
                ("p_now", day(today + timedelta(days=3)), 200),
                ("p_max", "MAXVALUE", 0),
            ],
            "to_days(`d`)",
        ),
        builders.hash_table("ventes", "small", [5, 5], method="KEY"),
    ]
    for _ in range(2):
        builders.poll(server, *held)
    response = viewer_api.get(f"/api/v1/servers/{server.pk}/tables/", {"format": "csv"})
    tables = {row["name"]: row for row in read_csv(response)}
    api = {t["name"]: t for t in viewer_api.get(f"/api/v1/servers/{server.pk}/tables/").json()}

    assert set(tables) == {"commandes_été", "orders", "small"}
    assert "commandes_été".encode() in response.content  # UTF-8, not a legacy code page
    header = list(tables["orders"])
    assert len(header) == len(set(header))
    # One column per figure: no `runway` beside `runway.days_left`, none per nested object.
    for nested in ("skew", "runway", "statistics"):
        assert nested not in header and f"{nested}." in ",".join(header), nested
    assert tables["orders"]["runway.days_left"] == str(api["orders"]["runway"]["days_left"])
    assert tables["commandes_été"]["runway.days_left"] == ""
    assert tables["commandes_été"]["skew.max_mean_ratio"] == str(
        api["commandes_été"]["skew"]["max_mean_ratio"]
    )
    # Findings read as text: severity, kind, message, then the fix's advice.
    (skew,) = api["commandes_été"]["findings"]
    cell = tables["commandes_été"]["findings"]
    assert cell == f"{skew['severity']} skew: {skew['message']}. Fix: {skew['fix']['advice']}"
    runway_lines = tables["orders"]["findings"].split("\n")
    assert len(runway_lines) == len(api["orders"]["findings"]) >= 1
    for line, finding in zip(runway_lines, api["orders"]["findings"], strict=True):
        said = f"{finding['severity']} {finding['kind']}: {finding['message']}"
        assert line == " ".join(f"{said}. Fix: {finding['fix']['advice']}".split())
    every_cell = [value for row in tables.values() for value in row.values()]
    for value in every_cell:
        assert not re.search(r"\{'|': |\bNone\b|\bTrue\b|\bFalse\b", value), value
