"""Alert channels in this process, against a local receiver: partdash's JSON webhook, and
Apprise's own Slack and Teams requests reaching the receiver as their services' hosts
(`tests.alerts.receiver`). One message per channel per evaluation beside the email, each
transition in one message per channel, failures recorded without the URL, the channel's
rules and severity, a new channel told what is firing once, test messages; and the URL,
which holds the service's secret, never shown back, logged or stored in clear."""

import json
import logging
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from partdash.alerts import channels, delivery
from partdash.alerts.listing import alerts_as_shown
from partdash.alerts.models import Alert, Channel, ChannelKind, Notification, Transition
from partdash.alerts.service import Evaluation
from partdash.api.alerts import AlertSerializer
from partdash.health.alerting import Condition, Key
from tests import builders
from tests.alerts.mailbox import transition
from tests.alerts.receiver import Receiver
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"
TEAMS = (
    "workflows://prod-00.westus.logic.azure.com:443/"
    "abcdef0123456789abcdef0123456789/sigSecret0123456789?api-version=2016-06-01&sp=x&sv=1.0"
)
SECRETS = ("TIiajkdnlazkcOXrIdevi7FQ", "sigSecret0123456789", "hook-secret-42")


@pytest.fixture
def receiver(tmp_path, monkeypatch, settings):
    settings.PARTDASH_CHANNEL_ALLOW = ["loopback"]  # (the receiver and its proxy listen there)
    box = Receiver(tmp_path).start()
    for name, value in box.proxy_env().items():
        monkeypatch.setenv(name, value)
    yield box
    box.stop()


@pytest.fixture(autouse=True)
def _smtp(smtp_settings):
    return smtp_settings


SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "webhook.schema.json").read_text())


def assert_documented(body: dict) -> None:
    """`body` is what docs/webhook.schema.json says a webhook body is."""
    jsonschema.validate(body, SCHEMA, format_checker=jsonschema.FormatChecker())


def webhook_url(receiver: Receiver) -> str:
    return f"{receiver.url}/hook/hook-secret-42?token=hook-secret-42"


def channel(name: str, url: str, **fields) -> Channel:
    made = Channel(name=name, kind=channels.kind_of(url), **fields)
    made.set_url(url)
    made.save()
    return made


def firing(on, of=None, rule="runway", **fields):
    return builders.alert(on, rule=rule, of=of, **{"notified_at": None, **fields})


def test_kinds_by_url():
    assert channels.kind_of(SLACK) == ChannelKind.SLACK
    assert channels.kind_of("https://hooks.slack.com/services/A/B/C") == ChannelKind.SLACK
    assert channels.kind_of(TEAMS) == ChannelKind.MSTEAMS
    assert channels.kind_of("https://x.webhook.office.com/webhookb2/a") == ChannelKind.MSTEAMS
    assert channels.kind_of("pagerduty://key@key") == ChannelKind.PAGERDUTY
    assert channels.kind_of("opsgenie://key") == ChannelKind.OPSGENIE
    assert channels.kind_of("tgram://1:abc/2") == ChannelKind.TELEGRAM
    assert channels.kind_of("discord://1/abc") == ChannelKind.DISCORD
    assert channels.kind_of("matrixs://u:p@matrix.example.org/#room") == ChannelKind.MATRIX
    assert channels.kind_of("ntfys://ntfy.sh/topic") == ChannelKind.NTFY
    assert channels.kind_of("https://hooks.example.com/partdash") == ChannelKind.WEBHOOK
    # Only the services the docs list (issue 37: IRC's plugin took CR/LF into a Redis).
    for bad in ("", "hooks.slack.com/services/a", "slack", "pover://user@token", "irc://h/#c"):
        with pytest.raises(channels.ChannelRefused):
            channels.kind_of(bad)


