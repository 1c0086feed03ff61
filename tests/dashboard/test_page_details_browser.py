"""Small things a DBA saw on the running product (issue 38, point 7), each in a real
browser (Debian's Chromium through Playwright) on what polls store (tests/builders.py):
the drift side by side in bound order with bounds written as the runway fixes write
them; the server page's INNODB_CMP table and source names at a desk; the admin's
maintenance-window labels and where retention policies live; a year of daily bounds
folded; history lines clear of the hot red; counts with separators on the search page;
disclosure triangles on their heading's line."""

from datetime import date, timedelta

import pytest

from partdash.metrics.models import PartitionedTable
from partdash.servers.models import ServerGroup
from tests import builders
from tests.conftest import ARTIFACTS, log_in
from tests.dashboard.test_pages_browser import COLOURED_PIXELS, open_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]

DESK = {"width": 1440, "height": 900}
SCHEMA = "details"


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"details-{name}.png", full_page=True)


def open_at_a_desk(page, live_server, path: str, ready: str) -> None:
    """Logged in, at 1440 px: where the DBA saw these."""
    page.set_viewport_size(DESK)
    log_in(page, live_server)
    open_page(page, live_server, path, ready)


def daily(first: date, days: int, rows: int = 10) -> list[tuple[str, str, int]]:
    """A RANGE-by-TO_DAYS layout of `days` daily partitions from `first`, then pmax."""
    parts = [
        (
            f"p{first + timedelta(days=n):%Y%m%d}",
            builders.day_bound(first + timedelta(days=n + 1)),
            rows,
        )
        for n in range(days)
    ]
    return [*parts, ("pmax", "MAXVALUE", 0)]


def test_the_server_page_fits_innodb_cmp_and_keeps_source_names_whole(
    page, live_server, admin_user
):
    server = builders.server("cmp-db", enabled=True)
    zipped = builders.hash_table(SCHEMA, "zipped", [500, 500], compressed=True)
    builders.poll(server, zipped)
    open_at_a_desk(page, live_server, f"/servers/{server.pk}/", "#server-page")
    screenshot(page, "server")
    # Every INNODB_CMP column inside the pressure panel: nothing scrolls or is cut off.
    cmp = page.locator("#innodb-cmp")
    spill = cmp.evaluate("(t) => t.parentElement.scrollWidth - t.parentElement.clientWidth")
    print(f"INNODB_CMP: {spill} px past its panel at 1440 px")
    assert spill <= 0
    # A source's name breaks after a dot or nowhere: each piece of it is one line.
    names = page.locator(".capability strong")
    assert names.count() >= 6
    lines = names.evaluate_all(LINES_PER_TEXT)
    broken = {name: count for name, count in lines if count > 1}
    assert not broken, f"source names broken mid-word: {broken}"
    assert page.console_errors == []


# Each text node of an element and how many line boxes it takes.
LINES_PER_TEXT = """(elements) => elements.flatMap((element) =>
  [...element.childNodes].filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return [node.textContent, range.getClientRects().length];
  }))"""


@pytest.fixture
def grouped_copies():
    """`orders`, daily RANGE by TO_DAYS with a catch-all, on `ref` (the group's reference)
    and on `member`, which holds one extra day past the reference's last bound; an alert
    on the member's copy, so its alert history has a line."""
    first = date(2026, 11, 28)
    ref, member = (builders.server(name, enabled=True) for name in ("ref", "member"))
    builders.poll(ref, builders.range_table(SCHEMA, "orders", daily(first, 3), "to_days(`d`)"))
    builders.poll(member, builders.range_table(SCHEMA, "orders", daily(first, 4), "to_days(`d`)"))
    group = ServerGroup.objects.create(name="replicas", reference=ref)
    group.servers.set([ref, member])
    copy = PartitionedTable.objects.get(server=member, name="orders")
    builders.alert(member, "drift", of=copy)
    return group, copy


def test_the_side_by_side_lists_partitions_in_bound_order_as_fixes_write_them(
    page, live_server, admin_user, grouped_copies
):
    group, copy = grouped_copies
    open_at_a_desk(page, live_server, f"/tables/{copy.pk}/", "#table-page")
    screenshot(page, "drift")

    rows = page.locator(f"#drift-{group.pk} table.drift tbody tr")
    names = rows.locator("th").all_inner_texts()
    # The member's extra day before the catch-all, where its bound puts it.
    assert names == ["p20261128", "p20261129", "p20261130", "p20261201", "pmax"]
    extra = rows.nth(3).locator("td").all_inner_texts()
    assert extra == ["missing", "TO_DAYS('2026-12-02')"]  # ref, member (the columns' order)
    assert rows.nth(0).locator("td").all_inner_texts() == ["TO_DAYS('2026-11-29')"] * 2
    assert rows.nth(4).locator("td").all_inner_texts() == ["MAXVALUE"] * 2


