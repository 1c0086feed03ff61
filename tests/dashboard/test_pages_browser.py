"""The fleet, server and table pages in a real browser (Debian's Chromium through
Playwright), on what polls of a MariaDB (performance_schema OFF) store, built in the
database (tests/builders.py): a skewed HASH table and a RANGE-by-date table with a
MAXVALUE catch-all, polled three times with writes between.

Each page must load without console errors, draw every chart it shows, and show the
figures the API serves (which the API's own tests hold to the server's)."""

import re
from dataclasses import dataclass
from datetime import date, timedelta

import pytest
from django.utils import timezone

from partdash.metrics.models import PartitionedTable
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests import builders
from tests.conftest import ARTIFACTS, PAGE_READY_MS, log_in
from tests.services import free_port

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]

HASH_PARTITIONS = 4
# Skew is judged from 1,000 rows per partition on average.
SKEWED_ROWS = 4000  # all in p0: ids that are multiples of 4
OTHER_ROWS = 20  # in each of p1..p3
SMALL_TABLES = 3  # KEY tables with 5, 10 and 15 rows, so sorting and paging have rows
SCHEMA = "pages"


@dataclass
class Fleet:
    server: Server
    schema: str
    hash_table: PartitionedTable
    range_table: PartitionedTable
    held: dict[str, builders.Table]  # what the server holds, by name, for further polls


def spread(rows: int, partitions: int) -> list[int]:
    """Rows spread as evenly as can be (KEY on consecutive ids)."""
    return [rows // partitions + (n < rows % partitions) for n in range(partitions)]


def held_tables(schema: str) -> dict[str, builders.Table]:
    """`hashy`, all but 60 rows in p0; `orders`, RANGE by TO_DAYS(d): 50 rows 40 days old
    in p_old, 200 of today in p_now, then p_next and the empty catch-all; and KEY tables
    `small_1`.. with 5, 10 and 15 rows."""
    today = date.today()
    day = builders.day_bound
    tables = [
        builders.hash_table(schema, "hashy", [SKEWED_ROWS] + [OTHER_ROWS] * (HASH_PARTITIONS - 1)),
        builders.range_table(
            schema,
            "orders",
            [
                ("p_old", day(today - timedelta(days=30)), 50),
                ("p_now", day(today + timedelta(days=10)), 200),
                ("p_next", day(today + timedelta(days=40)), 0),
                ("p_max", "MAXVALUE", 0),
            ],
            "to_days(`d`)",
        ),
        *(
            builders.hash_table(schema, f"small_{n}", spread(5 * n, 2), method="KEY")
            for n in range(1, SMALL_TABLES + 1)
        ),
    ]
    return {table.name: table for table in tables}


def write_more(held: dict[str, builders.Table]) -> None:
    """Writes between polls, so history and the heatmaps have points that move: 100 rows
    into p0 of `hashy`, 50 of today into `orders`."""
    held["hashy"].part("p0").rows += 100
    held["orders"].part("p_now").rows += 50


@pytest.fixture
def fleet() -> Fleet:
    """A server (performance_schema OFF) polled three times."""
    held = held_tables(SCHEMA)
    server = builders.server("pages-db", enabled=True)
    for round_ in range(3):
        if round_:
            write_more(held)
        builders.poll(server, *held.values())
    tables = PartitionedTable.objects.filter(server=server, schema=SCHEMA)
    return Fleet(server, SCHEMA, tables.get(name="hashy"), tables.get(name="orders"), held)


# --- helpers --------------------------------------------------------------------------------


def api(page, path: str):
    """GET an API path from inside the page, with its session."""
    return page.evaluate("(url) => fetch(url).then((r) => r.json())", f"/api/v1/{path}")


def open_page(page, live_server, path: str, ready: str):
    page.goto(f"{live_server.url}{path}")
    page.wait_for_selector(f"{ready}[data-ready]", state="attached", timeout=PAGE_READY_MS)


COLOURED_PIXELS = """(canvas) => {
  const { width, height } = canvas;
  const pixels = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  let coloured = 0;
  for (let i = 0; i < pixels.length; i += 4) {
    const [r, g, b, a] = pixels.slice(i, i + 4);
    if (a > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 40) coloured += 1;
  }
  return coloured;
}"""


def assert_every_chart_draws(page) -> int:
    """Each visible canvas holds coloured pixels (data, not only grey axes and text)."""
    canvases = page.locator("canvas:visible")
    for index in range(canvases.count()):
        canvas = canvases.nth(index)
        name = canvas.get_attribute("id")
        assert canvas.evaluate(COLOURED_PIXELS) > 20, f"chart {name} is blank"
    return canvases.count()


def shown_ids(page) -> list[int]:
    return [
        int(i)
        for i in page.locator("#tables tbody tr").evaluate_all(
            "(rows) => rows.map((row) => row.dataset.id)"
        )
    ]


def digits(text: str) -> int:
    return int(re.sub(r"\D", "", text))


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"page-{name}.png", full_page=True)