def test_one_message_per_channel_beside_the_email(receiver, mailbox):
    """An evaluation of two transitions: one email, one Slack message, one Teams message
    and one webhook POST, each holding both transitions; the webhook's body is the
    documented JSON, its alerts with the API's fields and their page."""
    db1 = builders.server("db1")
    orders = builders.table(db1, "shop", "orders")
    channel("slack", SLACK)
    channel("teams", TEAMS)
    channel("hook", webhook_url(receiver))
    runway = firing(db1, orders)
    transition(runway)
    transition(firing(db1, None, "unreachable", severity="warning"))

    outcomes = delivery.deliver_evaluation(db1.pk, "eval-1")

    assert [outcome.sent for _, outcome in outcomes] == [True] * 4
    assert len(mailbox.emails()) == 1
    by_host = {r.host: r for r in receiver.wait_for(3)}
    assert set(by_host) == {"hooks.slack.com", "prod-00.westus.logic.azure.com", "127.0.0.1"}
    assert len(receiver.received) == 3
    slack = by_host["hooks.slack.com"]
    assert slack.path == "/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"
    attachment = slack.json()["attachments"][0]
    assert attachment["title"] == "[partdash] db1: 2 firing, 0 resolved"
    assert "FIRING runway shop.orders value 3 threshold 14" in attachment["text"]
    assert "FIRING unreachable db1 value 3 threshold 14" in attachment["text"]
    assert f"https://partdash.example.com/tables/{orders.pk}/" in attachment["text"]
    card = by_host["prod-00.westus.logic.azure.com"].json()["attachments"][0]["content"]
    assert card["type"] == "AdaptiveCard"
    blocks = {block.get("id"): block.get("text", "") for block in card["body"]}
    assert blocks["title"] == "[partdash] db1: 2 firing, 0 resolved"
    shown = blocks["body"].replace("\\", "")  # (Markdown's escapes, as Teams shows them)
    assert "FIRING runway shop.orders value 3 threshold 14" in shown
    hook = by_host["127.0.0.1"]
    assert hook.path == "/hook/hook-secret-42?token=hook-secret-42"
    assert hook.headers["Content-Type"] == "application/json"
    body = hook.json()
    assert body["version"] == 1 and body["source"] == "partdash"
    assert body["server"] == {"id": db1.pk, "name": "db1"}
    assert body["subject"] == "[partdash] db1: 2 firing, 0 resolved"
    assert [t["state"] for t in body["transitions"]] == ["FIRING", "FIRING"]
    first = body["transitions"][0]
    assert first["alert"]["id"] == runway.pk and first["kind"] == "firing"
    assert first["value"] == 3.0 and first["threshold"] == 14.0
    api = AlertSerializer(alerts_as_shown().get(pk=runway.pk)).data
    assert set(first["alert"]) == set(api) | {"url"}
    assert {k: first["alert"][k] for k in ("rule", "severity", "schema", "table", "state")} == {
        k: api[k] for k in ("rule", "severity", "schema", "table", "state")
    }
    assert first["alert"]["url"] == f"https://partdash.example.com/tables/{orders.pk}/"
    assert_documented(body)
    # Sent: the alert's firing announced; a second delivery sends nothing again.
    assert Alert.objects.get(pk=runway.pk).notified_at is not None
    assert delivery.deliver_evaluation(db1.pk, "eval-1") == []
    assert len(receiver.received) == 3 and len(mailbox.emails()) == 1


def test_two_workers_grouping_make_one_message_per_channel(receiver):
    db1 = builders.server("db1")
    hook = channel("hook", webhook_url(receiver))
    transition(firing(db1, builders.table(db1, "a", "b")))
    made = channels.group_evaluation(db1.pk, "eval-1")
    assert len(made) == 1 and channels.group_evaluation(db1.pk, "eval-1") == []
    # And a racing worker's INSERT loses to the unique message per channel and evaluation.
    carried = list(Transition.objects.all())
    assert channels._take(hook, db1.pk, "eval-1", carried) is None
    assert Notification.objects.filter(channel=hook).count() == 1


def test_a_channel_receives_only_its_rules_and_severity(receiver, mailbox):
    db1 = builders.server("db1")
    t = builders.table(db1, "a", "b")
    channel("runway only", webhook_url(receiver), rules=["runway"])
    channel("critical only", webhook_url(receiver) + "&c=1", min_severity="critical")
    channel("off", webhook_url(receiver) + "&off=1", enabled=False)
    transition(firing(db1, t, "runway", severity="warning"))
    transition(firing(db1, t, "skew", severity="critical"))
    transition(firing(db1, t, "hotspot", severity="warning"), silenced=True)

    delivery.deliver_evaluation(db1.pk, "eval-1")

    received = receiver.wait_for(2)
    assert len(received) == 2
    by_channel = {
        n.channel.name: sorted(t.alert.rule for t in n.carried.all())
        for n in Notification.objects.exclude(channel=None)
    }
    assert by_channel == {"runway only": ["runway"], "critical only": ["skew"]}