def test_a_folding_panel_shows_its_triangle_on_its_heading_line(
    page, live_server, admin_user, grouped_copies
):
    group, copy = grouped_copies
    open_at_a_desk(page, live_server, f"/tables/{copy.pk}/", "#table-page")
    for panel in ("#table-alerts", f"#drift-{group.pk}"):
        summary = page.locator(f"{panel} > summary").bounding_box()
        heading = page.locator(f"{panel} > summary > h2").bounding_box()
        print(f"{panel}: summary {summary['height']} px, its heading {heading['height']} px")
        # One line: the triangle beside the heading, not on a line of its own above it.
        assert summary["height"] < heading["height"] + 8
        assert abs(summary["y"] - heading["y"]) < 8
    assert page.console_errors == []


def test_a_year_of_daily_bounds_folds_to_its_first_and_last_days(page, live_server, admin_user):
    server = builders.server("year-db", enabled=True)
    year = builders.range_table(SCHEMA, "daily", daily(date(2026, 1, 1), 366), "to_days(`d`)")
    builders.poll(server, year)
    table = PartitionedTable.objects.get(server=server, name="daily")
    open_at_a_desk(page, live_server, f"/tables/{table.pk}/", "#table-page")

    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"a 367-partition table page: {height} px tall at 1440 px")
    shown = page.locator("#runway-bounds li:visible")
    assert shown.count() == 10  # the first five and the last five
    assert shown.nth(0).get_attribute("data-partition") == "p20260101"
    assert shown.nth(9).get_attribute("data-partition") == "pmax"
    folded = page.locator("#runway-bounds details > summary")
    assert folded.inner_text() == "357 more partitions, p20260106 to p20261228"
    bounds_height = page.locator("#runway-bounds").bounding_box()["height"]
    assert bounds_height < 250, f"the folded bounds take {bounds_height} px"

    folded.click()
    assert shown.count() == 367
    # Numbered on across the three lists: the last is the 367th.
    assert page.locator("#runway-bounds > ol").last.get_attribute("start") == "363"
    assert page.console_errors == []


# Pixels of a canvas within 25° of hue of the hot partitions' red (#b3261e, hue 4°),
# saturated enough to read as red (not the grey of axes and text).
RED_PIXELS = """(canvas) => {
  const { width, height } = canvas;
  const pixels = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  let red = 0;
  for (let i = 0; i < pixels.length; i += 4) {
    const [r, g, b, a] = [0, 1, 2, 3].map((k) => pixels[i + k] / 255);
    const max = Math.max(r, g, b), min = Math.min(r, g, b);
    if (a < 0.5 || max - min < 0.3) continue;
    let hue = max === r ? ((g - b) / (max - min)) * 60 : max === g
      ? (2 + (b - r) / (max - min)) * 60 : (4 + (r - g) / (max - min)) * 60;
    if (hue < 0) hue += 360;
    if (hue <= 29 || hue >= 339) red += 1;
  }
  return red;
}"""


def test_the_history_chart_keeps_the_hot_red_for_hot_partitions(page, live_server, admin_user):
    server = builders.server("history-db", enabled=True)
    held = builders.hash_table(SCHEMA, "spread", [100, 100, 100, 100, 100, 100])
    for _ in range(3):
        held.parts[0].rows += 50
        builders.poll(server, held)
    table = PartitionedTable.objects.get(server=server, name="spread")
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{table.pk}/", "#table-page")
    page.wait_for_timeout(300)  # Chart.js draws on the next frame
    history = page.locator("#history-chart")
    assert history.evaluate(COLOURED_PIXELS) > 20  # the lines are drawn
    red = history.evaluate(RED_PIXELS)
    print(f"history chart: {red} red pixels")
    assert red == 0
    assert page.console_errors == []


def test_search_prints_rows_with_separators_as_every_page_does(page, live_server, admin_user):
    server = builders.server("search-db", enabled=True)
    builders.poll(server, builders.hash_table(SCHEMA, "counted", [18150, 18150]))
    rows = PartitionedTable.objects.get(server=server, name="counted").total_rows
    assert rows > 9999
    log_in(page, live_server)
    page.goto(f"{live_server.url}/search/?q={SCHEMA}.counted")
    cells = page.locator("#search-results tbody td").all_inner_texts()
    assert cells[-1] == f"{rows:,}"  # 36,300, as the server and table pages print it
    open_page(page, live_server, f"/servers/{server.pk}/", "#server-page")
    shown = page.locator("#tables tbody td[data-key=rows]").inner_text()
    assert shown.startswith(cells[-1])


def test_the_admin_labels_window_fields_apart_and_files_retention_apart(
    page, live_server, admin_user
):
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/alerts/maintenancewindow/add/")
    labels = page.locator("#maintenancewindow_form label[for]").all_inner_texts()
    assert "Recurrence (RRULE):" in labels and "Alert rule:" in labels
    assert len(labels) == len(set(labels)), f"two fields share a label: {labels}"

    page.goto(f"{live_server.url}/admin/")
    sections = {
        module.locator("caption").text_content().strip(): module.locator(
            "th[scope=row]"
        ).all_inner_texts()
        for module in page.locator("#content-main .module").all()
    }
    assert sections["Retention"] == ["Retention policies"]
    assert not any(
        "Retention policies" in models for name, models in sections.items() if name != "Retention"
    )
    # Its own pages still open from there.
    page.locator("#content-main .module", has_text="Retention").locator(
        "a", has_text="Retention policies"
    ).first.click()
    assert page.url.endswith("/admin/metrics/retentionpolicy/")
    assert page.console_errors == []
