"""Alerts pushed to a real Alertmanager (Debian's `prometheus-alertmanager`), whose webhook
receiver is a local HTTP server: one FIRING notification for a firing alert, however many
times it is pushed again (a refresh, a retried push after a worker died), then one
RESOLVED once it resolved; the labels and annotations named in the docs; an unreachable
Alertmanager is one line without the URL's password."""

import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from partdash.alerts import alertmanager
from partdash.alerts.models import Alert
from tests import builders
from tests.alerts.receiver import Receiver
from tests.services import answers_ready, free_port, log_tail, wait_for

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(300)]

BINARY = "/usr/bin/prometheus-alertmanager"
CONFIG = """
route:
  receiver: hook
  group_by: ["alertname", "server", "schema", "table"]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: "{url}/am"
        send_resolved: true
"""


@pytest.fixture
def manager(tmp_path, receiver, settings):
    """A real Alertmanager on a free port, sending to `receiver`."""
    if not Path(BINARY).exists():
        pytest.fail(f"{BINARY} is missing: `make test` installs prometheus-alertmanager")
    config = tmp_path / "alertmanager.yml"
    config.write_text(CONFIG.format(url=receiver.url))
    port = free_port()
    log = (tmp_path / "alertmanager.log").open("w")
    process = subprocess.Popen(
        [
            BINARY,
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: answers_ready(url), timeout=30), log_tail(
            tmp_path / "alertmanager.log"
        )
        settings.PARTDASH_ALERTMANAGER_URL = url
        settings.PARTDASH_BASE_URL = "https://partdash.example.com"
        yield url
    finally:
        process.terminate()
        process.wait(10)
        log.close()
        if process.returncode not in (0, -15):
            print(log_tail(tmp_path / "alertmanager.log"))


def notifications(receiver: Receiver) -> list[dict]:
    return [r.json() for r in receiver.received if r.path == "/am"]


def test_one_firing_and_one_resolved_notification_whatever_the_pushes(manager, receiver):
    db1 = builders.server("db1")
    orders = builders.table(db1, "shop", "orders")
    alert = builders.alert(db1, rule="runway", of=orders, message="3 days of runway left")
    Alert.objects.filter(pk=alert.pk).update(
        fix={
            "advice": "add partitions",
            "sql": "ALTER TABLE `shop`.`orders` ADD PARTITION ...",
            "safety": "instant",
            "rows": 0,
            "bytes": 0,
        }
    )

    assert alertmanager.push() == 1
    (fired,) = receiver.wait_for(1)
    for _ in range(4):  # refreshes, and a push made again after a worker died mid-push
        assert alertmanager.push() == 1
        time.sleep(0.5)
    time.sleep(3)  # past group_interval: anything new would have been sent by now
    (first,) = notifications(receiver)
    assert first["status"] == "firing"
    (shown,) = first["alerts"]
    assert shown["labels"] == {
        "alertname": "partdash_runway",
        "rule": "runway",
        "severity": "critical",
        "server": "db1",
        "schema": "shop",
        "table": "orders",
    }
    assert shown["annotations"] == {
        "summary": "3 days of runway left",
        "fix": "ALTER TABLE `shop`.`orders` ADD PARTITION ...",
        "url": f"https://partdash.example.com/tables/{orders.pk}/",
    }
    assert shown["generatorURL"] == f"https://partdash.example.com/tables/{orders.pk}/"

    Alert.objects.filter(pk=alert.pk).update(
        state=Alert.State.RESOLVED, resolved_at=timezone.now() - timedelta(seconds=1)
    )
    assert alertmanager.push() == 1
    receiver.wait_for(2)
    assert alertmanager.push() == 1
    time.sleep(3)
    got = notifications(receiver)
    assert [n["status"] for n in got] == ["firing", "resolved"]
    assert got[1]["alerts"][0]["labels"]["table"] == "orders"


def test_an_alertmanager_that_cannot_be_reached_is_one_line_without_the_password(settings):
    db1 = builders.server("db1")
    builders.alert(db1, rule="unreachable")
    settings.PARTDASH_ALERTMANAGER_URL = f"http://partdash:s3cret-pw@127.0.0.1:{free_port()}"
    with pytest.raises(alertmanager.PushFailed) as failed:
        alertmanager.push()
    assert "unreachable" in str(failed.value) and "s3cret-pw" not in str(failed.value)
    assert "\n" not in str(failed.value)
