"""The alerts page, the badges and the silence page in a real browser (Debian's Chromium
through Playwright), on alerts, silences and notifications built directly in the
database: what a DBA sees, follows and clicks."""

import pytest

from tests import builders
from tests.conftest import ARTIFACTS, PAGE_READY_MS, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("built_frontend"),
]

PRIME_FIX = {
    "advice": "A prime number of partitions spreads the steps.",
    "sql": "ALTER TABLE `shop`.`orders` ADD PARTITION PARTITIONS 3",
    "safety": "copies",
    "rows": 900,
    "bytes": 1 << 20,
}
SMTP_ERROR = "SMTPRecipientsRefused: {'dba@example.com': (550, b'5.1.1 no such user')}"


@pytest.fixture
def fleet():
    """Two servers: db1 with a firing runway alert (with its fix), a firing skew alert,
    a pending one, a silenced one and a resolved one; db2 unreachable; one failed email."""
    db1, db2 = builders.server("db1"), builders.server("db2")
    orders = builders.table(db1, name="orders")
    events = builders.table(db1, name="events", method="HASH")
    logs = builders.table(db1, name="logs", method="HASH")
    audit = builders.table(db1, name="audit", method="HASH")
    alerts = {
        "runway": builders.alert(
            db1,
            "runway",
            of=orders,
            partition="p_max",
            fix=builders.RUNWAY_FIX,
            message="3 days left",
        ),
        "skew": builders.alert(
            db1, "skew", of=events, severity="warning", fix={"advice": "Use KEY.", "sql": None}
        ),
        "pending": builders.alert(db1, "skew", "pending", of=logs, severity="warning"),
        "silenced": builders.alert(db1, "hotspot", of=audit),
        "resolved": builders.alert(
            db1, "skew", "resolved", of=orders, message="evened out", fix=PRIME_FIX
        ),
        "down": builders.alert(db2, "unreachable", fix=None, message="connection refused"),
    }
    builders.silence(server=db1, schema="shop", table="audit", comment="archiving audit")
    builders.notification(db1, error=SMTP_ERROR, attempts=3)
    return {"db1": db1, "db2": db2, "orders": orders, "alerts": alerts}


def open_page(page, live_server, path: str, ready: str):
    page.goto(f"{live_server.url}{path}")
    page.wait_for_selector(f"{ready}[data-ready]", state="attached", timeout=PAGE_READY_MS)


def listed(page, section: str) -> list[int]:
    return [
        int(i)
        for i in page.locator(f"#{section} li.alert").evaluate_all(
            "(items) => items.map((item) => item.dataset.id)"
        )
    ]


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"page-{name}.png", full_page=True)


def test_the_alerts_page_shows_firing_pending_silenced_history_and_failed_emails(
    page, live_server, admin_user, fleet
):
    alerts = fleet["alerts"]
    log_in(page, live_server)
    open_page(page, live_server, "/alerts/", "#alerts-page")

    firing = {alerts["runway"].pk, alerts["skew"].pk, alerts["down"].pk}
    assert set(listed(page, "firing")) == firing
    assert listed(page, "firing")[0] != alerts["skew"].pk  # critical first
    assert listed(page, "pending") == [alerts["pending"].pk]
    assert listed(page, "silenced") == [alerts["silenced"].pk]
    assert listed(page, "history") == [alerts["resolved"].pk]

    runway = page.locator(f"#firing li[data-id='{alerts['runway'].pk}']")
    assert runway.locator("pre.sql code").inner_text() == builders.RUNWAY_FIX["sql"]
    assert builders.RUNWAY_FIX["advice"] in runway.locator(".advice").inner_text()
    # What running it does, in one line under the statement; none without a statement.
    assert runway.locator(".fix .safety").inner_text() == "Safety: copies ~1,200 rows, 5.0 MiB"
    skew = page.locator(f"#firing li[data-id='{alerts['skew'].pk}']")
    assert skew.locator(".advice").count() == 1 and skew.locator(".safety").count() == 0
    assert "3 days left" in runway.inner_text() and "p_max" in runway.inner_text()
    table_link = runway.locator("a.table-link")
    assert table_link.inner_text() == "shop.orders"
    assert table_link.get_attribute("href") == f"/tables/{fleet['orders'].pk}/"
    server_link = runway.locator("a.server-link")
    assert server_link.get_attribute("href") == f"/servers/{fleet['db1'].pk}/"
    skew = page.locator(f"#firing li[data-id='{alerts['skew'].pk}']")
    assert skew.locator(".advice").inner_text() == "Use KEY." and skew.locator("pre").count() == 0
    down = page.locator(f"#firing li[data-id='{alerts['down'].pk}']")
    assert down.locator("a.table-link").count() == 0 and "server db2" in down.inner_text()

    assert "archiving audit" in page.locator("#silences").inner_text()
    failure = page.locator("#delivery li.failure")
    assert failure.count() == 1
    assert SMTP_ERROR in failure.locator(".last-error-text").inner_text()
    assert "not sent after 3 attempts" in failure.inner_text()
    assert page.locator("#nav-alerts .badge").inner_text() == "3"

    screenshot(page, "alerts")
    assert page.console_errors == []


