"""Alerts through real polls of a private MariaDB: the poll service (and `manage.py poll`,
which uses it) evaluates the alerts after each poll and queues their delivery."""

import pytest
from django.core.management import call_command

from partdash.alerts import service
from partdash.alerts.models import Alert, Transition
from partdash.polling import service as polling_service
from partdash.polling.memory import PollMemories
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch) -> list[tuple[int, str]]:
    made: list[tuple[int, str]] = []
    monkeypatch.setattr(service, "queue_delivery", lambda *args: made.append(args))
    monkeypatch.setattr(polling_service, "MEMORIES", PollMemories())  # a new worker child
    return made


def test_a_skewed_hash_table_fires_after_two_polls_then_resolves_once_evened(
    mariadb, make_server, new_schema, queued, django_capture_on_commit_callbacks
):
    schema = new_schema(mariadb)
    # 18,000 of 24,000 rows have k = 0, so they all hash to p0: 3.25x the mean.
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k)) "
        "PARTITION BY HASH(k) PARTITIONS 4",
        "INSERT INTO t SELECT seq, IF(seq <= 18000, 0, seq) FROM seq_1_to_24000",
        "ANALYZE TABLE t",
    )
    server = make_server(mariadb, name="skewed")
    with django_capture_on_commit_callbacks(execute=True):
        assert poll_server(server).ok
    assert Alert.objects.get(rule="skew", schema=schema).state == "pending"
    assert not Transition.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("poll", "skewed", stdout=open("/dev/null", "w"))  # noqa: SIM115
    # This schema's: the shared server may hold other tests' skewed tables.
    ours = Transition.objects.filter(alert__schema=schema)
    [firing] = ours
    assert (firing.kind, firing.alert.rule, firing.alert.table) == ("firing", "skew", "t")
    assert firing.value == pytest.approx(3.25, rel=0.05) and firing.threshold == 1.5
    assert "uneven HASH" in firing.message
    assert queued == [(server.pk, firing.evaluation)]
    with django_capture_on_commit_callbacks(execute=True):
        assert poll_server(server).ok
    assert ours.count() == 1 and len(queued) == 1

    run(mariadb, schema, "DELETE FROM t WHERE k = 0", "ANALYZE TABLE t")
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            assert poll_server(server).ok
    assert list(ours.values_list("kind", flat=True)) == ["firing", "resolved"]
    resolved = Alert.objects.get(rule="skew", schema=schema)
    assert resolved.state == "resolved" and resolved.value == pytest.approx(1.0, abs=0.05)
    assert len(queued) == 2
