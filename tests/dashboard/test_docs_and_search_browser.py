"""The API docs (Swagger UI, the browsable API) and the fleet-wide search in a
real browser (Debian's Chromium through Playwright): they load from partdash alone, with
no request to any other host and no console error."""

from urllib.parse import urlsplit

import pytest

from tests import builders
from tests.conftest import ARTIFACTS, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]


def recorded_hosts(page) -> set[str]:
    """Every host the page asks anything of, from now on."""
    hosts: set[str] = set()
    page.on("request", lambda request: hosts.add(urlsplit(request.url).netloc))
    return hosts


def own_hosts(hosts: set[str], live_server) -> set[str]:
    return hosts - {urlsplit(live_server.url).netloc, ""}


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"page-{name}.png", full_page=True)


def test_swagger_ui_draws_the_schema_from_local_files(page, live_server, admin_user):
    log_in(page, live_server)
    hosts = recorded_hosts(page)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20000)
    assert page.locator(".swagger-ui .opblock-summary-path", has_text="/api/v1/search/").count()
    page.wait_for_load_state("networkidle")
    assert own_hosts(hosts, live_server) == set()
    screenshot(page, "api-docs")
    assert page.console_errors == []


def test_no_redoc_page_which_would_load_its_logo_from_a_cdn(client, admin_user):
    client.force_login(admin_user)
    assert client.get("/api/redoc/").status_code == 404


def test_the_docs_ask_for_a_login(page, live_server):
    page.goto(f"{live_server.url}/api/docs/")
    assert "/login/?next=" in page.url


def test_the_browsable_api_serves_logged_in_people(page, live_server, admin_user):
    builders.table(builders.server("db1"), "shop", "orders")
    log_in(page, live_server)
    hosts = recorded_hosts(page)
    page.goto(f"{live_server.url}/api/v1/search/?q=orders")
    assert "Search" in page.locator("h1").inner_text()
    assert '"orders"' in page.locator(".response-info").inner_text()
    page.wait_for_load_state("networkidle")
    assert own_hosts(hosts, live_server) == set()
    assert page.console_errors == []


def test_the_top_bar_search_finds_a_table_on_every_server(page, live_server, admin_user):
    db1, db2 = builders.server("db1"), builders.server("db2")
    on_db1, on_db2 = builders.table(db1, "shop", "orders"), builders.table(db2, "Shop", "Orders")
    builders.table(db1, "logs", "events")
    log_in(page, live_server)
    page.goto(f"{live_server.url}/alerts/")
    page.fill("#topbar-search", "shop.ORD")
    page.press("#topbar-search", "Enter")
    page.wait_for_selector("#search-results")
    assert "/search/?q=shop.ORD" in page.url
    links = page.locator("#search-results tbody tr td:first-child a")
    assert links.evaluate_all("(links) => links.map((a) => a.getAttribute('href'))") == [
        f"/tables/{on_db1.pk}/",
        f"/tables/{on_db2.pk}/",
    ]
    servers = page.locator("#search-results tbody tr td:nth-child(2) a")
    assert servers.all_inner_texts() == ["db1", "db2"]
    assert page.input_value("#topbar-search") == "shop.ORD"
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "search")
    links.first.click()
    page.wait_for_url(f"{live_server.url}/tables/{on_db1.pk}/")
    assert page.console_errors == []
