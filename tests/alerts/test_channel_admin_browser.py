"""In a real browser (Debian's Chromium through Playwright): a view-only staff user opens
a channel's admin page and finds no secret part of its URL anywhere in the page, only its
scheme and host; an operator with staff status replaces the URL there (issue 37,
point 3)."""

import pytest

from partdash.alerts.models import Channel
from tests.conftest import log_in_through_the_page, user_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOOK = "https://bot:hunter2-pw@hooks.example.com/hook/hook-secret-42?token=tok-secret-43"
SECRETS = ("hunter2-pw", "hook-secret-42", "tok-secret-43", "bot:")
SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"


def test_a_viewer_sees_no_secret_and_an_operator_replaces_it(page, live_server, django_user_model):
    made = Channel(name="ops-hook", kind="webhook")
    made.set_url(HOOK)
    made.save()
    user_in(django_user_model, "looker", "viewers", is_staff=True)
    user_in(django_user_model, "oncall", "operators", is_staff=True)
    change = f"{live_server.url}/admin/alerts/channel/{made.pk}/change/"

    log_in_through_the_page(page, live_server, "looker", "looker-pw")
    page.goto(change)
    page.wait_for_selector("#channel_form")
    everything = page.content() + page.inner_text("body")
    assert not [secret for secret in SECRETS if secret in everything]
    assert page.locator(".field-address .readonly").inner_text() == "https://hooks.example.com/…"
    assert page.locator("input[name=url]").count() == 0
    assert page.locator("input[name=_save]").count() == 0  # viewing only

    page.context.clear_cookies()
    log_in_through_the_page(page, live_server, "oncall", "oncall-pw")
    page.goto(change)
    url_box = page.locator("input[name=url]")
    assert url_box.input_value() == ""  # write-only: never filled in
    assert not [secret for secret in SECRETS if secret in page.content()]
    url_box.fill(SLACK)
    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist .success")
    assert page.locator(".field-address .readonly").inner_text() == "slack://…"
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in page.content()
    made.refresh_from_db()
    assert made.url() == SLACK and made.kind == "slack"
    assert page.console_errors == []