def test_a_resolved_alert_reads_resolved_and_folds_the_fix_that_was_proposed(
    page, live_server, admin_user, fleet
):
    log_in(page, live_server)
    open_page(page, live_server, "/alerts/", "#alerts-page")
    resolved = page.locator(f"#history li[data-id='{fleet['alerts']['resolved'].pk}']")
    firing = page.locator(f"#firing li[data-id='{fleet['alerts']['runway'].pk}']")

    badge = resolved.locator(".alert-head .badge")
    assert badge.inner_text() == "resolved (was critical)"
    assert "sev-critical" not in badge.get_attribute("class")
    red = firing.locator(".alert-head .badge").evaluate(
        "(b) => getComputedStyle(b).backgroundColor"
    )
    assert badge.evaluate("(b) => getComputedStyle(b).backgroundColor") != red
    # The fix is folded away under what it was, its statement hidden until asked for.
    fold = resolved.locator("details.proposed-fix")
    assert fold.locator("summary").inner_text().startswith("The fix that was proposed")
    assert fold.get_attribute("open") is None
    assert not resolved.locator("pre.sql").is_visible()
    assert firing.locator("pre.sql").is_visible()  # a firing alert's fix is still to run
    fold.locator("summary").click()
    assert resolved.locator("pre.sql code").inner_text() == PRIME_FIX["sql"]
    assert page.console_errors == []


def test_the_alerts_page_filters_by_server_and_rule(page, live_server, admin_user, fleet):
    alerts = fleet["alerts"]
    log_in(page, live_server)
    open_page(page, live_server, "/alerts/", "#alerts-page")

    page.select_option("#server-filter", label="db2")
    page.wait_for_url(f"{live_server.url}/alerts/?server={fleet['db2'].pk}")
    page.wait_for_selector("#alerts-page[data-ready]", state="attached")
    assert listed(page, "firing") == [alerts["down"].pk]
    assert listed(page, "history") == [] and listed(page, "pending") == []
    assert page.locator("#delivery li.failure").count() == 0  # db1's email

    page.select_option("#server-filter", label="db1")
    page.wait_for_selector("#alerts-page[data-ready]", state="attached")
    page.select_option("#rule-filter", value="skew")
    page.wait_for_url(f"{live_server.url}/alerts/?server={fleet['db1'].pk}&rule=skew")
    page.wait_for_selector("#alerts-page[data-ready]", state="attached")
    assert listed(page, "firing") == [alerts["skew"].pk]
    assert listed(page, "pending") == [alerts["pending"].pk]
    assert listed(page, "history") == [alerts["resolved"].pk]
    assert page.console_errors == []


def test_badges_on_the_fleet_server_and_table_pages_lead_to_their_alerts(
    page, live_server, admin_user, fleet
):
    db1, orders = fleet["db1"], fleet["orders"]
    log_in(page, live_server)
    open_page(page, live_server, "/", "#servers")

    row = page.locator("#servers tbody tr[data-server='db1']")
    assert row.locator("a.alert-badge.firing").inner_text() == "2 firing"
    assert "1 pending" in row.locator("a.alert-badge").get_attribute("title")
    assert page.locator("#servers tr[data-server='db2'] a.alert-badge").inner_text() == "1 firing"
    row.locator("a.alert-badge").click()
    page.wait_for_url(f"{live_server.url}/alerts/?server={db1.pk}")
    page.wait_for_selector("#alerts-page[data-ready]", state="attached")
    assert len(listed(page, "firing")) == 2

    open_page(page, live_server, f"/servers/{db1.pk}/", "#server-page")
    assert page.locator("h1 #alert-badge").inner_text() == "2 firing"
    open_page(page, live_server, f"/tables/{orders.pk}/", "#table-page")
    badge = page.locator("h1 #alert-badge")
    assert badge.inner_text() == "1 firing"
    badge.click()
    page.wait_for_url(f"{live_server.url}/alerts/?table={orders.pk}")
    page.wait_for_selector("#alerts-page[data-ready]", state="attached")
    assert listed(page, "firing") == [fleet["alerts"]["runway"].pk]
    assert listed(page, "history") == [fleet["alerts"]["resolved"].pk]
    assert "shop.orders" in page.locator("h1").inner_text()
    screenshot(page, "alerts-of-a-table")


