"""A worker survives a hostile server: one that claims a million partitions, greets with
garbage, or sends strings longer than partdash's columns (issue 24, point 5)."""

import re
import time

import pytest

from partdash.collector.service import poll_server
from tests import builders
from tests.fake_mysql import FakePartitionServer

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
