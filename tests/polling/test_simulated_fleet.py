"""The simulated fleet's servers (bench/fake_fleet.py, `make bench ARGS=--simulated-fleet`)
answer every statement a real poll sends, from their generated catalogues: a poll of one
stores its tables and partitions, and the next sees the partitions written since. Should
the poll send a statement the fake servers do not know, this fails before the benchmark
measures a fleet of failing polls."""

import json
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from partdash.metrics.models import Partition, PartitionedTable
from partdash.polling.service import PollDeadline, poll_server
from partdash.servers.models import Server
from tests.services import wait_for

FAKE_FLEET = Path(__file__).resolve().parents[2] / "bench" / "fake_fleet.py"


@contextmanager
def fake_fleet(folder: Path, *options: str):
    """bench/fake_fleet.py serving `options`' servers: each one's listing, by name."""
    listing = folder / "fleet.json"
    argv = [sys.executable, str(FAKE_FLEET), *options, "--json", str(listing)]
    fake = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: listing.exists() and listing.read_text(), timeout=30)
        yield {member["name"]: member for member in json.loads(listing.read_text())}
    finally:
        fake.send_signal(signal.SIGTERM)
        out, _ = fake.communicate(timeout=15)
    answered = json.loads(out.splitlines()[-1])
    assert answered["unknown"] == {}, answered  # every statement was one it knows


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Three simulated servers of 10 to 600 partitions, written every second."""
    options = ("--servers", "3", "--largest", "600", "--interval", "1", "--changing", "0.25")
    with fake_fleet(tmp_path_factory.mktemp("fake-fleet"), *options) as fleet:
        yield fleet


def registered(member: dict) -> Server:
    server = Server(name=member["name"], host="127.0.0.1", port=member["port"], user="monitor")
    server.set_password("")
    server.save()
    return server


@pytest.mark.django_db
def test_a_poll_of_a_simulated_server_stores_its_catalogue_and_then_its_writes(simulated):
    member = simulated["sim0002"]
    assert (member["partitions"], member["kind"]) == (600, "healthy")
    server = registered(member)

    first = poll_server(server)
    assert first.ok, first.error
    server.refresh_from_db()
    assert (server.partitions, server.partitioned_tables) == (600, member["tables"])
    tables = PartitionedTable.objects.filter(server=server)
    assert set(tables.values_list("method", flat=True)) == {"HASH", "RANGE"}
    rows_before = sum(tables.values_list("total_rows", flat=True))
    assert rows_before > 0

    # A quarter of the partitions is written every second: the next poll sees it.
    assert wait_for(lambda: poll_server(server).ok and _rows(server) > rows_before, timeout=20)
    assert Partition.objects.filter(table__server=server).count() == 600


@pytest.mark.django_db
def test_the_smallest_server_and_the_restarting_one_are_polled_too(simulated):
    assert simulated["sim0001"]["kind"] == "resetting"
    for name in ("sim0000", "sim0001"):
        server = registered(simulated[name])
        report = poll_server(server)
        assert report.ok, report.error
        server.refresh_from_db()
        assert server.partitions == simulated[name]["partitions"]


def _rows(server: Server) -> int:
    tables = PartitionedTable.objects.filter(server=server)
    return sum(tables.values_list("total_rows", flat=True))


@pytest.mark.django_db
def test_a_slow_servers_first_poll_stores_what_it_read_in_time_and_the_next_the_rest(
    tmp_path,
):
    """sim0013 of 14 answers each wide read (the tablespace list, the statistics, each
    table's definitions) half a second late: its 12 tables' definitions and the other
    two reads take 7 s, past a 4 s time limit. The first poll reads definitions for half
    its time, stores what it read and ends; the next reads the rest."""
    options = ("--servers", "14", "--largest", "1500", "--slow-seconds", "0.5")
    with fake_fleet(tmp_path, *options, "--changing", "0") as fleet:
        member = fleet["sim0013"]
        assert (member["kind"], member["tables"], member["partitions"]) == ("slow", 12, 1500)
        server = registered(member)
        started = time.monotonic()
        first = poll_server(server, deadline=PollDeadline(started + 4, 4))
        assert first.ok, first.error
        assert time.monotonic() - started < 4
        assert 0 < first.definitions_read < member["tables"], first
        deferred = member["tables"] - first.definitions_read
        assert f"{deferred} more follow in the next polls" in "\n".join(first.warnings)

        second = poll_server(server)
        assert second.ok, second.error
        assert second.definitions_read == deferred
        server.refresh_from_db()
        assert (server.partitions, server.partitioned_tables) == (1500, member["tables"])
        assert Partition.objects.filter(table__server=server).count() == 1500
