"""A partition's read wait (`read_wait_us`, declared in `partdash.mysql.figures`): the
microseconds the server waited on reads of the partition's file (buffer-pool misses that
queries wait for), performance_schema's SUM_TIMER_READ, read in the file I/O query the
poll makes anyway. Stored as a real MariaDB counts it, sampled, and shown by the API."""

import pytest

from partdash.metrics.models import PartitionSample
from partdash.polling.service import poll_server
from tests.collector.test_ground_truth import FILL_4, HASHED_4, flush_to_disk, live
from tests.services import MariaDB
from tests.sql import run

pytestmark = pytest.mark.django_db

# No pages loaded behind the test's back after the restart: the reads are the test's own.
OPTIONS = {"performance_schema": "ON", "innodb_buffer_pool_load_at_startup": "OFF"}


def sum_timer_read(instance: MariaDB, schema: str, table: str) -> dict[str, tuple[int, int]]:
    """Each partition's (SUM_TIMER_READ in microseconds, COUNT_READ), as the server has it."""
    rows = instance.execute(
        "SELECT FILE_NAME, SUM_TIMER_READ DIV 1000000, COUNT_READ "
        "FROM performance_schema.file_summary_by_instance "
        "WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_data_file' AND FILE_NAME LIKE %s",
        (f"%/{schema}/{table}#P#%",),
    )
    return {path.rsplit("#P#", 1)[1].removesuffix(".ibd"): (us, n) for path, us, n in rows}


def test_read_wait_is_the_servers_sum_timer_read_of_each_partition_file(
    make_server, admin_client, settings
):
    settings.PARTDASH_MIN_SAMPLED_READS = 1  # every read sampled: the figure is exact
    with MariaDB(OPTIONS) as instance:
        instance.execute("CREATE DATABASE s")
        run(instance, "s", HASHED_4, FILL_4, "INSERT INTO t SELECT seq, 'z' FROM seq_401_to_3000")
        flush_to_disk(instance, "s", "t")
        server = make_server(instance, name="read-wait")
        poll_server(server)
        # An empty buffer pool: a full scan reads every page of every partition from disk.
        instance.restart()
        server.port = instance.port
        server.save()
        run(instance, "s", "SELECT SUM(LENGTH(v)) FROM t")
        poll_server(server)
        poll_server(server)  # (a poll that reads nothing more: the figures hold)
        truth = sum_timer_read(instance, "s", "t")

    stored = live(server, "s", "t")
    assert set(stored) == set(truth) == {"p0", "p1", "p2", "p3"}
    for name, partition in stored.items():
        waited, reads = truth[name]
        assert reads > 0 and waited > 0  # the scan's reads, timed
        assert partition.read_wait_us == waited
        assert partition.read_ops == reads
    sampled = PartitionSample.objects.filter(partition__in=stored.values()).exclude(
        read_wait_us=None
    )
    assert {s.partition_id for s in sampled} == {p.pk for p in stored.values()}
    table_id = next(iter(stored.values())).table_id
    shown = admin_client.get(f"/api/v1/tables/{table_id}/partitions/").json()
    assert {p["name"]: p["read_wait_us"] for p in shown} == {
        name: waited for name, (waited, _) in truth.items()
    }
