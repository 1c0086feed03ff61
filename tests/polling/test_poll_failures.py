"""A poll that fails in an unexpected way still tells the truth: the server shows the
failure and its reason, never the previous poll's status."""

import pytest

from partdash.polling import service
from partdash.polling.service import poll_server
from partdash.servers.choices import ServerStatus

pytestmark = pytest.mark.django_db


def test_an_unexpected_error_in_a_poll_is_recorded_as_its_reason(make_server, mariadb, monkeypatch):
    server = make_server(mariadb)
    assert poll_server(server).ok
    server.refresh_from_db()
    assert server.status in (ServerStatus.OK, ServerStatus.DEGRADED)

    def broken(*args, **kwargs):
        raise KeyError("orders#p#p9")

    monkeypatch.setattr(service, "collect", broken)
    report = poll_server(server)

    server.refresh_from_db()
    assert not report.ok
    assert report.error == "poll failed: KeyError: 'orders#p#p9'"
    assert server.status == ServerStatus.UNREACHABLE
    assert server.last_error == report.error
    assert server.last_success_at < server.last_poll_at


def test_a_failing_alert_evaluation_keeps_the_poll(make_server, mariadb, monkeypatch):
    server = make_server(mariadb)

    def broken(server, snapshot, memory=None):
        raise RuntimeError("rule catalogue out of step")

    monkeypatch.setattr(service, "evaluate_after_poll", broken)
    report = poll_server(server)

    server.refresh_from_db()
    assert report.ok
    assert "alert evaluation failed: RuntimeError: rule catalogue out of step" in report.warnings
    assert server.snapshots.count() == 1
    assert server.last_success_at is not None
