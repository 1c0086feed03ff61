"""The rules version across a restart, through real polls of a private MariaDB and the
poll memory shared in Redis: a `PARTDASH_ALERT_*` setting lowered while no worker runs
reaches a quiet table (not analysed again) at its next poll, not at its next analysis."""

import pytest

from partdash.alerts import service
from partdash.alerts.models import Alert
from partdash.metrics.models import PartitionedTable, ServerSnapshot
from partdash.polling import service as polling_service
from partdash.polling.service import poll_server
from tests.sql import run


@pytest.fixture
def queued(monkeypatch) -> list[tuple[int, str]]:
    made: list[tuple[int, str]] = []
    monkeypatch.setattr(service, "queue_delivery", lambda *args: made.append(args))
    return made


def test_a_lowered_size_setting_reaches_a_quiet_table_after_a_restart(
    transactional_db, mariadb, make_server, new_schema, settings, redis_server, queued
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 4",
        "INSERT INTO t SELECT seq FROM seq_1_to_20000",
        "ANALYZE TABLE t",
    )
    server = make_server(mariadb, name="quiet")
    assert poll_server(server).ok and poll_server(server).ok
    table = PartitionedTable.objects.get(server=server, schema=schema, name="t")
    size = table.total_data_bytes + table.total_index_bytes
    assert size > 0 and not Alert.objects.filter(schema=schema).exists()

    # A restart with the threshold below the table's size: the new process holds
    # nothing and continues from the memory the last poll shared in Redis.
    polling_service.MEMORIES.forget(server.pk)
    last_poll = polling_service.previous_poll(server).poll_id
    restored = polling_service.MEMORIES.load(server, last_poll)  # as the next poll does
    assert restored.evaluated_under is not None  # the last poll's version, from Redis
    settings.PARTDASH_ALERT_TABLE_SIZE_BYTES = size // 2
    assert poll_server(server).ok and poll_server(server).ok

    table.refresh_from_db()
    assert table.analysed_at < ServerSnapshot.objects.filter(server=server).latest().taken_at
    alert = Alert.objects.get(rule="table_size", schema=schema, table="t")
    assert (alert.state, alert.value, alert.threshold) == ("firing", size, size // 2)
    assert queued and queued[-1][0] == server.pk
