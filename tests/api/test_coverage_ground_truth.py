"""A blind spot is said, never called healthy: on a real MariaDB whose
table_definition_cache (400) holds fewer tables than its partitions, with
performance_schema OFF (as MariaDB ships), a hot-UPDATE table's write hotspots are not
measured. The API (table and server) and Test connection say so, why, and the one
change that enables them (`SET GLOBAL table_definition_cache = N`, N from the server's
own dictionary); run as given, the next poll reads rows changed and the note is gone."""

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from partdash.metrics.models import PartitionedTable
from partdash.mysql.catalogue import DICTIONARY_TABLES_SQL
from partdash.mysql.connection import target_for
from partdash.mysql.dialects import MARIADB
from partdash.mysql.probe import probe
from partdash.polling.service import poll_server
from tests.servers.test_admin import follow_test_connection
from tests.sql import run

pytestmark = pytest.mark.django_db

# The options of tests/mysql/test_tablestats_cost.py's evicting server, so a session
# running both starts one such MariaDB. 400 is MariaDB's default and its minimum.
SMALL_CACHE = {"table_definition_cache": 400, "table_open_cache": 10}
QUIET = "ENGINE=InnoDB STATS_AUTO_RECALC=0"
WIDE = tuple(
    f"CREATE TABLE w{n} (id INT NOT NULL PRIMARY KEY) {QUIET} PARTITION BY HASH(id) PARTITIONS 110"
    for n in range(4)
)  # 440 partitions: more than the cache holds
HOT = (
    f"CREATE TABLE hot (id INT NOT NULL PRIMARY KEY, v INT NOT NULL) {QUIET} "
    "PARTITION BY HASH(id) PARTITIONS 8",
    "INSERT INTO hot SELECT seq, seq FROM seq_1_to_200",
)
UPDATE_P3 = "UPDATE hot SET v = v + 1 WHERE id IN (3, 11, 19, 27)"  # p3 of HASH(id) % 8
SET_CACHE = re.compile(r"\ASET GLOBAL table_definition_cache = (\d+)\Z")


def dictionary_tables(instance) -> int:
    ((count,),) = instance.execute(
        DICTIONARY_TABLES_SQL.format(dictionary=MARIADB.dictionary_table)
    )
    return int(count)


@contextmanager
def restored_cache(instance) -> Iterator[None]:
    """The shared server's cache as it started, whatever the test set."""
    try:
        yield
    finally:
        instance.execute("SET GLOBAL table_definition_cache = 400")


def blind_server(instance, schema: str, make_server, name: str):
    """A hot-UPDATE table among 448 partitions, polled while it is updated."""
    run(instance, schema, *WIDE, *HOT)
    server = make_server(instance, name=name)
    assert poll_server(server).ok
    for _ in range(3):
        run(instance, schema, UPDATE_P3)
        assert poll_server(server).ok
    return server, PartitionedTable.objects.get(server=server, schema=schema, name="hot")


def hot_polls(instance, schema: str, server, polls: int = 2) -> None:
    for _ in range(polls):
        run(instance, schema, UPDATE_P3)
        assert poll_server(server).ok


def by_signal(coverage: list[dict]) -> dict[str, dict]:
    return {signal["signal"]: signal for signal in coverage}


def cache_statement(instance, signal: dict) -> str:
    """The statement enabling `signal`: the cache sized from the server's dictionary."""
    statement = signal["enable"]
    match = SET_CACHE.match(statement)
    assert match, statement
    assert dictionary_tables(instance) <= int(match[1]) <= dictionary_tables(instance) * 1.5 + 100
    return statement


@pytest.fixture
def small_cache(mariadb_factory):
    instance = mariadb_factory.get(SMALL_CACHE)
    with restored_cache(instance):
        yield instance


def test_write_hotspots_not_measured_are_said_with_the_cache_that_enables_them(
    small_cache, new_schema, make_server, staff_api, admin_client
):
    schema = new_schema(small_cache)
    server, table = blind_server(small_cache, schema, make_server, "small-cache")

    detail = staff_api.get(f"/api/v1/tables/{table.pk}/").json()
    signals = by_signal(detail["coverage"])
    writes = signals["write_hotspots"]
    assert writes["measured"] is False and detail["coverage"][0] is not None
    assert writes["line"].startswith("write hotspots: not measured here")
    assert "table_definition_cache holds 400" in writes["why"]
    assert "never for UPDATEs" in writes["why"] and "performance_schema is OFF" in writes["why"]
    enable = cache_statement(small_cache, writes)
    assert signals["rows_changed"]["enable"] == enable
    assert signals["disk_io"]["measured"] is False
    assert "performance_schema" in signals["disk_io"]["why"]
    assert detail["hotspots"] == [] and detail["activity_source"] == "growth"

    health = staff_api.get(f"/api/v1/servers/{server.pk}/health/").json()
    assert by_signal(health["coverage"])["write_hotspots"]["enable"] == enable
    [tablestats] = [c for c in health["capabilities"] if c["source"] == "tablestats"]
    assert tablestats["ok"] is False and tablestats["fixes"] == [enable]

    tested = probe(target_for(server))
    [listed] = [s for s in tested.sources if s["source"] == "tablestats"]
    assert listed["ok"] is False and listed["fixes"] == [enable]
    assert enable in tested.fixes
    blind = by_signal(tested.blind)
    assert blind["write_hotspots"]["enable"] == enable
    assert "not measured here: write hotspots" in tested.summary
    page = follow_test_connection(admin_client, server)  # the admin's button
    assert "write hotspots: not measured here" in page and f"<code>{enable}</code>" in page
    assert "INNODB_SYS_TABLESTATS" in page

    small_cache.execute(enable)  # as the pages give it
    hot_polls(small_cache, schema, server)

    detail = staff_api.get(f"/api/v1/tables/{table.pk}/").json()
    signals = by_signal(detail["coverage"])
    assert signals["write_hotspots"]["measured"] and signals["rows_changed"]["measured"]
    assert signals["write_hotspots"]["why"] is None
    assert signals["disk_io"]["measured"] is False  # still OFF: said still
    health = staff_api.get(f"/api/v1/servers/{server.pk}/health/").json()
    [tablestats] = [c for c in health["capabilities"] if c["source"] == "tablestats"]
    assert tablestats["ok"] is True
    tested = probe(target_for(server))
    [listed] = [s for s in tested.sources if s["source"] == "tablestats"]
    assert listed["ok"] is True
    assert "write_hotspots" not in by_signal(tested.blind)
    partitions = staff_api.get(f"/api/v1/tables/{table.pk}/partitions/").json()
    changed = {p["name"]: p["rows_changed_per_s"] for p in partitions if p["rows_changed_per_s"]}
    assert list(changed) == ["p3"]  # the UPDATEs, now measured
