"""Alerting in the admin: overrides and silences are edited with the API's checks (a
silence remembers who made it); alerts and notifications are read-only records, the
notifications with their SMTP errors."""

import html
from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts.models import Alert, AlertRule, Silence
from tests import builders

pytestmark = pytest.mark.django_db

RULES = "/admin/alerts/alertrule/"
SILENCES = "/admin/alerts/silence/"
ALERTS = "/admin/alerts/alert/"
NOTIFICATIONS = "/admin/alerts/notification/"


def text(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def rule_form(**overrides) -> dict:
    return {
        "rule": "skew",
        "enabled": "on",
        "server": "",
        "tag": "",
        "schema": "",
        "table": "",
        "threshold": "",
        "clear_threshold": "",
        "for_polls": "",
        "severity": "",
        "recipients": "",
        **overrides,
    }


def silence_form(**overrides) -> dict:
    now = timezone.now()
    return {
        "server": "",
        "schema": "",
        "table": "",
        "rule": "",
        "starts_at_0": now.strftime("%Y-%m-%d"),
        "starts_at_1": now.strftime("%H:%M:%S"),
        "ends_at_0": (now + timedelta(days=1)).strftime("%Y-%m-%d"),
        "ends_at_1": now.strftime("%H:%M:%S"),
        "comment": "",
        **overrides,
    }


def test_an_admin_switches_a_rule_off_for_one_table(admin_client):
    db1 = builders.server()

    response = admin_client.post(
        f"{RULES}add/",
        rule_form(enabled="", server=db1.pk, schema="shop", table="orders"),
    )

    assert response.status_code == 302, text(response)
    rule = AlertRule.objects.get()
    assert not rule.enabled and (rule.server, rule.schema, rule.table) == (db1, "shop", "orders")
    assert rule.tag is None  # blank is "everywhere", stored as null as the API shows it
    assert f"server={db1.name}, schema=shop, table=orders" in text(admin_client.get(RULES))


def test_an_override_with_bad_recipients_or_figures_is_refused(admin_client):
    bad_mail = admin_client.post(f"{RULES}add/", rule_form(recipients="dba@example.com, nobody"))
    bad_polls = admin_client.post(f"{RULES}add/", rule_form(for_polls="0"))

    assert "'nobody' is not a valid email address" in text(bad_mail)
    assert "must be between 1 and" in text(bad_polls)
    assert not AlertRule.objects.exists()


def test_recipients_are_stored_as_one_clean_list(admin_client):
    listed = "a@example.com,b@example.com  a@example.com"

    admin_client.post(f"{RULES}add/", rule_form(recipients=listed))

    assert AlertRule.objects.get().recipients == "a@example.com, b@example.com"


def test_a_second_override_for_one_scope_is_refused(admin_client):
    first = AlertRule.objects.create(rule="skew", schema="shop")

    response = admin_client.post(f"{RULES}add/", rule_form(schema="shop"))

    assert f"Rule {first.pk} already overrides" in text(response)
    assert AlertRule.objects.count() == 1


def test_a_silence_added_in_the_admin_is_the_admins(admin_client, admin_user):
    db1 = builders.server()

    response = admin_client.post(
        f"{SILENCES}add/", silence_form(server=db1.pk, rule="runway", comment="maintenance")
    )

    assert response.status_code == 302, text(response)
    silence = Silence.objects.get()
    assert silence.created_by == admin_user
    assert (silence.server, silence.schema, silence.rule) == (db1, None, "runway")


def test_a_silence_must_end_after_it_starts_and_within_the_limit(admin_client):
    now = timezone.now()
    backwards = silence_form(ends_at_0=(now - timedelta(days=1)).strftime("%Y-%m-%d"))
    too_long = silence_form(ends_at_0=(now + timedelta(days=60)).strftime("%Y-%m-%d"))

    assert "must be after starts_at" in text(admin_client.post(f"{SILENCES}add/", backwards))
    assert "at most 30 days" in text(admin_client.post(f"{SILENCES}add/", too_long))
    assert not Silence.objects.exists()


def test_the_silence_add_form_takes_its_fields_from_the_link(admin_client):
    db1 = builders.server()

    page = text(admin_client.get(f"{SILENCES}add/?server={db1.pk}&schema=shop&rule=runway"))

    assert f'<option value="{db1.pk}" selected>' in page
    assert 'name="schema" value="shop"' in page
    assert '<option value="runway" selected>' in page


def test_end_now_ends_the_selected_silences(admin_client):
    silence = builders.silence(hours=8)

    admin_client.post(SILENCES, {"action": "end_now", "_selected_action": [silence.pk]})

    silence.refresh_from_db()
    assert silence.ends_at <= timezone.now()


def test_alerts_are_listed_read_only_and_filtered_by_state_rule_and_server(admin_client):
    db1, db2 = builders.server("db1"), builders.server("db2")
    firing = builders.alert(db1, "runway", of=builders.table(db1))
    resolved = builders.alert(db1, "skew", "resolved", of=builders.table(db1, name="events"))
    down = builders.alert(db2, "unreachable")

    def listed(query: str) -> set[int]:
        response = admin_client.get(f"{ALERTS}?{query}")
        assert response.status_code == 200
        return {alert.pk for alert in response.context["cl"].result_list}

    assert listed("state__exact=firing") == {firing.pk, down.pk}
    assert listed("rule__exact=skew") == {resolved.pk}
    assert listed(f"server__id__exact={db2.pk}") == {down.pk}
    assert "(the server)" in text(admin_client.get(ALERTS))
    assert admin_client.get(f"{ALERTS}add/").status_code == 403
    change = admin_client.post(f"{ALERTS}{firing.pk}/change/", {"state": "resolved"})
    assert change.status_code == 403
    assert Alert.objects.get(pk=firing.pk).state == "firing"
    assert "shop.orders" in text(admin_client.get(f"{ALERTS}{firing.pk}/change/"))


def test_notifications_show_their_smtp_failures(admin_client):
    db1 = builders.server("db1")
    refused = builders.notification(
        db1, error="SMTPRecipientsRefused: 550 no such user", attempts=3
    )
    sent = builders.notification(db1)

    page = text(admin_client.get(NOTIFICATIONS))
    failed = admin_client.get(f"{NOTIFICATIONS}?delivery=failed")

    assert "SMTPRecipientsRefused: 550 no such user" in page
    assert {n.pk for n in failed.context["cl"].result_list} == {refused.pk}
    assert sent.pk not in {n.pk for n in failed.context["cl"].result_list}
    assert admin_client.get(f"{NOTIFICATIONS}add/").status_code == 403
    assert "550 no such user" in text(admin_client.get(f"{NOTIFICATIONS}{refused.pk}/change/"))


def test_a_clear_threshold_on_the_firing_side_is_refused(admin_client):
    response = admin_client.post(
        f"{RULES}add/", rule_form(rule="runway", threshold="14", clear_threshold="7")
    )

    assert "must be above the threshold (14): runway fires below it" in text(response)
    assert not AlertRule.objects.exists()


def test_the_alert_list_shows_bidi_characters_in_names_escaped(admin_client):
    db1 = builders.server("db1")
    builders.alert(db1, "skew", of=builders.table(db1, "shop", "orders\u202etxt.exe"))
    listed = text(admin_client.get(ALERTS))
    assert "shop.orders\\u202etxt.exe" in listed and "\u202e" not in listed
