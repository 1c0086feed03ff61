"""DATABASE_URL selects the metadata store: MySQL/MariaDB (through PyMySQL) works for
migrations and polls, like the default SQLite."""

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


@pytest.fixture
def mysql_store_env(mariadb_factory, tmp_path):
    store = mariadb_factory.get({"character_set_server": "utf8mb4"})
    store.execute("DROP DATABASE IF EXISTS partdash_meta")
    store.execute("CREATE DATABASE partdash_meta")
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env |= {
        "DEBUG": "1",
        "PARTDASH_VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"mysql://root@127.0.0.1:{store.port}/partdash_meta",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # no broker: polls are run by hand
    }
    yield env, store
    store.execute("DROP DATABASE partdash_meta")


def test_a_mysql_metadata_store_migrates_and_stores_a_poll(mysql_store_env, mariadb):
    env, store = mysql_store_env
    mariadb.execute("CREATE DATABASE IF NOT EXISTS meta_probe")
    mariadb.execute(
        "CREATE TABLE IF NOT EXISTS meta_probe.t (id INT PRIMARY KEY) "
        "PARTITION BY HASH(id) PARTITIONS 5"
    )
    assert manage(env, "migrate", "-v0").returncode == 0
    added = manage(
        env,
        "addserver",
        "db1",
        "--host",
        mariadb.host,
        "--port",
        str(mariadb.port),
        "--user",
        "root",
    )
    assert added.returncode == 0, added.stderr
    polled = manage(env, "poll", "db1")
    assert polled.returncode == 0, polled.stderr
    assert "partitions seen" in polled.stdout
    snapshots = store.execute("SELECT COUNT(*) FROM partdash_meta.metrics_serversnapshot")
    assert snapshots[0][0] == 1
    stored = store.execute(
        "SELECT method, partition_count FROM partdash_meta.metrics_partitionedtable "
        "WHERE `schema` = 'meta_probe' AND name = 't'"
    )
    assert stored == (("HASH", 5),)
    mariadb.execute("DROP DATABASE meta_probe")
