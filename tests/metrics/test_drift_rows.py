"""A drift fix counts the rows a partition's file holds where its statistics are known
to be stale (issue 38: a hand-run REORGANIZE left statistics at 33 and 23 rows against
900 and 960, and the drift fix said "copies ~56 rows" of 1,860). The rows behind the
file estimate are proven on a real server in tests/health/test_staleness_on_mariadb.py;
here, the stored figures such a REORGANIZE leaves."""

import pytest

from partdash.metrics.drift import stored_copies
from tests import builders

pytestmark = pytest.mark.django_db

KIB = 1024


def test_a_rewritten_partition_counts_the_rows_its_file_holds():
    on = builders.server("db1")
    table = builders.table(on, partition_count=3)
    # Analysed: 2,000 rows in 320 KiB of data and index (160 bytes a row).
    builders.partition(
        table,
        "p0",
        0,
        rows=2000,
        data_bytes=256 * KIB,
        index_bytes=64 * KIB,
        file_bytes=448 * KIB,
        allocated_bytes=448 * KIB,
    )
    # Rewritten, never analysed: statistics of an empty tree over a file of 2,000 rows.
    builders.partition(
        table, "p1", 1, rows=0, data_bytes=16 * KIB, file_bytes=448 * KIB, allocated_bytes=448 * KIB
    )
    builders.partition(table, "pmax", 2, rows=0)  # empty, and its file says so

    _, sizes = stored_copies([table.pk])

    rows = {name: figures[0] for name, figures in sizes[table.pk].items()}
    assert rows["p0"] == 2000 and rows["pmax"] == 0
    assert 1900 <= rows["p1"] <= 2400, rows  # (448 KiB less an empty file's 64, at 160 B)
