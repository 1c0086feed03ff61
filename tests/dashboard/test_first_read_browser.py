"""What a DBA reads first, at a desk (1440x900) and on a phone (390x844), in a real
browser: the fleet and server pages answer "what is wrong, where" without scrolling
sideways, on a realistic fleet built with tests/builders.py: two polled servers holding
48 partitioned tables (skewed HASH tables, RANGE tables about to run out, long and
accented names), one registered twice, and two that cannot be polled, with the reasons
a real poll of them records (connection refused, a host that does not resolve)."""

from datetime import date, timedelta

import pytest

from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests import builders
from tests.conftest import ARTIFACTS, log_in
from tests.dashboard.test_layout import VIEWPORTS, assert_no_sideways_scroll, screenshot
from tests.dashboard.test_pages_browser import open_page
from tests.services import free_port

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]

LONG_SCHEMA = "analytics_warehouse_2026"


def shop_tables(schema: str, count: int) -> list[builders.Table]:
    """`count` tables: every third a skewed HASH table, every third a RANGE table by day
    that runs out in a few days, the rest even KEY tables; some with long names."""
    today = date.today()
    day = builders.day_bound
    tables = []
    for n in range(count):
        name = f"page_views_daily_rollup_by_country_{n}" if n % 5 == 0 else f"orders_{n}"
        if n % 3 == 0:
            tables.append(builders.hash_table(schema, name, [4000, 20, 20, 20]))
        elif n % 3 == 1:
            bounds = [
                ("p_old", day(today - timedelta(days=30)), 50),
                ("p_now", day(today + timedelta(days=2)), 200),
                ("p_max", "MAXVALUE", 0),
            ]
            tables.append(builders.range_table(schema, name, bounds, "to_days(`d`)"))
        else:
            tables.append(builders.hash_table(schema, name, [100, 100], method="KEY"))
    return tables


@pytest.fixture
def realistic_fleet() -> dict[str, Server]:
    shop = builders.server("shop-primary", enabled=True, host="10.20.30.41")
    again = builders.server("shop-primary-old-name", enabled=True, host="10.20.30.41")
    held = [
        *shop_tables("ventes", 12),
        builders.hash_table("ventes", "commandes_été", [4000, 20, 20, 20]),
        *shop_tables(LONG_SCHEMA, 16),
    ]
    analytics = builders.server("analytics-replica-eu-west-3", enabled=True, host="10.20.31.7")
    for _ in range(2):
        builders.poll(shop, *held)
        builders.poll(again, *held[:4])
        builders.poll(analytics, *shop_tables("reporting", 19))
    refused = Server.objects.create(
        name="billing-db", host="127.0.0.1", port=free_port(), user="monitor"
    )
    unresolved = Server.objects.create(
        name="archive-2019", host="db-archive-2019.nosuch.invalid", port=3306, user="monitor"
    )
    for server in (refused, unresolved):
        assert not poll_server(server).ok
    return {s.name: s for s in Server.objects.all()}


# Elements reaching past the window's right edge (the page does not scroll sideways, so
# they would be out of sight), or cut by their own box (text-overflow).
OUT_OF_VIEW = """(selector) => [...document.querySelectorAll(selector)]
  .filter((node) => node.getBoundingClientRect().right > window.innerWidth + 0.5
    || node.scrollWidth > node.clientWidth + 1)
  .map((node) => node.textContent)"""


# What a phone shows before each cell of a card (its ::before).
LABELS = """(cells) => cells.map((cell) => getComputedStyle(cell, "::before").content)
  .filter((content) => content !== "none").map((content) => JSON.parse(content))"""


def texts(page, selector: str) -> list[str]:
    return page.locator(selector).all_inner_texts()


