"""The fleet page at a thousand servers in a real browser (issue 41): a page of 50
servers, worst first, with page controls and the status, group and tag filters; the
rows are built in the database (tests/builders.py `fleet_of`)."""

import pytest

from tests import builders
from tests.conftest import PAGE_READY_MS, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]


def shown(page) -> list[str]:
    return page.locator("#servers tbody tr[data-server]").evaluate_all(
        "(rows) => rows.map((row) => row.dataset.server)"
    )


def wait_for(page, first: str) -> None:
    page.wait_for_selector(f"#servers tbody tr[data-server='{first}']", timeout=PAGE_READY_MS)


def test_the_fleet_page_pages_and_filters_a_thousand_servers(page, live_server, admin_user):
    builders.fleet_of(1000)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("#servers[data-ready]", state="attached", timeout=PAGE_READY_MS)

    # Worst first: the servers with a firing critical alert (every tenth) lead.
    assert shown(page) == [f"db{n:04}" for n in range(0, 500, 10)]
    pager = page.locator("#fleet-pager")
    assert pager.locator(".count").inner_text() == "servers 1-50 of 1000, page 1 of 20"
    assert pager.locator("button", has_text="Previous").is_disabled()

    pager.locator("button", has_text="Next").click()
    wait_for(page, "db0500")
    assert shown(page)[:2] == ["db0500", "db0510"]
    assert "page=2" in page.url
    assert pager.locator(".count").inner_text() == "servers 51-100 of 1000, page 2 of 20"

    # A filter goes back to the first page; they combine, as the API's do.
    page.select_option("#status-filter", value="degraded")
    wait_for(page, "db0001")
    assert pager.locator(".count").inner_text() == "servers 1-50 of 250, page 1 of 5"
    page.select_option("#tag-filter", value="odd")
    page.select_option("#group-filter", value="half")
    page.select_option("#fleet-ordering", value="name")
    page.wait_for_function(
        "() => document.querySelectorAll('#servers tbody tr[data-server]')[1]?.dataset.server"
        " === 'db0005'"
    )
    assert pager.locator(".count").inner_text() == "servers 1-50 of 125, page 1 of 3"
    assert shown(page)[:3] == ["db0001", "db0005", "db0009"]
    assert page.url.endswith("?status=degraded&tag=odd&group=half&ordering=name")

    # Past the last page (an old link): the last page instead.
    page.goto(f"{live_server.url}/?ordering=name&page=99")
    wait_for(page, "db0950")
    assert pager.locator(".count").inner_text() == "servers 951-1000 of 1000, page 20 of 20"
    assert pager.locator("button", has_text="Next").is_disabled()
    assert page.console_errors == []
