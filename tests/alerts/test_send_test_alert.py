"""A test alert, sent now to everyone alert emails go to: `manage.py sendtestalert`, the
alerts page's button and `POST /api/v1/alerts/test/`, through a real SMTP server."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from partdash.alerts.models import AlertRule
from tests.conftest import token_client

pytestmark = pytest.mark.django_db
TEST_API = "/api/v1/alerts/test/"


@pytest.fixture(autouse=True)
def _smtp(smtp_settings):
    smtp_settings.ALERT_EMAILS = ["ops@example.com"]
    AlertRule.objects.create(rule="skew", recipients="DBA@example.com, ops@example.com")
    AlertRule.objects.create(rule="runway", recipients="off@example.com", enabled=False)
    return smtp_settings


@pytest.fixture
def operator_api(operator):
    return token_client(operator)


def sendtestalert(*args: str) -> str:
    out = io.StringIO()
    call_command("sendtestalert", *args, stdout=out)
    return out.getvalue().strip()


def test_sendtestalert_emails_alert_emails_and_every_enabled_rule_s_recipients(mailbox):
    said = sendtestalert()

    assert said == "test alert sent to dba@example.com, ops@example.com"
    (sent,) = mailbox.emails()
    assert sent.recipients == ["dba@example.com", "ops@example.com"]
    assert sent.subject == "[partdash] test alert"
    assert sent.text.startswith("TEST: this is a test alert from partdash. Nothing is wrong.")
    assert "at the request of manage.py" in sent.text
    assert "https://partdash.example.com/alerts/" in sent.html
    assert sendtestalert("email") == said  # the email channel, named


def test_sendtestalert_with_nobody_to_send_to_exits_1_saying_so(mailbox, smtp_settings):
    smtp_settings.ALERT_EMAILS = []
    AlertRule.objects.all().delete()
    with pytest.raises(CommandError) as refused:
        sendtestalert()
    assert refused.value.returncode == 1
    assert (
        str(refused.value)
        == "no email recipients: set ALERT_EMAILS, or recipients on an alert rule"
    )
    assert mailbox.count() == 0


def test_sendtestalert_with_the_smtp_server_down_exits_1_with_its_error(mailbox):
    mailbox.stop()
    with pytest.raises(CommandError) as failed:
        sendtestalert()
    assert failed.value.returncode == 1
    assert str(failed.value).startswith("test alert not sent: ConnectionRefusedError")


def test_sendtestalert_refuses_a_channel_it_does_not_know():
    with pytest.raises(CommandError, match="unknown channel 'slack': one of email$"):
        sendtestalert("slack")


def test_an_operator_sends_one_through_the_api_and_a_viewer_may_not(
    mailbox, operator_api, viewer_api
):
    assert viewer_api.post(TEST_API).status_code == 403
    response = operator_api.post(TEST_API)

    assert response.status_code == 200
    assert response.json() == {"sent_to": ["dba@example.com", "ops@example.com"]}
    (sent,) = mailbox.emails()
    assert "at the request of operator" in sent.text


def test_the_api_says_what_the_smtp_server_answered_when_it_fails(mailbox, operator_api):
    mailbox.stop()
    response = operator_api.post(TEST_API)
    assert response.status_code == 502
    assert response.json()["detail"].startswith("test alert not sent: ConnectionRefusedError")


def test_the_alerts_page_offers_operators_the_button_and_says_where_it_went(
    mailbox, operator, viewer
):
    client = Client()
    client.force_login(operator)
    assert b'id="send-test-alert"' in client.get("/alerts/").content

    page = client.post("/alerts/test/", follow=True)

    assert page.redirect_chain == [("/alerts/", 302)]
    assert b"Test alert sent to dba@example.com, ops@example.com." in page.content
    assert mailbox.count() == 1
    reader = Client()
    reader.force_login(viewer)
    assert b'id="send-test-alert"' not in reader.get("/alerts/").content
    assert reader.post("/alerts/test/").status_code == 403
    assert mailbox.count() == 1