def test_a_failed_message_is_recorded_without_its_url_and_retried(receiver, caplog):
    db1 = builders.server("db1")
    channel("hook", webhook_url(receiver))
    slack = channel("slack", SLACK)
    transition(firing(db1, builders.table(db1, "a", "b")))
    receiver.status = 500
    caplog.set_level(logging.INFO)

    outcomes = dict(delivery.deliver_evaluation(db1.pk, "eval-1"))

    messages = Notification.objects.exclude(channel=None)
    assert [outcomes[n.pk].failed for n in messages] == [True, True]
    failed = {n.channel.name: n for n in Notification.objects.exclude(channel=None)}
    assert failed["hook"].last_error.endswith("ChannelRefused: HTTP 500")
    assert failed["slack"].last_error.endswith("ChannelRefused: Slack: HTTP 500")
    for text in (*(n.last_error for n in failed.values()), caplog.text):
        assert not any(secret in text for secret in SECRETS), text
    assert "channel 'slack'" in caplog.text
    receiver.status = None
    for notification in failed.values():
        Notification.objects.filter(pk=notification.pk).update(claimed_at=None)
        assert delivery.send_notification(notification.pk).sent
    assert Notification.objects.get(channel=slack).sent_at is not None


def test_a_new_channel_is_told_once_what_is_firing(receiver, mailbox):
    """Alerts firing before the channel existed are announced to it (and only to it:
    no email), once; a silenced one is not; later evaluations reach it as usual."""
    db1 = builders.server("db1")
    t = builders.table(db1, "a", "b")
    builders.alert(db1, rule="runway", of=t)  # firing, announced by email long ago
    silenced = builders.alert(db1, rule="skew", of=t)
    builders.silence(server=db1, rule="skew")
    builders.alert(db1, rule="hotspot", of=t, state=Alert.State.RESOLVED)
    channel("hook", webhook_url(receiver))

    queued = channels.welcome()
    assert channels.welcome() == []  # once
    assert len(queued) == 1
    for server_id, evaluation in queued:
        delivery.deliver_evaluation(server_id, evaluation)

    (received,) = receiver.wait_for(1)
    lines = [(x["state"], x["alert"]["rule"]) for x in received.json()["transitions"]]
    assert lines == [("FIRING", "runway")]
    assert silenced.pk not in [x["alert"]["id"] for x in received.json()["transitions"]]
    assert mailbox.emails() == []


