"""Badges as the server renders them: the top bar's "Alerts" with the fleet's firing
count, the server and table pages' badges linking to the alerts page filtered to them.
(The fleet page's per-server badges are drawn by its script: see test_alerts_browser.)"""

import re

import pytest

from tests import builders

pytestmark = pytest.mark.django_db


def badge(page: str) -> tuple[str, str]:
    """(href, text) of the page's alert badge."""
    found = re.search(r'<a id="alert-badge" href="([^"]+)"[^>]*>([^<]*)</a>', page)
    assert found, "the page has an alert badge"
    return found.group(1), found.group(2)


def test_the_server_page_badge_counts_its_firing_alerts_and_links_to_them(admin_client):
    db1, db2 = builders.server("db1"), builders.server("db2")
    builders.alert(db1, "runway", of=builders.table(db1))
    builders.alert(db1, "skew", of=builders.table(db1, name="events"))
    builders.alert(db1, "skew", "resolved", of=builders.table(db1, name="gone"))
    builders.alert(db2, "unreachable")

    page = admin_client.get(f"/servers/{db1.pk}/").content.decode()

    assert badge(page) == (f"/alerts/?server={db1.pk}", "2 firing")


def test_the_table_page_badge_counts_the_tables_alerts(admin_client):
    db1 = builders.server("db1")
    orders, events = builders.table(db1), builders.table(db1, name="events")
    builders.alert(db1, "runway", of=orders)
    builders.alert(db1, "skew", of=events)
    builders.alert(db1, "unreachable")

    page = admin_client.get(f"/tables/{orders.pk}/").content.decode()

    assert badge(page) == (f"/alerts/?table={orders.pk}", "1 firing")


def test_pending_or_silenced_alerts_show_as_such_and_none_as_a_quiet_link(admin_client):
    db1, db2, db3 = builders.server("db1"), builders.server("db2"), builders.server("db3")
    builders.alert(db1, "unreachable", "pending")
    builders.alert(db2, "unreachable")
    builders.silence(server=db2)

    assert badge(admin_client.get(f"/servers/{db1.pk}/").content.decode())[1] == "1 pending"
    assert badge(admin_client.get(f"/servers/{db2.pk}/").content.decode())[1] == "1 silenced"
    assert badge(admin_client.get(f"/servers/{db3.pk}/").content.decode())[1] == "no alerts firing"


def test_the_top_bar_links_to_alerts_with_the_fleets_unsilenced_firing_count(admin_client):
    db1, db2 = builders.server("db1"), builders.server("db2")
    builders.alert(db1, "unreachable")
    builders.alert(db2, "unreachable")
    builders.alert(db2, "skew", of=builders.table(db2))
    builders.silence(server=db2, rule="skew")

    page = admin_client.get("/").content.decode()

    nav = re.search(r'<a href="/alerts/" id="nav-alerts">(.*?)</a>', page)
    assert nav and re.sub(r"<[^>]+>", "", nav.group(1)).split() == ["Alerts", "2"]


def test_the_alerts_page_passes_on_only_filters_the_api_takes(admin_client):
    db1 = builders.server("db1")
    orders = builders.table(db1)

    good = admin_client.get(f"/alerts/?server={db1.pk}&rule=runway&table={orders.pk}")
    bad = admin_client.get("/alerts/?server=db1&rule=nonsense&table=%C2%B2")

    assert (good.context["chosen_server"], good.context["chosen_rule"]) == (str(db1.pk), "runway")
    assert good.context["table"] == orders
    assert 'data-server="" data-rule="" data-table=""' in bad.content.decode()


def test_the_alerts_page_needs_a_login(client):
    assert client.get("/alerts/").status_code == 302