def test_silencing_an_alert_from_its_link_for_24_hours(page, live_server, admin_user, fleet):
    runway = fleet["alerts"]["runway"]
    log_in(page, live_server)
    open_page(page, live_server, "/alerts/", "#alerts-page")

    page.locator(f"#firing li[data-id='{runway.pk}'] a.silence-link").click()
    page.wait_for_url("**/alerts/silence/?**")
    assert page.locator("#id_server option:checked").inner_text() == "db1"
    assert page.input_value("#id_schema") == "shop"
    assert page.input_value("#id_table") == "orders"
    assert page.input_value("#id_rule") == "runway"
    assert page.locator("#matched li").count() == 1
    screenshot(page, "silence")
    page.check("input[name=duration][value='24h']")
    page.fill("#id_comment", "adding partitions tonight")
    page.click("#silence-submit")

    page.wait_for_url(f"{live_server.url}/alerts/?server={fleet['db1'].pk}")
    page.wait_for_selector("#alerts-page[data-ready]", state="attached")
    assert "Silenced until" in page.locator("ul.messages").inner_text()
    assert runway.pk in listed(page, "silenced") and runway.pk not in listed(page, "firing")
    assert "adding partitions tonight" in page.locator("#silences").inner_text()
    assert page.console_errors == []


def test_the_silence_page_needs_a_login(page, live_server, fleet):
    page.goto(f"{live_server.url}/alerts/silence/?server={fleet['db1'].pk}&rule=runway")

    assert "/login/?next=" in page.url


def test_acknowledging_an_alert_on_the_page_and_its_history(page, live_server, admin_user, fleet):
    """An operator acknowledges a firing alert with a comment: the page says who and
    when, without a reload; its history page lists the acknowledgement."""
    runway = fleet["alerts"]["runway"]
    log_in(page, live_server)
    open_page(page, live_server, "/alerts/", "#alerts-page")
    item = f"#firing li[data-id='{runway.pk}']"
    page.locator(f"{item} details.ack summary").click()
    page.fill(f"{item} .ack-form textarea", "adding partitions now")
    page.locator(f"{item} .ack-form button").click()
    page.wait_for_selector(f"{item} .acknowledged")
    said = page.locator(f"{item} .acknowledged").inner_text()
    assert "Acknowledged by admin" in said and "adding partitions now" in said
    assert page.locator(f"{item} .acked-badge").count() == 1
    runway.refresh_from_db()
    assert runway.ack_comment == "adding partitions now"

    page.locator(f"{item} a.history-link").click()
    page.wait_for_url(f"**/alerts/{runway.pk}/")
    assert "acknowledged by admin" in page.locator("#alert-acks").inner_text()
    assert "adding partitions now" in page.locator("#alert-ack").inner_text()
    screenshot(page, "alert-history")
    assert page.console_errors == []


def test_the_link_in_a_message_acknowledges_without_a_login(page, live_server, fleet):
    from partdash.alerts.acks import link_token

    skew = fleet["alerts"]["skew"]
    page.goto(f"{live_server.url}/alerts/ack/{link_token(skew)}/")
    assert "shop.events" in page.locator("#ack-alert").inner_text()
    page.fill("#ack-form textarea", "seen on my phone")
    page.click("#ack-submit")
    page.wait_for_selector("#ack-done")
    assert "someone with the link in a message" in page.locator("#ack-done").inner_text()
    skew.refresh_from_db()
    assert skew.acknowledged_at is not None and skew.ack_comment == "seen on my phone"
    page.goto(f"{live_server.url}/alerts/ack/{link_token(skew)}x/")
    assert "not one partdash made" in page.locator("#ack-refused").inner_text()
    assert page.console_errors == [] or all("400" in e for e in page.console_errors)
