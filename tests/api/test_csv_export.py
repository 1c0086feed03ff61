"""`?format=csv` on a server's tables, a table's partitions and the alerts: a header
row, quoted cells, nested figures as dotted columns, and nothing a spreadsheet runs."""

import csv
import io

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
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


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
