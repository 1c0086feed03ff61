"""A maintenance-plan script, downloaded as a DBA would and run whole with the `mariadb`
client on its server, clears every finding it lists with a statement: a daily RANGE
table with rows in its catch-all (REORGANIZE, then the ANALYZE the plan adds), a table
whose statistics went stale (ANALYZE PARTITION) and a server whose partitions outgrew
table_open_cache (SET GLOBAL)."""

import subprocess

import pytest

from partdash.polling.service import poll_server
from tests.health.test_fixes_on_mariadb import daily_to_days, utc_today
from tests.sql import run

pytestmark = pytest.mark.django_db

TABLE_OPEN_CACHE = 40  # the server's partitions (67) are past it: a pressure finding


def poll(server) -> None:
    report = poll_server(server)
    assert report.ok, report.error


def listed_with_sql(client, server) -> set[tuple[str, str | None, str | None]]:
    """(kind, schema, table) of every finding a statement of the plan clears."""
    plan = client.get("/api/v1/maintenance-plan/", {"server": server.pk}).json()
    statements = plan["servers"][0]["statements"]
    return {(c["kind"], s["schema"], s["table"]) for s in statements for c in s["clears"]}


def statement_count(client, server) -> int:
    plan = client.get("/api/v1/maintenance-plan/", {"server": server.pk}).json()
    return len(plan["servers"][0]["statements"])


def run_script(instance, text: str) -> None:
    """`mariadb < plan.sql`, over TCP as root (no password on the private server)."""
    client = ["mariadb", "--no-defaults", "--protocol=TCP", f"--host={instance.host}"]
    client += [f"--port={instance.port}", "--user=root"]
    done = subprocess.run(client, input=text, text=True, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_script_run_on_its_server_clears_every_finding_it_lists(
    mariadb_factory, new_schema, make_server, admin_client, settings
):
    settings.PARTDASH_READ_TABLESTATS = "on"
    instance = mariadb_factory.get({"table_open_cache": TABLE_OPEN_CACHE})
    schema = new_schema(instance)
    create, inserts = daily_to_days(utc_today(instance))
    run(
        instance,
        schema,
        create,
        *inserts,
        "ANALYZE TABLE t",
        "CREATE TABLE stats (id INT PRIMARY KEY, v INT) STATS_AUTO_RECALC=0 "
        "PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10000), "
        "PARTITION p1 VALUES LESS THAN (20000), PARTITION p2 VALUES LESS THAN MAXVALUE)",
        "INSERT INTO stats SELECT seq, 0 FROM seq_0_to_29999",
        "ANALYZE TABLE stats",
        "UPDATE stats SET v = 1 WHERE id < 5000",  # half of p0; no recalculation
        "CREATE TABLE many (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 60",
    )
    try:
        server = make_server(instance)
        poll(server)
        listed = listed_with_sql(admin_client, server)
        assert {
            ("runway", schema, "t"),
            ("staleness", schema, "stats"),
            ("pressure", None, None),
        } <= listed, listed

        response = admin_client.get(f"/api/v1/servers/{server.pk}/maintenance-plan.sql")
        assert response.status_code == 200
        text = response.content.decode()
        assert f"{statement_count(admin_client, server)} statements to run" in text
        # The REORGANIZE copied the catch-all's rows: the plan analyses them after.
        assert f"ALTER TABLE `{schema}`.`t` ANALYZE PARTITION ALL;" in text
        run_script(instance, text)

        poll(server)
        assert listed_with_sql(admin_client, server) & listed == set()
        assert run(instance, schema, "SELECT COUNT(*) FROM t PARTITION (pmax)")[0][0] == 0
    finally:
        instance.execute(f"SET GLOBAL table_open_cache = {TABLE_OPEN_CACHE}")


def test_the_plan_marks_a_table_altered_after_the_poll_stale(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    create, inserts = daily_to_days(utc_today(mariadb))
    run(mariadb, schema, create, *inserts, "ANALYZE TABLE t")
    server = make_server(mariadb)
    poll(server)
    held = admin_client.get("/api/v1/maintenance-plan/").json()["generated_at"]
    run(mariadb, schema, "ALTER TABLE t ADD COLUMN note INT")  # a definition change
    poll(server)
    plan = admin_client.get("/api/v1/maintenance-plan/", {"as_of": held}).json()
    (runway,) = [i for s in plan["servers"] for i in s["items"] if i["table"] == "t"]
    assert runway["stale"] is True
