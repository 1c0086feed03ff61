"""A small store for /metrics, built straight in the database: servers with a latest
snapshot, tables with stored health, partitions and alerts."""

from datetime import timedelta

from django.utils import timezone

from partdash.metrics.models import PartitionedTable
from partdash.servers.models import Server
from tests import builders


def polled_server(name: str, partitions: int = 512, seconds: float = 1.25, **fields) -> Server:
    """A server whose latest poll succeeded `seconds` long, with its stored pressure."""
    now = timezone.now()
    server = builders.server(
        name,
        status="ok",
        flavor="mariadb",
        version="10.11.6-MariaDB",
        last_poll_at=now - timedelta(seconds=30),
        last_success_at=now - timedelta(seconds=30),
        partitioned_tables=2,
        partitions=partitions,
        **fields,
    )
    for ago, took in ((90, 9.0), (30, seconds)):  # the older poll must not be shown
        builders.snapshot(
            server,
            ago=timedelta(seconds=ago),
            version="10.11.6-MariaDB",
            variables={"table_open_cache": "400", "performance_schema": "ON"},
            partitions=partitions,
            seconds=took,
            pressure={
                "limits": [
                    {
                        "setting": "table_open_cache",
                        "partitions": partitions,
                        "limit": 400,
                        "ratio": partitions / 400,
                        "level": "critical",
                    },
                    {
                        "setting": "open_files_limit",
                        "partitions": partitions,
                        "limit": None,
                        "ratio": None,
                        "level": "unknown",
                    },
                ],
                "working_set": {"ratio": 0.5},
            },
        )
    return server


def range_table(
    on: Server, name: str = "orders", findings: list | None = None, **fields
) -> PartitionedTable:
    """A RANGE table with a hot partition, rows in its catch-all and compression (and
    the `findings` given)."""
    health = {
        "skew": {"max_mean_ratio": 2.5, "cv": 0.8, "gini": 0.4},
        "hotspots": ["p3"],
        "runway": {"days_left": 0, "catchall_rows": 1200, "empty_future_partitions": 0},
        "compression": {"ratio": 2.0, "failure_rate": 0.125, "nominal": True},
        "findings": findings or [],
    }
    fields = {
        "partition_count": 4,
        "total_rows": 10_000,
        "total_data_bytes": 4 << 20,
        "total_index_bytes": 1 << 20,
        "total_file_bytes": 8 << 20,
        "score": 80.0,
        "health": health,
        **fields,
    }
    table = builders.table(on, name=name, **fields)
    for ordinal in range(4):
        builders.partition(
            table,
            f"p{ordinal}",
            ordinal,
            rows=2500,
            data_bytes=1 << 20,
            index_bytes=256 << 10,
            file_bytes=2 << 20,
            write_bytes_per_s=1000.0 * ordinal,
            rows_changed_per_s=10.0 * ordinal,
            read_bytes_per_s=None,
        )
    return table


def hash_table(on: Server, name: str = "events", **fields) -> PartitionedTable:
    """A HASH table: no runway, no compression, not analysed yet (no skew)."""
    fields = {"method": "HASH", "partition_count": 8, "total_rows": 800, "health": {}, **fields}
    return builders.table(on, name=name, **fields)
