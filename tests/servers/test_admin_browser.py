"""In a real browser (Debian's Chromium through Playwright): log in, register a server in
the admin, see it listed in the admin and on the fleet page (after a poll built in the
database, tests/builders.py); Test connection reports a real MariaDB."""

import pytest

from tests import builders
from tests.conftest import ARTIFACTS, log_in, log_in_through_the_page, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_registers_a_server_and_sees_it_listed(page, live_server, admin_user):
    from partdash.servers.models import Server

    host, port = "127.0.0.1", 3307

    ARTIFACTS.mkdir(exist_ok=True)
    log_in_through_the_page(page, live_server)
    page.click("a[href='/admin/servers/server/add/']")
    page.fill("#id_name", "browser-db")
    page.fill("#id_host", host)
    page.fill("#id_port", str(port))
    page.fill("#id_user", "root")
    page.fill("#id_password", "not-shown-again")
    page.fill("#id_poll_interval", "60")
    page.fill("#id_tags", "prod, eu")
    page.screenshot(path=ARTIFACTS / "admin-add-server.png", full_page=True)
    page.click("input[name=_save]")

    page.wait_for_url(f"{live_server.url}/admin/servers/server/")
    row = page.locator("#result_list tbody tr", has_text="browser-db")
    assert row.count() == 1
    assert f"{host}:{port}" in row.inner_text()
    assert "not-shown-again" not in page.content()
    page.screenshot(path=ARTIFACTS / "admin-server-list.png", full_page=True)

    server = Server.objects.get(name="browser-db")
    assert server.get_password() == "not-shown-again"
    builders.poll(server)  # performance_schema OFF: degraded

    page.goto(f"{live_server.url}/")
    fleet_row = page.locator("#servers tbody tr[data-server='browser-db']")
    fleet_row.wait_for()
    assert "degraded" in fleet_row.inner_text()
    page.screenshot(path=ARTIFACTS / "fleet.png", full_page=True)
    assert page.console_errors == []


def test_the_test_connection_button_reports_the_server(page, live_server, admin_user, mariadb):
    from partdash.servers.models import Server

    server = Server.objects.create(
        name="probe-me", host=mariadb.host, port=mariadb.port, user="root"
    )
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/servers/server/{server.pk}/change/")
    page.click("button.test-connection")
    result = page.locator(".probe-result")
    wait_until(lambda: result.count() == 1, timeout=10, what="the probe result")
    text = result.inner_text()
    assert "Reachable" in text and "MariaDB" in text
    assert "performance_schema" in text
    page.screenshot(path=ARTIFACTS / "admin-test-connection.png", full_page=True)
    assert page.console_errors == []
