"""A worker survives a hostile server: one that claims a million partitions, greets with
garbage, or sends strings longer than partdash's columns (issue 24, point 5)."""

import re
import time

import pytest

from partdash.polling.service import poll_server
from tests import builders
from tests.fake_mysql import FakePartitionServer
from tests.servers.test_admin import follow_test_connection

pytestmark = pytest.mark.django_db


def test_a_server_claiming_too_many_partitions_is_read_up_to_the_cap(settings):
    settings.PARTDASH_MAX_ROWS_PER_SOURCE = 20_000
    with FakePartitionServer(partitions=1_000_000) as fake:
        server = builders.server("hostile", password="secret", port=fake.port)
        started = time.monotonic()
        report = poll_server(server)
        seconds = time.monotonic() - started
    server.refresh_from_db()
    assert report.ok, report.error
    assert server.status == "degraded"
    cap_lines = [line for line in server.last_error.splitlines() if "20,000 rows" in line]
    assert len(cap_lines) == 1, server.last_error
    # One partition listing was started, and cut short: none was read after it.
    assert len(fake.sent) == 1, fake.queries
    (listing,) = [query for query in fake.queries if "#P#" in query]
    source = re.search(r" FROM (\S+)", listing).group(1)
    assert cap_lines[0].startswith(f"cannot read {source}: ")
    assert "PARTDASH_MAX_ROWS_PER_SOURCE" in cap_lines[0]
    assert fake.sent[0] < 100_000, fake.sent
    assert seconds < 10
    assert server.snapshots.get().partitions == 0


def test_strings_longer_than_their_columns_are_cut_not_a_failed_poll():
    """On PostgreSQL (the suite's second pass) a string longer than its column failed the
    whole poll; SQLite stores it whole, so the lengths are checked as stored."""
    version = "10.11.99-MariaDB-" + "v" * 150
    with FakePartitionServer(partitions=3, version=version, name_length=100) as fake:
        fake.method = "HASH" + "m" * 30
        server = builders.server("hostile", password="secret", port=fake.port)
        report = poll_server(server)
    assert report.ok, report.error
    server.refresh_from_db()
    assert server.version == version[:100]
    assert server.snapshots.get().version == version[:100]
    table = server.tables.get()
    assert (table.schema, table.name) == ("hostile", ("t" + "x" * 99)[:64])
    assert table.method == fake.method[:20]
    partitions = list(table.partitions.order_by("ordinal").values_list("name", "row_format"))
    assert partitions == [(f"p{i}".ljust(64, "x"), "Dynamic") for i in range(3)]
    assert report.partitions_seen == 3
    # The next poll finds the same table and partitions (their names are cut alike).
    with FakePartitionServer(partitions=3, version=version, name_length=100) as fake:
        server.port = fake.port
        server.save(update_fields=["port"])
        assert poll_server(server).ok
    assert server.tables.get().pk == table.pk


def test_test_connection_says_the_cap_was_reached_in_one_line(admin_client, settings):
    settings.PARTDASH_MAX_ROWS_PER_SOURCE = 20_000
    with FakePartitionServer(partitions=1_000_000) as fake:
        server = builders.server("hostile", password="secret", port=fake.port)
        page = follow_test_connection(admin_client, server)
    assert (
        f"{fake.host}:{fake.port}: the server sent more than 20,000 rows "
        "(PARTDASH_MAX_ROWS_PER_SOURCE); partdash stopped reading and closed the session"
    ) in page
    assert "Traceback" not in page
    # The session closed after 20,000 rows: the fake sent no more than the kernel's socket
    # buffers took meanwhile (up to tcp_rmem's and tcp_wmem's maxima, 36 MB here: about
    # 300,000 of its rows), far from the million a client reading on would have drained.
    assert len(fake.sent) == 1 and fake.sent[0] < fake.partitions // 2
