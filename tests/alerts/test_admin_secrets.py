"""Secrets stay secret in the admin (issue 37, point 3): a staff user who may only view
a channel or a server sees no part of its secret, and no admin page decrypts a channel's
URL to show it; who may change it still replaces it."""

import html
import socket

import pytest
from django.test import Client

from partdash.alerts.models import Channel
from partdash.lib.redacted import scheme_and_host
from tests import builders
from tests.conftest import user_in

pytestmark = pytest.mark.django_db

SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"
SLACK_SECRETS = ("T1JJ3T3L2", "A1BRTD4JD", "TIiajkdnlazkcOXrIdevi7FQ")
HOOK = "https://bot:hunter2-pw@hooks.example.com:8443/hook/hook-secret-42?token=tok-secret-43"
HOOK_SECRETS = ("bot", "hunter2-pw", "8443", "hook-secret-42", "tok-secret-43")


def channel(name: str, url: str) -> Channel:
    made = Channel(name=name, kind="slack" if url.startswith("slack") else "webhook")
    made.set_url(url)
    made.save()
    return made


def staff_in(django_user_model, role: str) -> Client:
    client = Client()
    client.force_login(user_in(django_user_model, f"staff-{role}", role, is_staff=True))
    return client


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return html.unescape(response.content.decode())


@pytest.mark.parametrize(
    ("url", "shown"), [(SLACK, "slack://…"), (HOOK, "https://hooks.example.com/…")]
)
def test_a_view_only_staff_user_sees_the_scheme_and_host_alone(django_user_model, url, shown):
    made = channel("ops", url)
    viewer = staff_in(django_user_model, "viewers")

    change = page(viewer, f"/admin/alerts/channel/{made.pk}/change/")
    listed = page(viewer, "/admin/alerts/channel/")

    for text in (change, listed):
        assert shown in text
        for secret in (*SLACK_SECRETS, *HOOK_SECRETS[1:]):
            assert secret not in text
    assert 'name="url"' not in change


def test_no_admin_page_decrypts_a_channel_s_url(django_user_model, admin_client):
    """A URL that cannot be decrypted (its key is gone) would fail any page that tried."""
    made = channel("ops", HOOK)
    Channel.objects.filter(pk=made.pk).update(url_token="not-a-fernet-token")
    viewer = staff_in(django_user_model, "viewers")

    for client in (viewer, admin_client):
        assert "https://hooks.example.com/…" in page(
            client, f"/admin/alerts/channel/{made.pk}/change/"
        )
        assert "https://hooks.example.com/…" in page(client, "/admin/alerts/channel/")


def test_an_operator_replaces_the_url_and_sees_it_shown_anew(django_user_model, monkeypatch):
    # hooks.example.com resolves nowhere here: its webhook host is looked up at save
    # (the address policy), so it is given a public documentation address.
    resolve = socket.getaddrinfo
    public = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.10", 0))]
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *a, **k: public if host == "hooks.example.com" else resolve(host, *a, **k),
    )
    made = channel("ops", SLACK)
    operator = staff_in(django_user_model, "operators")
    change = page(operator, f"/admin/alerts/channel/{made.pk}/change/")
    assert 'name="url"' in change and "slack://…" in change
    assert not any(secret in change for secret in SLACK_SECRETS)

    form = {"name": "ops", "url": HOOK, "min_severity": "warning", "enabled": "on"}
    answer = operator.post(f"/admin/alerts/channel/{made.pk}/change/", form)

    assert answer.status_code == 302, answer.content.decode()[:2000]
    made.refresh_from_db()
    assert made.url() == HOOK
    assert made.url_shown == "https://hooks.example.com/…"


def test_a_view_only_staff_user_sees_no_password_box_on_a_server(django_user_model):
    server = builders.server("db1", password="s3cret-db-pw")
    viewer = staff_in(django_user_model, "viewers")
    operator = staff_in(django_user_model, "operators")

    seen = page(viewer, f"/admin/servers/server/{server.pk}/change/")
    edited = page(operator, f"/admin/servers/server/{server.pk}/change/")

    assert "s3cret-db-pw" not in seen and "s3cret-db-pw" not in edited
    assert "Password stored" in seen  # whether one is stored, not what it is
    assert "id_password" not in seen and "clear_password" not in seen
    assert 'name="password"' in edited


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (SLACK, "slack://…"),
        ("opsgenie://0123456789abcdef", "opsgenie://…"),
        ("pagerduty://integration@apikey", "pagerduty://…"),
        ("tgram://123456789:AAHabcdefghij/-100123", "tgram://…"),
        ("discord://1234567/abc_def.ghi", "discord://…"),
        (HOOK, "https://hooks.example.com/…"),
        ("matrixs://user:pass@matrix.example.org/#room", "matrixs://matrix.example.org/…"),
        ("ntfys://ntfy.sh/my-secret-topic", "ntfys://ntfy.sh/…"),
        ("https://[::1]:9000/x", "https://[::1]/…"),
        ("not a url at all", "…"),
    ],
)
def test_what_is_shown_of_a_url(url, shown):
    assert scheme_and_host(url) == shown
