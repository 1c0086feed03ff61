"""Partitioned MyISAM, Aria and MEMORY tables beside InnoDB ones: listed with their exact
partitions, rows and sizes, counted in the server's totals and pressure, said to be not
monitored, and read again only after DDL."""

import pytest

from partdash.metrics.models import PartitionedTable, ServerSnapshot, UnmonitoredTable
from partdash.mysql.sources import other_engines
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db

ENGINES = {"my": "MyISAM", "ar": "Aria", "mem": "MEMORY"}
ROWS = {"my": 40, "ar": 25, "mem": 7}


def other_tables(instance, schema: str) -> list[str]:
    statements = []
    for name, engine in ENGINES.items():
        statements.append(
            f"CREATE TABLE {name} (id INT, v VARCHAR(20)) ENGINE={engine} "
            "PARTITION BY HASH(id) PARTITIONS 4"
        )
        statements.append(f"INSERT INTO {name} SELECT seq, 'x' FROM seq_1_to_{ROWS[name]}")
    # Subpartitions count one by one, as InnoDB's do; a table without partitions is no one's.
    statements += [
        "CREATE TABLE sub (d INT, id INT) ENGINE=MyISAM PARTITION BY RANGE (d) "
        "SUBPARTITION BY HASH (id) SUBPARTITIONS 2 "
        "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "CREATE TABLE plain (id INT) ENGINE=MyISAM",
        "CREATE TABLE inno (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 3",
        "INSERT INTO inno SELECT seq FROM seq_1_to_30",
        "ANALYZE TABLE inno",
    ]
    run(instance, schema, *statements)


def server_truth(instance, schema: str, table: str) -> tuple:
    return instance.execute(
        "SELECT COUNT(*), SUM(TABLE_ROWS), SUM(DATA_LENGTH), SUM(INDEX_LENGTH) "
        "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (schema, table),
    )[0]


def test_partitioned_tables_of_other_engines_are_listed_counted_and_not_monitored(
    mariadb, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb)
    other_tables(mariadb, schema)
    server = make_server(mariadb)
    assert poll_server(server).ok
    server.refresh_from_db()

    listed = {t.name: t for t in UnmonitoredTable.objects.filter(server=server, schema=schema)}
    assert set(listed) == {"my", "ar", "mem", "sub"}
    for name, table in listed.items():
        partitions, rows, data, index = server_truth(mariadb, schema, name)
        assert (table.partitions, table.rows, table.data_bytes, table.index_bytes) == (
            partitions,
            rows,
            data,
            index,
        )
        assert table.engine == ENGINES.get(name, "MyISAM")
    assert {name: listed[name].rows for name in ROWS} == ROWS  # exact for these engines
    assert listed["sub"].partitions == 4
    assert (listed["my"].files, listed["ar"].files, listed["mem"].files) == (8, 8, 0)
    # InnoDB's tables are monitored as before, and no other engine's table among them.
    assert set(
        PartitionedTable.objects.filter(server=server, schema=schema).values_list("name", flat=True)
    ) == {"inno"}

    # The server's totals count them; the health answer lists them.
    others = UnmonitoredTable.objects.filter(server=server)
    snapshot = ServerSnapshot.objects.filter(server=server).latest()
    api = next(s for s in admin_client.get("/api/v1/servers/").json() if s["id"] == server.pk)
    assert api["unmonitored_tables"] == others.count() >= 4
    assert api["partitioned_tables"] == snapshot.partitioned_tables + others.count()
    assert api["partitions"] == snapshot.partitions + sum(t.partitions for t in others)
    health = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()
    assert {(t["name"], t["engine"]) for t in health["unmonitored"] if t["schema"] == schema} == {
        ("my", "MyISAM"),
        ("ar", "Aria"),
        ("mem", "MEMORY"),
        ("sub", "MyISAM"),
    }
    limits = {limit["setting"]: limit["partitions"] for limit in health["pressure"]["limits"]}
    assert limits["open_files_limit"] == snapshot.partitions + sum(t.files for t in others)
    assert limits["table_open_cache"] == snapshot.partitions + sum(t.partitions for t in others)
    assert limits["table_definition_cache"] == snapshot.partitions


def test_other_engines_are_read_again_after_ddl_only(mariadb, make_server, new_schema, monkeypatch):
    schema = new_schema(mariadb)
    other_tables(mariadb, schema)
    server = make_server(mariadb)
    assert poll_server(server).ok
    read_at = UnmonitoredTable.objects.get(server=server, schema=schema, name="my").read_at
    reads, read = [], other_engines.read
    monkeypatch.setattr(other_engines, "read", lambda session: reads.append(1) or read(session))

    assert poll_server(server).ok and poll_server(server).ok
    assert reads == []  # no DDL: nothing read, what was listed is kept
    assert UnmonitoredTable.objects.get(server=server, schema=schema, name="my").read_at == read_at

    run(mariadb, schema, "DROP TABLE mem", "ALTER TABLE my ADD PARTITION PARTITIONS 2")
    assert poll_server(server).ok
    listed = {t.name: t for t in UnmonitoredTable.objects.filter(server=server, schema=schema)}
    assert set(listed) == {"my", "ar", "sub"}
    assert listed["my"].partitions == 6
    assert reads == [1]
    server.refresh_from_db()
    assert server.unmonitored_tables == UnmonitoredTable.objects.filter(server=server).count()