def test_channels_through_the_api_never_show_their_url(receiver, operator, viewer_api, caplog):
    api = token_client(operator)
    answer = api.post(
        "/api/v1/channels/",
        {"name": "ops slack", "url": SLACK, "rules": ["runway", "skew"]},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer.json() == {
        "id": answer.json()["id"],
        "name": "ops slack",
        "kind": "slack",
        "rules": ["runway", "skew"],
        "min_severity": "warning",
        "enabled": True,
    }
    stored = Channel.objects.get()
    assert SLACK not in stored.url_token and stored.url() == SLACK
    listed = viewer_api.get("/api/v1/channels/")
    assert listed.status_code == 200 and "url" not in listed.json()[0]
    for text in (answer.content, listed.content, caplog.text.encode()):
        assert not any(secret.encode() in text for secret in SECRETS)
    assert viewer_api.post("/api/v1/channels/", {"name": "x", "url": SLACK}).status_code == 403
    # A URL no sender takes: one line, 400, nothing stored.
    bad = api.post(
        "/api/v1/channels/", {"name": "bad", "url": "slack://onlyonetoken"}, format="json"
    )
    assert bad.status_code == 400 and "url" in bad.json()
    assert not any(s in bad.content.decode() for s in ("onlyonetoken",))
    assert api.post("/api/v1/channels/", {"name": "no url"}, format="json").status_code == 400
    # Edited without its URL: the URL stays.
    edited = api.patch(f"/api/v1/channels/{stored.pk}/", {"enabled": False}, format="json")
    assert edited.status_code == 200 and Channel.objects.get().url() == SLACK
    # Tested: one message through it, to the receiver as Slack.
    tested = api.post(f"/api/v1/channels/{stored.pk}/test/")
    assert tested.status_code == 200 and tested.json() == {
        "sent_to": "ops slack",
        "service": "Slack",
    }
    (message,) = receiver.wait_for(1)
    assert message.host == "hooks.slack.com"
    assert "test alert" in message.json()["attachments"][0]["title"]
    receiver.status = 500
    failed = api.post(f"/api/v1/channels/{stored.pk}/test/")
    assert failed.json() == {"detail": "test alert not sent: Slack: HTTP 500"}
    assert not any(secret in failed.content.decode() for secret in SECRETS)


def test_sendtestalert_through_a_channel(receiver, capsys):
    channel("team hook", webhook_url(receiver))
    call_command("sendtestalert", "team hook")
    assert "test alert sent to channel team hook (webhook)" in capsys.readouterr().out
    (received,) = receiver.wait_for(1)
    assert received.json()["test"] is True and received.json()["channel"] == "team hook"
    assert_documented(received.json())
    with pytest.raises(CommandError, match="unknown channel 'nope': one of email, team hook"):
        call_command("sendtestalert", "nope")


def test_an_alerts_history_shows_each_delivery_and_acknowledgement(
    receiver, mailbox, operator, client
):
    """The alert's page and its history in the API: each transition with the email and
    the channel messages that carried it (sent, or failing with the error), and the
    acknowledgements; the table page lists the table's alerts."""
    from partdash.alerts import acks

    db1 = builders.server("db1")
    orders = builders.table(db1, "shop", "orders")
    channel("hook", webhook_url(receiver))
    channel("slack", SLACK)
    alert = firing(db1, orders)
    transition(alert)
    receiver.status = 500
    delivery.deliver_evaluation(db1.pk, "eval-1")
    receiver.status = None
    acks.acknowledge(alert, operator, "on it")
    api = token_client(operator)
    history = api.get(f"/api/v1/alerts/{alert.pk}/history/").json()
    assert history["alert"]["id"] == alert.pk and history["alert"]["acknowledged_by"] == "operator"
    (fired,) = history["transitions"]
    assert fired["kind"] == "firing"
    outcomes = {(d["kind"], d["channel"], d["outcome"]) for d in fired["deliveries"]}
    assert outcomes == {
        ("email", None, "sent"),
        ("webhook", "hook", "failing"),
        ("slack", "slack", "failing"),
    }
    failing = [d for d in fired["deliveries"] if d["outcome"] == "failing"]
    assert all(d["last_error"] and d["attempts"] == 1 for d in failing)
    assert [(a["who"], a["comment"]) for a in history["acknowledgements"]] == [
        ("operator", "on it")
    ]
    client.force_login(operator)
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert "channel hook (webhook): <strong>failing</strong>" in page
    assert "email to ops@example.com: <strong>sent</strong>" in page
    assert "acknowledged by operator" in page and "on it" in page
    assert not any(secret in page for secret in SECRETS)
    table_page = client.get(f"/tables/{orders.pk}/").content.decode()
    assert f'href="/alerts/{alert.pk}/"' in table_page


def test_a_new_channels_first_message_is_no_second_firing_in_the_history(
    receiver, mailbox, operator, client
):
    """An alert fired (emailed), then a channel was added and told what is firing: the
    history holds one firing, carrying the email and the channel's first message, marked
    as the welcome it was."""
    db1 = builders.server("db1")
    alert = firing(db1, builders.table(db1, "shop", "orders"))
    fired_at = timezone.now() - timedelta(minutes=5)
    transition(alert, created_at=fired_at)
    delivery.deliver_evaluation(db1.pk, "eval-1")
    channel("hook", webhook_url(receiver))
    for server_id, evaluation in channels.welcome():
        delivery.deliver_evaluation(server_id, evaluation)
    receiver.wait_for(1)

    history = token_client(operator).get(f"/api/v1/alerts/{alert.pk}/history/").json()
    (fired,) = history["transitions"]
    assert fired["kind"] == "firing" and fired["at"].startswith(fired_at.isoformat()[:19])
    told = {(d["kind"], d["outcome"], d["announced"]) for d in fired["deliveries"]}
    assert told == {("email", "sent", None), ("webhook", "sent", "welcome")}
    client.force_login(operator)
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert page.count('<tr data-kind="firing">') == 1
    assert 'channel hook (webhook) <span class="small">(welcome message, ' in page


def test_what_a_channel_heard_is_not_announced_to_it_again(receiver, mailbox, smtp_settings):
    """An alert that fired after the channel was added reached it in its evaluation: the
    channel's first sweep does not announce it again; and an alert announced late to
    email recipients (who had none when it fired) is not sent to the channel, which
    heard it fire."""
    from partdash.alerts import belated

    db1 = builders.server("db1")
    smtp_settings.ALERT_EMAILS = []
    channel("hook", webhook_url(receiver))
    alert = firing(db1, builders.table(db1, "a", "b"))
    transition(alert)  # (after the channel)
    delivery.deliver_evaluation(db1.pk, "eval-1")
    assert len(receiver.wait_for(1)) == 1
    assert channels.welcome() == []
    smtp_settings.ALERT_EMAILS = ["ops@example.com"]  # recipients at last
    for server_id, evaluation in belated.announce_belated():
        delivery.deliver_evaluation(server_id, evaluation)
    assert [e.lines("FIRING") for e in mailbox.emails()] == [
        ["FIRING runway a.b value 3 threshold 14"]
    ]
    assert len(receiver.received) == 1


@pytest.mark.parametrize(
    ("url", "host", "path"),
    [
        (
            "discord://123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123",
            "discord.com",
            "/api/webhooks/",
        ),
        (
            "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/987654321",
            "api.telegram.org",
            "/bot",
        ),
        (
            "pagerduty://abcdef0123456789abcdef0123456789@abcdef0123456789abcdef0123456789",
            "events.pagerduty.com",
            "/v2/enqueue",
        ),
        ("opsgenie://0123456789abcdef0123456789abcdef", "api.opsgenie.com", "/v2/alerts"),
        ("ntfys://ntfy.sh/partdash-alerts", "ntfy.sh", "/"),
    ],
)
def test_each_service_gets_its_own_request(receiver, url, host, path):
    """Discord, Telegram, PagerDuty, Opsgenie and ntfy: Apprise's request for each, with
    the FIRING line, at the service's host."""
    db1 = builders.server("db1")
    channel("service", url)
    transition(firing(db1, builders.table(db1, "shop", "orders")))
    delivery.deliver_evaluation(db1.pk, "eval-1")
    assert Notification.objects.get(channel__name="service").sent_at is not None
    (request,) = [r for r in receiver.wait_for(1) if r.host == host]
    assert request.path.startswith(path)
    assert "FIRING runway shop.orders value 3 threshold 14" in request.body.decode().replace(
        "\\\\", ""
    )


def test_a_team_on_channels_alone(receiver, smtp_settings, operator):
    """No email recipients, one channel: the firing it carried counts as announced (so
    reminders come), and the evaluation's email to nobody is not listed as a failure."""
    from datetime import timedelta

    from django.utils import timezone

    smtp_settings.ALERT_EMAILS = []
    smtp_settings.PARTDASH_ALERT_REPEAT_HOURS = 1
    db1 = builders.server("db1")
    channel("hook", webhook_url(receiver))
    alert = firing(db1, builders.table(db1, "a", "b"))
    transition(alert)
    delivery.deliver_evaluation(db1.pk, "eval-1")
    notified = Alert.objects.get(pk=alert.pk).notified_at
    assert notified is not None
    failed = token_client(operator).get("/api/v1/notifications/?failed=true").json()
    assert failed == []
    Alert.objects.filter(pk=alert.pk).update(notified_at=timezone.now() - timedelta(hours=2))
    ((server_id, evaluation),) = delivery.queue_reminders()
    delivery.deliver_evaluation(server_id, evaluation)
    reminded = receiver.wait_for(2)[-1].json()
    assert [t["kind"] for t in reminded["transitions"]] == ["reminder"]


def test_an_alert_rule_picks_the_channels_of_its_scope(receiver, operator, settings):
    """As an override's recipients stand in for ALERT_EMAILS, its channels stand in for
    those whose own rules take the alert: the orders table's skew goes to the pager
    alone, though the pager's own rules would not take skew; the rest keeps the default
    route."""
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    db1 = builders.server("db1")
    builders.table(db1, "shop", "orders")
    builders.table(db1, "shop", "events")
    channel("everyone", webhook_url(receiver))
    pager = channel("dba pager", webhook_url(receiver) + "&p=1", rules=["hotspot"])
    made = token_client(operator).post(
        "/api/v1/alert-rules/",
        {"rule": "skew", "schema": "shop", "table": "orders", "channels": [pager.pk]},
        format="json",
    )
    assert made.status_code == 201 and made.json()["channels"] == [pager.pk], made.content
    evaluation = Evaluation(db1, timezone.now(), [])
    for table in ("orders", "events"):
        evaluation.conditions[Key("skew", "shop", table)] = Condition(3.0, limit=2.0)
    evaluation_id = evaluation.run()

    delivery.deliver_evaluation(db1.pk, evaluation_id)

    assert len(receiver.wait_for(2)) == 2
    by_channel = {
        n.channel.name: sorted(t.alert.table for t in n.carried.all())
        for n in Notification.objects.exclude(channel=None)
    }
    assert by_channel == {"everyone": ["events"], "dba pager": ["orders"]}
    assert Transition.objects.get(alert__table="orders").channels == [pager.pk]
    assert Transition.objects.get(alert__table="events").channels is None