@pytest.mark.parametrize("size", VIEWPORTS)
def test_the_fleet_says_what_is_wrong_where_without_scrolling_sideways(
    page, live_server, admin_user, realistic_fleet, size
):
    page.set_viewport_size(VIEWPORTS[size])
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")
    screenshot(page, f"first-read-fleet-{size}")

    assert_no_sideways_scroll(page, f"fleet ({size})")
    # Why a server cannot be polled: whole, in view, as the poll recorded it.
    for name in ("billing-db", "archive-2019"):
        server = realistic_fleet[name]
        assert server.last_error, name
        reason = page.locator(f"#servers tr[data-server='{name}'] .reason.never-succeeded")
        assert server.last_error in " ".join(reason.inner_text().split())
        assert page.evaluate(OUT_OF_VIEW, f"#servers tr[data-server='{name}'] .reason") == []
    # Every finding's badge, kind and table in view, in the rows and in the ranked list.
    for selector in ("#servers .findings .badge", "#servers .findings a", "#worst-tables .badge"):
        assert page.locator(selector).count() >= 5, selector
        assert page.evaluate(OUT_OF_VIEW, selector) == [], selector
    row = page.locator("#servers tr[data-server='shop-primary']")
    assert "10.20.30.41:3306" in row.inner_text()
    assert "same address as shop-primary-old-name" in row.inner_text()
    if size == "desk":
        # The findings have the room (nearly half the width), so each reads on a line
        # or two instead of a tall block.
        width = row.locator("td.problems").bounding_box()["width"]
        assert width > 0.45 * VIEWPORTS["desk"]["width"], width
        for box in row.locator(".findings li").evaluate_all(
            "(items) => items.map((item) => item.getBoundingClientRect().height)"
        ):
            assert box < 50, box
    assert page.console_errors == []


@pytest.mark.parametrize("size", VIEWPORTS)
def test_the_server_page_shows_each_tables_findings_beside_its_name(
    page, live_server, admin_user, realistic_fleet, size
):
    shop = realistic_fleet["shop-primary"]
    page.set_viewport_size(VIEWPORTS[size])
    log_in(page, live_server)
    open_page(page, live_server, f"/servers/{shop.pk}/", "#server-page")
    screenshot(page, f"first-read-server-{size}")

    assert_no_sideways_scroll(page, f"server ({size})")
    rows = page.locator("#tables tbody tr")
    assert rows.count() == 29
    badges = page.locator("#tables .finding-badge")
    assert badges.count() >= 15
    assert page.evaluate(OUT_OF_VIEW, "#tables .finding-badge") == []
    assert page.evaluate(OUT_OF_VIEW, "#tables a.table-link") == []
    # Worst first by default: the first row's findings, named in full.
    api = page.evaluate(
        "(url) => fetch(url).then((r) => r.json())", f"/api/v1/servers/{shop.pk}/tables/"
    )
    worst = max(api, key=lambda table: table["score"])
    first = rows.first
    assert first.locator("a.table-link").inner_text() == f"{worst['schema']}.{worst['name']}"
    assert texts(page, "#tables tbody tr:first-child .finding-badge") == [
        f"{finding['severity']} {finding['kind']}" for finding in worst["findings"]
    ]
    accented = page.locator("#tables a.table-link", has_text="ventes.commandes_été")
    assert accented.count() == 1
    # The list's filter ignores accents and case, as the fleet-wide search does.
    page.fill("#table-filter", "Commandes_ETE")
    page.wait_for_function("document.querySelectorAll('#tables tbody tr').length === 1")
    assert rows.first.locator("a.table-link").inner_text() == "ventes.commandes_été"
    page.fill("#table-filter", "")
    page.wait_for_function("document.querySelectorAll('#tables tbody tr').length === 29")
    if size == "desk":  # every column in view, none scrolled out of its box
        assert page.evaluate(OUT_OF_VIEW, "#tables thead th") == []
    if size == "phone":
        # A card: the figures labelled, in view, not in columns out of sight.
        labels = first.locator("td").evaluate_all(LABELS)
        assert {"Method: ", "Partitions: ", "Rows: ", "Runway (days): "} <= set(labels), labels
        assert page.evaluate(OUT_OF_VIEW, "#tables tbody tr:first-child td") == []
        top = first.bounding_box()["y"] + page.evaluate("window.scrollY")
        page.screenshot(
            path=ARTIFACTS / "layout-first-read-server-cards.png",
            clip={"x": 0, "y": top - 120, "width": 390, "height": 600},
            full_page=True,
        )
    assert page.console_errors == []
