"""The simulated fleet's servers (bench/fake_fleet.py, `make bench ARGS=--simulated-fleet`)
answer every statement a real poll sends, from their generated catalogues: a poll of one
stores its tables and partitions, and the next sees the partitions written since. Should
the poll send a statement the fake servers do not know, this fails before the benchmark
measures a fleet of failing polls."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from partdash.metrics.models import Partition, PartitionedTable
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests.services import wait_for

FAKE_FLEET = Path(__file__).resolve().parents[2] / "bench" / "fake_fleet.py"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Three simulated servers of 10 to 600 partitions, written every second."""
    listing = tmp_path_factory.mktemp("fake-fleet") / "fleet.json"
    argv = [sys.executable, str(FAKE_FLEET), "--servers", "3", "--largest", "600"]
    argv += ["--interval", "1", "--changing", "0.25", "--json", str(listing)]
    fake = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: listing.exists() and listing.read_text(), timeout=30)
        yield {member["name"]: member for member in json.loads(listing.read_text())}
    finally:
        fake.send_signal(signal.SIGTERM)
        out, _ = fake.communicate(timeout=15)
    answered = json.loads(out.splitlines()[-1])
    assert answered["unknown"] == {}, answered  # every statement was one it knows


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
