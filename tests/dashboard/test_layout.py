"""Every page at a desk (1440x900) and on a phone (390x844) in a real browser (Debian's
Chromium through Playwright): nothing scrolls sideways, nothing logs an error, every chart
draws; the fleet page stays short with a noisy server and lists one server registered
three times once; times carry their zone; the 404 and 500 pages are styled."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from partdash.servers.models import ServerGroup
from tests import builders
from tests.conftest import ARTIFACTS, log_in
from tests.dashboard.test_pages_browser import (  # noqa: F401 (fixtures)
    assert_every_chart_draws,
    fleet,
    open_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESK = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = {"desk": DESK, "phone": PHONE}


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


# The innermost elements reaching past the window's right edge, to name in a failure.
OVERFLOWING = """() => {
  const past = (node) => node.getBoundingClientRect().right > window.innerWidth + 1;
  return [...document.querySelectorAll("body *")]
    .filter((node) => past(node) && ![...node.children].some(past))
    .slice(0, 5)
    .map((node) => `${node.tagName}#${node.id}.${node.className}`);
}"""


def assert_no_sideways_scroll(page, name: str) -> None:
    width = page_width(page)
    inner = page.evaluate("window.innerWidth")
    print(f"{name}: {width} px wide in a {inner} px window")
    assert width <= inner, f"{name} is {width} px wide: {page.evaluate(OVERFLOWING)}"


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"layout-{name}.png", full_page=True)


def settle(page) -> None:
    # Chart.js resizes on the next frame after its container's size is known.
    page.wait_for_timeout(300)


@pytest.fixture
def twins():
    """A degraded server with 60 warnings registered three times (same host:port), its
    one table's finding stored under each registration."""
    warnings = "\n".join(
        f"warning {n}: 32 partitioned tables in schema shop_{n} are not visible" for n in range(60)
    )
    now = timezone.now()
    state = {
        "status": "degraded",
        "host": "10.0.0.7",
        "port": 3306,
        "last_error": warnings,
        "last_poll_at": now - timedelta(minutes=2),
        "last_success_at": now - timedelta(minutes=2),
        "flavor": "mariadb",
        "version": "11.4.2",
    }
    twins = [builders.server(name, **state) for name in ("noisy", "noisy-again", "noisy-third")]
    finding = {
        "kind": "runway",
        "severity": "critical",
        "score": 1000.0,
        "message": "2 days of partitions left; rows will land in the catch-all",
    }
    for twin in twins:
        builders.table(
            twin, schema="shop", name="events", health={"findings": [finding]}, score=1000
        )
    return twins


@pytest.fixture
def noisy_fleet(fleet, twins):  # noqa: F811 (the fixture imported above)
    """The polled fleet with an open alert carrying a long statement, and the twins."""
    builders.alert(
        fleet.server, "hotspot", of=fleet.hash_table, partition="p0", fix=builders.RUNWAY_FIX
    )
    return fleet, twins


@pytest.mark.parametrize("size", VIEWPORTS)
def test_every_page_fits_the_screen_without_errors(
    page, live_server, admin_user, noisy_fleet, size
):
    fleet_, twins = noisy_fleet
    page.set_viewport_size(VIEWPORTS[size])
    log_in(page, live_server)

    open_page(page, live_server, "/", "#servers")
    assert_no_sideways_scroll(page, f"fleet ({size})")
    screenshot(page, f"fleet-{size}")
    # Four servers (one with 60 warnings, registered three times) and the worst tables:
    # each warning text is one line, so the page stays short; on a phone each server is
    # a card of its own.
    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"fleet ({size}): {height} px tall")
    assert height < 1500, f"the fleet page is {height} px tall"
    noisy = page.locator("#servers tbody tr[data-server='noisy']").bounding_box()["height"]
    assert noisy < (150 if size == "desk" else 320), f"the noisy server's row is {noisy} px"

    pages = [
        (f"/servers/{fleet_.server.pk}/", "#server-page", "server"),
        (f"/tables/{fleet_.hash_table.pk}/", "#table-page", "table-hash"),
        (f"/tables/{fleet_.range_table.pk}/", "#table-page", "table-range"),
        ("/alerts/", "#alerts-page", "alerts"),
    ]
    # On the plan page: a statement of one long line scrolls inside its own block.
    long_fix = {
        **builders.RUNWAY_FIX,
        "sql": "ALTER TABLE `shop`.`wide` ANALYZE PARTITION "
        + ", ".join(f"`p{n}`" for n in range(200)),
    }
    long_finding = {
        "kind": "staleness",
        "severity": "warning",
        "score": 11.0,
        "message": "x" * 400,
        "fix": long_fix,
    }
    builders.table(twins[0], name="wide", health={"findings": [long_finding]}, score=11)
    # The range table's page: its copy on a group member, with bounds of its own, side by
    # side in a table of its own that scrolls sideways inside its panel.
    ranged = fleet_.range_table
    copy = builders.table(twins[0], schema=ranged.schema, name=ranged.name, method="RANGE")
    for n in range(40):
        bound = f"'{2020 + n}-01-01 00:00:00','some-long-column-value-{n:04d}'"
        builders.partition(copy, f"p_{2020 + n}_with_a_long_name", n, description=bound)
    group = ServerGroup.objects.create(name="replicas-with-a-rather-long-name")
    group.servers.set([fleet_.server, twins[0]])
    for path, ready, name in pages:
        open_page(page, live_server, path, ready)
        settle(page)
        assert_no_sideways_scroll(page, f"{name} ({size})")
        assert_every_chart_draws(page)
        screenshot(page, f"{name}-{size}")

    silence = f"/alerts/silence/?server={fleet_.server.pk}&schema={fleet_.schema}&table=hashy"
    for path, name in [
        (silence, "silence"),
        (f"/search/?q={fleet_.schema}", "search"),
        ("/plan/", "plan"),
        ("/api/docs/", "api-docs"),
        ("/admin/", "admin"),
        ("/admin/servers/server/", "admin-servers"),
        (f"/admin/servers/server/{twins[0].pk}/change/", "admin-server"),
    ]:
        page.goto(f"{live_server.url}{path}")
        assert_no_sideways_scroll(page, f"{name} ({size})")
        screenshot(page, f"{name}-{size}")
    assert page.console_errors == []


