"""Issue 37, the alerting surface under attack by an operator: a channel is an operator's
choice of host, port and bytes, so it answers to the address policy, takes no line
breaks and only the services the docs list; its failures say what happened, never what
the far side said; Alertmanager's credentials never follow a redirect; a deleted
channel's deliveries stay in the alerts' histories. All against real processes: a
private Redis (never the session's broker), real HTTP and TCP servers in threads, the
real sender process."""

import importlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from partdash.alerts import alertmanager, channels, delivery
from partdash.alerts.channel_send import redact
from partdash.alerts.models import Channel, Notification
from tests import builders
from tests.alerts.mailbox import transition
from tests.alerts.receiver import Receiver
from tests.conftest import token_client
from tests.services import RedisServer

pytestmark = pytest.mark.django_db

IRC_ATTACK = "irc://127.0.0.1:{port}/#chan?name=x%0D%0ASET%20k%20v%0D%0A"


@pytest.fixture(scope="module")
def private_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def connections_to(client) -> int:
    """Connections the Redis accepted so far (the client's own included)."""
    return int(client.info("stats")["total_connections_received"])


class Answering:
    """An HTTP server in a thread answering every request with `status`, `body` and
    `headers`, and keeping the requests' headers."""

    def __init__(self, status: int = 200, body: bytes = b"{}", headers: dict | None = None):
        self.status, self.body, self.headers = status, body, headers or {}
        self.seen: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.seen.append(dict(self.headers))
                self.send_response(outer.status)
                for name, value in {"Content-Type": "application/json", **outer.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            do_GET = do_POST  # (urllib follows a 302 to a POST with a GET)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Banner:
    """A TCP service that greets with a line of its own (SSH, SMTP...) and hangs up."""

    LINE = b"SSH-2.0-OpenSSH_9.6 banner-secret-7731\r\n"

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return
            with peer:
                peer.sendall(self.LINE)

    def stop(self) -> None:
        self.listener.close()


def stored_channel(name: str, url: str, kind: str = "webhook") -> Channel:
    """A channel as a row, past the checks at save (as one stored before them)."""
    made = Channel(name=name, kind=kind)
    made.set_url(url)
    made.save()
    return made


def test_the_irc_line_break_attack_never_reaches_redis(private_redis, operator, settings):
    """The review's attack: refused at save (scheme and CR/LF, one line each), a channel
    stored before refuses to send, and the sender, handed the URL itself, connects to
    nothing: no key in the Redis, not one connection to it."""
    settings.PARTDASH_CHANNEL_ALLOW = ["loopback"]  # (so the scheme and CR/LF refuse it)
    url = IRC_ATTACK.format(port=private_redis.port)
    api = token_client(operator)
    redis = private_redis.client()
    before = connections_to(redis)

    saved = api.post("/api/v1/channels/", {"name": "irc", "url": url}, format="json")
    assert saved.status_code == 400
    assert "line break" in saved.json()["url"][0] and "\n" not in saved.json()["url"][0]
    clean = url.split("?")[0]
    saved = api.post("/api/v1/channels/", {"name": "irc", "url": clean}, format="json")
    assert saved.status_code == 400 and "scheme irc:// is not" in saved.json()["url"][0]
    assert not Channel.objects.exists()

    old = stored_channel("old irc", url, kind="apprise")
    tested = api.post(f"/api/v1/channels/{old.pk}/test/")
    assert tested.status_code == 502 and "line break" in tested.json()["detail"]

    # The sender, handed the URL itself with loopback allowed, refuses it on its own
    # (CR/LF, then the scheme), and with loopback refused connects to nothing.
    request = {"action": "send", "url": url, "kind": "apprise", "title": "t", "body": "b"}
    with pytest.raises(channels.ChannelRefused, match="line break"):
        channels.run_sender(request)
    with pytest.raises(channels.ChannelRefused, match="scheme irc:// is not"):
        channels.run_sender({**request, "url": clean})
    settings.PARTDASH_CHANNEL_ALLOW = []
    with pytest.raises(channels.ChannelRefused, match="line break|address refused by policy"):
        channels.run_sender(request)
    assert redis.get("k") is None
    assert connections_to(redis) == before  # (not one connection but the client's)


def test_a_channel_to_loopback_is_refused_unless_allowed(tmp_path, operator, settings):
    box = Receiver(tmp_path).start()
    api = token_client(operator)
    try:
        for url in (f"{box.url}/hook", f"http://localhost:{box.port}/hook"):
            saved = api.post("/api/v1/channels/", {"name": "hook", "url": url}, format="json")
            assert saved.status_code == 400
            assert saved.json()["url"][0].startswith("address refused by policy")
        # Stored before the policy: refused at send, and by the sender's own connections
        # (a name resolved once, its address checked where it connects).
        old = stored_channel("old hook", f"{box.url}/hook")
        failed = api.post(f"/api/v1/channels/{old.pk}/test/")
        assert failed.json()["detail"].startswith("test alert not sent: address refused")
        request = {"action": "send", "url": f"http://localhost:{box.port}/", "kind": "webhook"}
        with pytest.raises(channels.ChannelRefused, match="^address refused by policy$"):
            channels.run_sender({**request, "document": {}})
        assert box.received == []

        settings.PARTDASH_CHANNEL_ALLOW = ["127.0.0.1"]
        body = {"name": "hook", "url": f"{box.url}/hook"}
        saved = api.post("/api/v1/channels/", body, format="json")
        assert saved.status_code == 201, saved.content
        assert api.post(f"/api/v1/channels/{saved.json()['id']}/test/").status_code == 200
        assert len(box.wait_for(1)) == 1

        settings.PARTDASH_CONNECT_DENY = ["loopback"]  # the house's deny list wins
        denied = api.post(f"/api/v1/channels/{saved.json()['id']}/test/")
        assert denied.status_code == 502 and len(box.received) == 1
    finally:
        box.stop()


def test_failures_say_what_happened_not_what_was_there(operator, viewer_api, settings):
    """A banner, an ntfy error body and a closed port: the test send, the stored error
    and the viewers' notifications list carry the class, never the far side's words."""
    settings.PARTDASH_CHANNEL_ALLOW = ["loopback"]
    banner = Banner()
    ntfy = Answering(401, b'{"code":40101,"http":401,"error":"ntfy-secret-detail-5512"}')
    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    api = token_client(operator)
    try:
        expected = {
            f"http://127.0.0.1:{banner.port}/hook": "not HTTP",
            f"ntfy://127.0.0.1:{ntfy.port}/alerts": "ntfy: HTTP 401",
            f"http://127.0.0.1:{closed_port}/hook": "connection refused",
        }
        for number, (url, told) in enumerate(expected.items()):
            body = {"name": f"c{number}", "url": url}
            saved = api.post("/api/v1/channels/", body, format="json")
            assert saved.status_code == 201, saved.content
            tested = api.post(f"/api/v1/channels/{saved.json()['id']}/test/")
            assert tested.status_code == 502
            assert tested.json() == {"detail": f"test alert not sent: {told}"}

        db1 = builders.server("db1")
        transition(builders.alert(db1, rule="runway", of=builders.table(db1, "a", "b")))
        delivery.deliver_evaluation(db1.pk, "eval-1")
        stored = {n.channel.name: n.last_error for n in Notification.objects.exclude(channel=None)}
        assert {name: error.split("attempt 1: ")[1] for name, error in stored.items()} == {
            f"c{n}": f"ChannelRefused: {told}" for n, told in enumerate(expected.values())
        }
        listed = viewer_api.get("/api/v1/notifications/?failed=true")
        assert listed.status_code == 200 and len(listed.json()) == 3
        for text in (listed.content.decode(), *stored.values()):
            assert "secret" not in text and "SSH" not in text
    finally:
        banner.stop()
        ntfy.stop()


def test_secrets_are_redacted_written_decoded_and_encoded_whatever_their_length():
    url = "matrixs://bob:p%40ss@matrix.example.org/#ops?token=ab&key=s3cr%2Ft+k3y"
    said = (
        "login as bob with p@ss, p%40ss and p%2540ss failed; token ab; key s3cr/t k3y or "
        "s3cr%2Ft+k3y at matrix.example.org about nothing"
    )
    shown = redact(said, url)
    for secret in ("bob", "p@ss", "p%40ss", "p%2540ss", "ab;", "s3cr/t", "s3cr%2Ft", "k3y"):
        assert secret not in shown, (secret, shown)
    assert "matrix.example.org" in shown and "about nothing" in shown


def test_alertmanager_credentials_never_follow_a_redirect(settings):
    """A 302 to another origin (or the same): not followed, so the Basic credentials
    stay with the Alertmanager they were set for (urllib would carry the Authorization
    header along); the failure says HTTP 302."""
    elsewhere = Answering(200)
    for target in (elsewhere.url, None):
        manager = Answering(302)
        manager.headers = {"Location": f"{target or manager.url}/api/v2/alerts"}
        settings.PARTDASH_ALERTMANAGER_URL = manager.url.replace("//", "//am:s3cret-pw@")
        db1 = builders.server(f"db-{len(elsewhere.seen)}-{target is None}")
        builders.alert(db1, rule="unreachable")
        try:
            with pytest.raises(alertmanager.PushFailed, match="HTTP 302") as failed:
                alertmanager.push()
        finally:
            manager.stop()
        assert "s3cret-pw" not in str(failed.value)
        assert len(manager.seen) == 1 and manager.seen[0]["Authorization"].startswith("Basic ")
    assert elsewhere.seen == []
    elsewhere.stop()


def test_a_deleted_channels_deliveries_stay_in_the_history(operator, viewer_api, settings):
    settings.PARTDASH_CHANNEL_ALLOW = ["loopback"]
    db1 = builders.server("db1")
    hook = stored_channel("ops hook", "http://127.0.0.1:9/hook")
    alert = builders.alert(db1, rule="runway", of=builders.table(db1, "a", "b"))
    transition(alert)
    delivery.deliver_evaluation(db1.pk, "eval-1")
    welcome = transition(alert, evaluation="welcome-1", only_channel=hook)

    assert token_client(operator).delete(f"/api/v1/channels/{hook.pk}/").status_code == 204

    history = viewer_api.get(f"/api/v1/alerts/{alert.pk}/history/").json()
    (delivered,) = [d for d in history["transitions"][0]["deliveries"] if d["kind"] != "email"]
    assert delivered["channel"] == "ops hook" and delivered["kind"] == "webhook"
    assert delivered["outcome"] == "channel deleted" and delivered["attempts"] == 1
    assert "connection refused" in delivered["last_error"]
    listed = viewer_api.get("/api/v1/notifications/?failed=true").json()
    assert [n["channel"] for n in listed] == ["ops hook"]
    # Its own announcement stays too, and goes to nobody else (email or channel).
    welcome.refresh_from_db()
    assert welcome.only_channel_name == "ops hook"
    assert delivery.waiting().filter(pk=welcome.pk).count() == 0
    assert delivery.deliver_evaluation(db1.pk, "welcome-1") == []


def test_channel_errors_stored_before_classes_are_withheld_from_viewers(viewer):
    """Errors a channel stored before failures were told as classes may quote the far
    side; the migration withholds them, and leaves email errors and new classes alone."""
    from django.apps import apps

    withhold = importlib.import_module(
        "partdash.alerts.migrations.0010_channel_errors_as_classes"
    ).withhold_old_channel_errors
    on = builders.server("db1")
    hook = stored_channel("hook", "https://chat.example.com/hook")
    banner = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3 secret-token-xyz"
    old = builders.notification(on, error=f"webhook: {banner}", channel=hook)
    gone = builders.notification(on, error="ntfy: {'error': 'token tk_9f'}", channel_name="pager")
    email = builders.notification(on, error="SMTP 451: try again later")
    withhold(apps, None)
    for notification in (old, gone):
        notification.refresh_from_db()
        assert notification.last_error.startswith("failed (the detail stored before")
    email.refresh_from_db()
    assert email.last_error == "SMTP 451: try again later"
    listed = token_client(viewer).get("/api/v1/notifications/", {"failed": "true"}).json()
    assert "secret-token-xyz" not in str(listed) and "tk_9f" not in str(listed)