# --- fleet ----------------------------------------------------------------------------------


def test_the_fleet_page_lists_servers_with_findings_and_the_worst_tables(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")

    row = page.locator("#servers tbody tr[data-server='pages-db']")
    servers = api(page, "servers/")
    (listed,) = [s for s in servers if s["name"] == "pages-db"]
    assert digits(row.locator("td[data-label='Partitions']").inner_text()) == listed["partitions"]
    assert row.locator(f"a[href='/admin/servers/server/{fleet.server.pk}/change/']").count() == 1
    for finding in listed["findings"]:
        assert finding["message"] in row.inner_text()

    worst = api(page, "findings/?limit=50")
    skew = [f for f in worst if f["table_id"] == fleet.hash_table.pk and f["kind"] == "skew"]
    assert skew, "the skewed HASH table is among the fleet's findings"
    items = page.locator("#worst-tables li")
    assert items.count() == len(worst)
    if worst[0]["table_id"] is None:  # a server's own finding (its limits)
        assert items.first.locator("a.server-finding-link").inner_text() == worst[0]["server"]
    else:
        assert (
            items.first.locator("a.table-link").inner_text()
            == f"{worst[0]['schema']}.{worst[0]['table']}"
        )
    assert page.locator(f"#worst-tables a[href='/tables/{fleet.hash_table.pk}/']").count() >= 1

    screenshot(page, "fleet")
    assert page.console_errors == []
    row.locator("a.server-link").click()
    page.wait_for_url(f"{live_server.url}/servers/{fleet.server.pk}/")


def test_the_fleet_page_says_what_to_do_with_no_servers(page, live_server, admin_user):
    log_in(page, live_server)
    page.goto(f"{live_server.url}/")
    empty = page.locator("#no-servers")
    assert "addserver" in empty.inner_text()
    assert empty.locator("a[href='/admin/servers/server/add/']").count() == 1
    screenshot(page, "fleet-empty")
    assert page.console_errors == []


def test_a_server_never_polled_says_so_on_the_fleet_and_server_pages(page, live_server, admin_user):
    server = builders.server("fresh-db", enabled=True)
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")
    row = page.locator("#servers tbody tr[data-server='fresh-db']")
    assert "Not polled yet" in row.inner_text()
    assert "manage.py poll fresh-db" in row.inner_text()

    open_page(page, live_server, f"/servers/{server.pk}/", "#server-page")
    assert "has not been polled yet" in page.locator("#notices").inner_text()
    assert "has not been polled" in page.locator("#tables").inner_text()
    screenshot(page, "server-never-polled")
    assert page.console_errors == []


def test_a_server_never_polled_successfully_says_when_it_was_tried_and_why(
    page, live_server, admin_user
):
    server = Server.objects.create(name="gone-db", host="127.0.0.1", port=free_port(), user="u")
    assert not poll_server(server).ok
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")

    row = page.locator("#servers tbody tr[data-server='gone-db']")
    reason = row.locator(".reason")
    assert reason.inner_text().startswith("Never polled successfully; last tried ")
    assert "connection refused" in reason.inner_text()
    assert "No findings" not in row.inner_text() and row.locator(".ok-text").count() == 0

    open_page(page, live_server, f"/servers/{server.pk}/", "#server-page")
    notice = page.locator("#notices .never-succeeded").inner_text()
    assert notice.startswith("Never polled successfully. Last tried ")
    assert "connection refused" in notice
    assert "not polled yet" not in page.locator("#notices").inner_text()
    assert "no poll has succeeded" in page.locator("#tables").inner_text()
    for panel in ("#capabilities", "#warnings", "#pressure"):
        assert "until a poll succeeds" in page.locator(panel).inner_text()
    screenshot(page, "server-never-succeeded")
    assert page.console_errors == []


def test_a_server_whose_polls_stopped_says_not_polled_for_in_red(page, live_server, admin_user):
    """Its worker hung: the last poll (fine then) is 10 minutes old for a 60 s interval."""
    server = builders.server("stuck-db", enabled=True, poll_interval=60)
    ten_minutes_ago = timezone.now() - timedelta(minutes=10, seconds=5)
    Server.objects.filter(pk=server.pk).update(
        status="ok", last_poll_at=ten_minutes_ago, last_success_at=ten_minutes_ago
    )
    fresh = builders.server("fresh-db", enabled=True)
    Server.objects.filter(pk=fresh.pk).update(
        status="ok", last_poll_at=timezone.now(), last_success_at=timezone.now()
    )
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")
    stuck = page.locator("#servers tbody tr[data-server='stuck-db'] .not-polled")
    assert stuck.inner_text() == "not polled for 10 min"
    red = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--bad')")
    assert stuck.evaluate("e => getComputedStyle(e).color") == css_rgb(red)
    assert page.locator("#servers tbody tr[data-server='fresh-db'] .not-polled").count() == 0

    open_page(page, live_server, f"/servers/{server.pk}/", "#server-page")
    notice = page.locator("#notices .not-polled")
    assert notice.inner_text().startswith("not polled for 10 min: no poll ran since ")
    assert notice.evaluate("e => getComputedStyle(e).color") == css_rgb(red)
    screenshot(page, "server-not-polled")
    assert page.console_errors == []


def css_rgb(hex_color: str) -> str:
    """`#b3261e` as a computed style gives it: `rgb(179, 38, 30)`."""
    digits = hex_color.strip().lstrip("#")
    return "rgb({}, {}, {})".format(*(int(digits[i : i + 2], 16) for i in (0, 2, 4)))


@pytest.fixture
def hidden_fleet():
    """A server polled through an account that sees one schema of three (granted PROCESS,
    SELECT on mysql.innodb_table_stats and on that schema): the other two hold 24
    partitioned tables it cannot see."""

    def tables(schema: str, count: int) -> list[builders.Table]:
        return [builders.hash_table(schema, f"t{n}", [0, 0]) for n in range(count)]

    server = builders.server("hidden-db", enabled=True, user="mon")
    unseen = (*tables("pages_b", 12), *tables("pages_c", 12))
    builders.poll(server, *tables("pages_a", 2), hidden=unseen, ungranted=("file_io",))
    return server


def test_hidden_tables_are_one_line_on_the_fleet_and_listed_on_the_server_page(
    page, live_server, admin_user, hidden_fleet
):
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")
    health = api(page, f"servers/{hidden_fleet.pk}/health/")
    (listed,) = [s for s in api(page, "servers/") if s["name"] == "hidden-db"]
    hidden = health["hidden_tables"]
    assert hidden >= 24 and health["partitioned_tables"] == listed["partitioned_tables"]

    row = page.locator("#servers tbody tr[data-server='hidden-db']")
    reason = row.locator(".reason")
    assert reason.count() == 1
    assert reason.bounding_box()["height"] < 30  # one line, however many tables
    assert f"+{len(health['warnings']) - 1} more" in reason.inner_text()
    assert row.bounding_box()["height"] < 150
    assert f"{hidden} of {health['partitioned_tables']}" in reason.get_attribute("title")

    open_page(page, live_server, f"/servers/{hidden_fleet.pk}/", "#server-page")
    notice = page.locator("#notices .hidden-tables").inner_text()
    total = health["partitioned_tables"]
    assert f"{hidden} of {total} partitioned tables are not visible" in notice
    warning = page.locator("#warnings li[data-cause='hidden']")
    assert warning.locator("details.tables summary").inner_text() == f"the {hidden} tables"
    assert not warning.locator("ul.warning-tables").is_visible()  # folded
    warning.locator("details.tables summary").click()
    assert warning.locator("ul.warning-tables li").count() == hidden
    (hidden_warning,) = [w for w in health["warnings"] if w["cause"] == "hidden"]
    assert warning.locator(".fix code").count() == len(hidden_warning["fixes"])
    tables = api(page, f"servers/{hidden_fleet.pk}/tables/")
    assert page.locator("#tables tbody tr").count() == len(tables) == 2
    screenshot(page, "server-hidden-tables")
    assert page.console_errors == []


# --- server ---------------------------------------------------------------------------------


def test_the_server_page_shows_capabilities_pressure_and_the_tables(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_page(page, live_server, f"/servers/{fleet.server.pk}/", "#server-page")

    assert page.locator("#server-status").inner_text() == "degraded"
    # performance_schema is OFF on this instance: the panel names it with its fix, and the
    # page explains where hotspots come from instead.
    capability = page.locator("#capabilities li[data-source='file_io']")
    assert "performance_schema=ON" in capability.locator("code").inner_text()
    assert capability.get_attribute("data-state") == "missing"
    assert "row growth" in page.locator("#notices .ps-off").inner_text()
    health = api(page, f"servers/{fleet.server.pk}/health/")
    assert page.locator("#pressure .gauge").count() == len(health["pressure"]["limits"]) + (
        health["pressure"]["working_set"] is not None
    )

    tables = api(page, f"servers/{fleet.server.pk}/tables/")
    (hashy,) = [t for t in tables if t["id"] == fleet.hash_table.pk]
    assert hashy["rows"] == SKEWED_ROWS + 3 * OTHER_ROWS + 2 * 100
    hash_row = page.locator(f"#tables tbody tr[data-id='{fleet.hash_table.pk}']")
    assert (
        digits(hash_row.locator("td[data-key='rows']").locator(".figure").inner_text())
        == hashy["rows"]
    )
    assert "as of" in hash_row.locator("abbr.est").first.get_attribute("title")
    assert page.locator("#tables tbody tr").count() == len(tables)

    screenshot(page, "server")
    assert_every_chart_draws(page)
    assert page.console_errors == []

    hash_row.locator("a.table-link").click()
    page.wait_for_url(f"{live_server.url}/tables/{fleet.hash_table.pk}/")


def expected_order(tables: list[dict], field: str, descending: bool) -> list[int]:
    """The grid's order: stable, missing figures last either way."""
    known = [t for t in tables if t[field] is not None]
    missing = [t for t in tables if t[field] is None]
    ordered = sorted(known, key=lambda t: t[field], reverse=descending)  # stable both ways
    return [t["id"] for t in ordered + missing]


@pytest.mark.parametrize(("column", "field"), [("rows", "rows"), ("partitions", "partition_count")])
def test_clicking_a_header_sorts_the_tables_and_clicking_again_reverses(
    page, live_server, admin_user, fleet, column, field
):
    log_in(page, live_server)
    open_page(page, live_server, f"/servers/{fleet.server.pk}/", "#server-page")
    tables = api(page, f"servers/{fleet.server.pk}/tables/")
    heading = page.locator(f"#tables thead th[data-key='{column}']")

    heading.click()
    assert heading.get_attribute("aria-sort") == "ascending"
    assert shown_ids(page) == expected_order(tables, field, descending=False)
    heading.click()
    assert heading.get_attribute("aria-sort") == "descending"
    assert shown_ids(page) == expected_order(tables, field, descending=True)
    assert shown_ids(page)[0] != expected_order(tables, field, descending=False)[0]


def test_the_filters_keep_only_the_matching_tables(page, live_server, admin_user, fleet):
    log_in(page, live_server)
    open_page(page, live_server, f"/servers/{fleet.server.pk}/", "#server-page")
    tables = api(page, f"servers/{fleet.server.pk}/tables/")

    page.fill("#table-filter", f"{fleet.schema}.small")
    assert shown_ids(page) and len(shown_ids(page)) == SMALL_TABLES

    page.fill("#table-filter", fleet.schema)
    page.select_option("#method-filter", "HASH")
    assert shown_ids(page) == [fleet.hash_table.pk]

    page.fill("#table-filter", "")
    page.select_option("#method-filter", "")
    page.check("#findings-only")
    with_findings = {t["id"] for t in tables if t["findings"]}
    assert fleet.hash_table.pk in with_findings
    assert set(shown_ids(page)) == with_findings
    assert page.console_errors == []


def test_pages_of_tables_appear_only_when_there_are_more_than_a_page(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_page(page, live_server, f"/servers/{fleet.server.pk}/", "#server-page")
    total = page.locator("#tables tbody tr").count()
    assert total <= 50 and page.locator("#pager nav.pages").count() == 0

    open_page(page, live_server, f"/servers/{fleet.server.pk}/?page_size=2", "#server-page")
    assert page.locator("#tables tbody tr").count() == 2
    pager = page.locator("#pager nav.pages")
    assert pager.count() == 1
    assert f"of {-(-total // 2)}, {total} in all" in pager.inner_text()
    first_page = shown_ids(page)
    pager.locator("button", has_text="Next").click()
    second_page = shown_ids(page)
    assert len(second_page) == 2 and not set(first_page) & set(second_page)
    screenshot(page, "server-paged")


# --- tables ---------------------------------------------------------------------------------


def test_the_hash_table_page_shows_its_skew_and_draws_every_chart(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{fleet.hash_table.pk}/", "#table-page")
    table = api(page, f"tables/{fleet.hash_table.pk}/")
    partitions = api(page, f"tables/{fleet.hash_table.pk}/partitions/")

    assert table["skew"]["is_finding"]
    shown_ratio = float(page.locator("#skew-ratio").inner_text())
    assert shown_ratio == pytest.approx(table["skew"]["max_mean_ratio"], abs=0.006)
    assert table["skew"]["largest"] in page.locator("#skew-facts").inner_text()
    assert [p["rows"] for p in partitions][0] == SKEWED_ROWS + 2 * 100
    assert "does not apply" in page.locator("#runway").inner_text()
    assert page.locator("#compression").inner_text() == "Not compressed."
    # Each finding with the fix to run, as the API gives it.
    skew = next(f for f in table["findings"] if f["kind"] == "skew")
    shown = page.locator("#table-findings li.finding[data-kind=skew]")
    assert shown.locator(".fix .advice").inner_text() == skew["fix"]["advice"]
    if skew["fix"]["sql"]:
        assert shown.locator("pre.sql").inner_text() == skew["fix"]["sql"]

    # Two size charts and the history lines; no rates were read (performance_schema OFF,
    # no modification counters), so each heatmap's place says why instead.
    assert assert_every_chart_draws(page) == 3
    assert page.locator(".heat-scroll .empty").count() == 3
    page.check("#log-scale")
    page.select_option("#history-metric", "file_bytes")
    page.select_option("#range", "7d")
    assert assert_every_chart_draws(page) == 3
    screenshot(page, "table-hash")
    assert page.console_errors == []

    page.click("#server-link")
    page.wait_for_url(f"{live_server.url}/servers/{fleet.server.pk}/")
    page.go_back()
    page.click("#fleet-link")
    page.wait_for_url(f"{live_server.url}/")


def test_the_range_table_page_shows_its_runway(page, live_server, admin_user, fleet):
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{fleet.range_table.pk}/", "#table-page")
    table = api(page, f"tables/{fleet.range_table.pk}/")
    runway = table["runway"]

    assert runway["days_left"] is not None and runway["catchall_rows"] == 0
    days_left = page.locator("#days-left").inner_text()
    assert days_left.startswith(str(round(runway["days_left"])))
    bounds = page.locator("#runway-bounds li")
    assert bounds.count() == 4
    assert "catch-all (MAXVALUE)" in bounds.nth(3).inner_text()
    assert "less than" in bounds.nth(1).inner_text()
    # The bound of p_next is 40 days from today, as the browser shows days.
    expected = page.evaluate(
        "(day) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' })"
        ".format(new Date(day))",
        (date.today() + timedelta(days=40)).isoformat(),
    )
    assert expected in bounds.nth(2).inner_text()

    assert assert_every_chart_draws(page) == 4  # the three of every table and the runway
    screenshot(page, "table-range")
    assert page.console_errors == []


def test_unknown_ids_are_404(admin_client):
    assert admin_client.get("/servers/999999/").status_code == 404
    assert admin_client.get("/tables/999999/").status_code == 404


def test_the_pages_ask_for_a_login(client, fleet):
    for path in ("/", f"/servers/{fleet.server.pk}/", f"/tables/{fleet.hash_table.pk}/"):
        response = client.get(path)
        assert response.status_code == 302 and "login" in response["Location"]