@pytest.mark.parametrize("size", VIEWPORTS)
def test_the_login_page_fits_the_screen(page, live_server, size):
    page.set_viewport_size(VIEWPORTS[size])
    page.goto(f"{live_server.url}/admin/login/")
    assert_no_sideways_scroll(page, f"login ({size})")
    screenshot(page, f"login-{size}")


def test_the_charts_resize_to_a_phone(page, live_server, admin_user, fleet):  # noqa: F811
    page.set_viewport_size(PHONE)
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{fleet.hash_table.pk}/", "#table-page")
    settle(page)
    widths = page.locator("canvas:visible").evaluate_all(
        "(canvases) => canvases.map((c) => c.getBoundingClientRect().right)"
    )
    assert widths and max(widths) <= PHONE["width"]
    # Sizes and history; the fleet's server has performance_schema OFF and rows changed
    # unread, so its heatmaps say why in place of a chart (test_heatmaps_browser.py).
    assert assert_every_chart_draws(page) >= 3


def test_one_server_registered_three_times_lists_its_tables_once(
    page, live_server, admin_user, twins
):
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")

    events = page.locator("#worst-tables li", has_text="shop.events")
    assert events.count() == 1
    shown_on = events.locator("a").nth(1).inner_text()
    also = sorted(t.name for t in twins if t.name != shown_on)
    assert "also registered as " in events.inner_text()
    assert sorted(events.locator(".also").inner_text()[21:-1].split(", ")) == also
    for twin in twins:
        row = page.locator(f"#servers tbody tr[data-server='{twin.name}']")
        assert row.get_attribute("data-duplicate") == "true"
        others = [t.name for t in twins if t != twin]
        assert f"same address as {', '.join(others)}" in row.inner_text()
    # The degraded server's 60 warnings: one line, the rest on its page.
    reason = page.locator("#servers tbody tr[data-server='noisy'] .reason")
    assert reason.bounding_box()["height"] < 30
    assert "+59 more" in reason.inner_text()
    assert page.console_errors == []


def test_times_on_the_pages_name_their_zone(page, live_server, admin_user, twins):
    browser = page.context.browser
    context = browser.new_context(timezone_id="Europe/Paris", locale="en-US")
    paris = context.new_page()
    try:
        log_in(paris, live_server)
        open_page(paris, live_server, "/", "#servers")
        shown = paris.locator("#servers tbody tr[data-server='noisy'] td.last-poll").inner_text()
        assert shown.endswith(("CET", "GMT+1")), shown
    finally:
        context.close()


def test_the_admin_says_its_times_are_utc(admin_client, twins):
    for path in ("/admin/", f"/admin/servers/server/{twins[0].pk}/change/"):
        assert "times in UTC" in admin_client.get(path).content.decode()
    servers = admin_client.get("/admin/servers/server/").content.decode()
    assert "Last poll (UTC)" in servers


def test_a_missing_page_is_the_styled_404(admin_client, settings):
    settings.DEBUG = False
    response = admin_client.get("/tables/999999/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'id="error-404"' in html and "partdash.css" in html and "Back to the fleet" in html


def test_a_missing_page_offers_a_login_to_a_stranger(client, settings):
    settings.DEBUG = False
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'id="error-404"' in html and 'id="nav-login"' in html and "Log out" not in html


def test_a_failing_page_is_the_styled_500_without_context(settings):
    from django.urls import path

    settings.DEBUG = False

    def broken(request):
        raise RuntimeError("boom")

    settings.ROOT_URLCONF = type("urls", (), {"urlpatterns": [path("broken/", broken)]})
    response = Client(raise_request_exception=False).get("/broken/")
    assert response.status_code == 500
    html = response.content.decode()
    assert 'id="error-500"' in html and "partdash.css" in html


def test_the_pages_follow_a_dark_system_setting(page, live_server, admin_user, twins):
    page.emulate_media(color_scheme="dark")
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    text = page.evaluate("getComputedStyle(document.body).color")
    assert background == "rgb(17, 24, 39)" and text == "rgb(229, 231, 235)"
    screenshot(page, "fleet-dark")
    assert page.console_errors == []


def test_the_table_page_draws_its_charts_in_dark_mode(page, live_server, admin_user, fleet):  # noqa: F811
    page.emulate_media(color_scheme="dark")
    log_in(page, live_server)
    open_page(page, live_server, f"/tables/{fleet.hash_table.pk}/", "#table-page")
    settle(page)
    assert assert_every_chart_draws(page) >= 3  # as on a phone: no rates to draw
    screenshot(page, "table-hash-dark")
    assert page.console_errors == []
