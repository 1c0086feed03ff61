"""`make bench`'s comparison with mysqld_exporter (bench/peers_bench.py, issue 41) on a
small server: the real exporter scrapes a real MariaDB, and the series it counts are the
ones the server's catalogue says it must emit (the benchmark runs on 64,000 partitions)."""

import sys
from pathlib import Path

import pytest

from tests.sql import new_schema_on, run

BENCH = Path(__file__).resolve().parents[2] / "bench"
TABLES, PARTITIONS = 3, 100


@pytest.fixture
def peers_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import peers_bench

    yield peers_bench
    for name in ("peers_bench", "fleet"):
        sys.modules.pop(name, None)


@pytest.fixture
def partitioned(mariadb_ps):
    """TABLES x PARTITIONS HASH partitions in a schema of their own."""
    schema = new_schema_on(mariadb_ps)
    for number in range(TABLES):
        run(
            mariadb_ps,
            schema,
            f"CREATE TABLE t{number} (id INT PRIMARY KEY) PARTITION BY HASH(id) "
            f"PARTITIONS {PARTITIONS}",
        )
    yield schema
    mariadb_ps.execute(f"DROP DATABASE {schema}")


def test_the_file_collector_emits_four_series_a_file(peers_bench, mariadb_ps, partitioned):
    flags = peers_bench.file_collector_flags(mariadb_ps.port)
    scraped = peers_bench.scrapes(mariadb_ps.port, flags, count=2)

    ours = [line for line in lines(scraped) if f'file_name="{partitioned}/' in line]
    ((files,),) = mariadb_ps.execute(
        "SELECT COUNT(*) FROM performance_schema.file_summary_by_instance WHERE FILE_NAME LIKE %s",
        (f"%/{partitioned}/%",),
    )
    assert len(ours) == 4 * files  # reads, writes, bytes read, bytes written
    partition_files = [line for line in ours if "#P#p" in line and '.ibd"' in line]
    assert len(partition_files) == 4 * TABLES * PARTITIONS
    assert f'file_name="{partitioned}/t2#P#p99.ibd"' in "".join(partition_files)
    assert scraped.series == sum(scraped.series_by_family.values()) >= len(ours)
    assert len(scraped.seconds) == len(scraped.opened_tables) == len(scraped.cpu_seconds) == 2
    # Counted in clock ticks (10 ms): a scrape of this small server may take none (seen in a
    # full run); the benchmark's 64,000 partitions take seconds.
    assert all(cpu >= 0 for cpu in scraped.cpu_seconds)
    assert scraped.errors == {}


def test_the_table_collectors_emit_five_series_a_table_and_fail_on_partitions(
    peers_bench, mariadb_ps, partitioned
):
    scraped = peers_bench.scrapes(mariadb_ps.port, peers_bench.TABLE_COLLECTORS, count=2)

    ours = [line for line in lines(scraped) if line.startswith("mysql_info_schema_table_")]
    ours = [line for line in ours if f'schema="{partitioned}"' in line]
    assert len(ours) == 5 * TABLES  # rows, version, data, index and free bytes
    tables = {line.split('table="')[1].split('"')[0] for line in ours}
    assert tables == {f"t{number}" for number in range(TABLES)}
    # The one collector a partition fails on MariaDB 10.11, every scrape (the warm-up too).
    assert scraped.errors == {"collect.info_schema.innodb_tablespaces": 3}
    assert not any(
        line.startswith("mysql_info_schema_innodb_tablespace") for line in lines(scraped)
    )


def lines(scraped) -> list[str]:
    return scraped.body.splitlines()
