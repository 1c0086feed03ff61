"""Tests for the throwaway service helpers in :mod:`tests.services`."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pymysql
import pytest
import redis

from tests.services import (
    MariaDB,
    MariaDBFactory,
    RedisServer,
    ServiceStartError,
    free_port,
    option_key,
)

PERFORMANCE_SCHEMA = {"performance_schema": "ON"}
TABLE_OPEN_CACHE = {"table_open_cache": 400}


@pytest.fixture(scope="module")
def own_factory() -> Iterator[MariaDBFactory]:
    """Servers shared by the tests of this module, keyed by their options."""
    with MariaDBFactory() as factory:
        yield factory


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    """One private Redis server for this module."""
    with RedisServer() as server:
        yield server


@pytest.fixture
def private_mariadb() -> Iterator[MariaDB]:
    """A MariaDB instance of its own, for tests that break their server."""
    with MariaDB() as db:
        yield db


def scalar(db: MariaDB, sql: str) -> object:
    """The single value returned by ``sql``."""
    ((value,),) = db.execute(sql)
    return value


def test_free_port_can_be_bound() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert 1024 <= port <= 65535


def test_option_key_ignores_spelling() -> None:
    assert option_key({"--table-open-cache": 400}) == option_key({"table_open_cache": "400"})
    assert option_key({"performance_schema": True}) == option_key(PERFORMANCE_SCHEMA)
    assert option_key(TABLE_OPEN_CACHE) != option_key({"table_open_cache": 401})


def test_performance_schema_option(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(PERFORMANCE_SCHEMA)
    assert scalar(db, "SELECT @@performance_schema") == 1


def test_table_open_cache_option(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(TABLE_OPEN_CACHE)
    assert scalar(db, "SELECT @@table_open_cache") == 400
    assert scalar(db, "SELECT @@performance_schema") == 0


def test_several_options_at_once(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(
        {"performance_schema": "ON", "table_open_cache": 400, "innodb_cmp_per_index_enabled": "ON"}
    )
    row = db.execute(
        "SELECT @@performance_schema, @@table_open_cache, @@innodb_cmp_per_index_enabled"
    )
    assert row == ((1, 400, 1),)


def test_factory_shares_instances_by_options(own_factory: MariaDBFactory) -> None:
    first = own_factory.get(PERFORMANCE_SCHEMA)
    again = own_factory.get({"performance-schema": "ON"})
    other = own_factory.get(TABLE_OPEN_CACHE)
    assert again is first
    assert other is not first
    assert other.port != first.port
    assert other.datadir != first.datadir
    assert scalar(first, "SELECT @@port") == first.port
    assert scalar(other, "SELECT @@port") == other.port


def test_instance_attributes(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(TABLE_OPEN_CACHE)
    assert db.dsn == f"mysql://root@127.0.0.1:{db.port}/"
    assert db.options == {"table_open_cache": "400"}
    assert db.datadir.is_dir()
    assert db.startup_seconds is not None and db.startup_seconds < 30
    with pymysql.connect(unix_socket=db.socket, user="root") as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@datadir")
        assert cursor.fetchone()[0].rstrip("/") == str(db.datadir)


def test_root_has_all_privileges_over_tcp(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(TABLE_OPEN_CACHE)
    grants = " ".join(row[0] for row in db.execute("SHOW GRANTS"))
    assert "GRANT ALL PRIVILEGES ON *.* TO `root`@" in grants
    assert "WITH GRANT OPTION" in grants


def test_partitioned_table_has_per_partition_stats(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(PERFORMANCE_SCHEMA)
    db.execute("CREATE DATABASE IF NOT EXISTS svc_test")
    db.execute("DROP TABLE IF EXISTS svc_test.t")
    db.execute("CREATE TABLE svc_test.t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 4")
    rows = db.execute(
        "SELECT table_name FROM mysql.innodb_table_stats"
        " WHERE database_name = 'svc_test' ORDER BY table_name"
    )
    assert [name for (name,) in rows] == ["t#P#p0", "t#P#p1", "t#P#p2", "t#P#p3"]


def test_connect_with_database(own_factory: MariaDBFactory) -> None:
    db = own_factory.get(PERFORMANCE_SCHEMA)
    db.execute("CREATE DATABASE IF NOT EXISTS svc_connect")
    with db.connect(database="svc_connect") as conn, conn.cursor() as cursor:
        cursor.execute("SELECT DATABASE()")
        assert cursor.fetchone() == ("svc_connect",)
        assert conn.get_autocommit()


def test_kill_makes_connections_fail_and_restart_recovers(private_mariadb: MariaDB) -> None:
    db = private_mariadb
    db.execute("CREATE DATABASE crash")
    db.execute("CREATE TABLE crash.t (id INT PRIMARY KEY)")
    db.execute("INSERT INTO crash.t VALUES (1), (2)")

    db.kill()
    assert not db.is_running
    with pytest.raises(pymysql.err.OperationalError):
        db.connect(connect_timeout=2)

    db.restart()
    assert db.is_running
    assert scalar(db, "SELECT COUNT(*) FROM crash.t") == 2


def test_stop_removes_files() -> None:
    db = MariaDB().start()
    base_dir, port = db.base_dir, db.port
    assert db.datadir.is_dir()
    db.stop()
    assert not db.is_running
    assert not base_dir.exists()
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=2)


def test_factory_replaces_a_dead_instance() -> None:
    with MariaDBFactory() as factory:
        first = factory.get()
        first.kill()
        second = factory.get()
        assert second is not first
        assert scalar(second, "SELECT 1") == 1
    assert not second.is_running


def test_bad_option_reports_error_log() -> None:
    db = MariaDB({"no_such_option": 1}, startup_timeout=15)
    with pytest.raises(ServiceStartError, match="unknown variable"):
        db.start()
    assert not db.is_running
    db.stop()


def test_managed_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="port"):
        MariaDB({"port": 3306})


def test_redis_answers_ping(own_redis: RedisServer) -> None:
    assert own_redis.url == f"redis://127.0.0.1:{own_redis.port}/0"
    client = redis.Redis.from_url(own_redis.url)
    try:
        assert client.ping() is True
        client.set("svc-test", "ok")
        assert client.get("svc-test") == b"ok"
    finally:
        client.close()


def test_redis_stop_closes_port() -> None:
    server = RedisServer().start()
    client = server.client(socket_connect_timeout=1)
    assert client.ping()
    client.close()
    server.stop()
    assert not server.is_running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
    assert not server.base_dir.exists()
