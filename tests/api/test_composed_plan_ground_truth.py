"""A maintenance plan whose tables carry several findings at once, against ground truth,
on two real MariaDB servers grouped as replicas (issue 38): `daily` carries runway (rows
in the catch-all), drift (the member lacks two days the reference has) and retention
(days past a 30-day policy) at once; `spread` carries drift (4 HASH partitions, the
reference 7) and skew (even ids fill every 2nd partition of 4). Each server's script,
downloaded through the API, runs whole with the real `mariadb` client (exit 0); the next
poll clears every finding it listed; every row inside the retention policy is still
there; and the script downloaded again runs again, exit 0."""

import subprocess
from datetime import date, timedelta

import pytest

from partdash.metrics.models import PartitionedTable
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db

KEEP_DAYS = 30


# Two servers of this module's own (options no other test sets): a group compares every
# table its members hold, and the shared servers hold other tests'.
@pytest.fixture
def reference(mariadb_factory):
    return mariadb_factory.get({"table_definition_cache": 421})


@pytest.fixture
def member(mariadb_factory):
    return mariadb_factory.get({"table_definition_cache": 422})


def daily(today: date, last: int) -> list[str]:
    """Daily by TO_DAYS, p<day> holding that day, from 40 days ago to `last` days ahead;
    rows on every day from 40 days ago to 3 days ahead (past a member's last bound: in its
    catch-all), 10 a day."""
    days = [today + timedelta(days=n) for n in range(-40, last + 1)]
    parts = ", ".join(
        f"PARTITION p{d:%Y%m%d} VALUES LESS THAN (TO_DAYS('{d + timedelta(1)}'))" for d in days
    )
    return [
        "CREATE TABLE daily (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        f"PARTITION BY RANGE (TO_DAYS(d)) ({parts}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
        f"INSERT INTO daily SELECT seq, '{today}' - INTERVAL (seq % 44) DAY + INTERVAL 3 DAY "
        "FROM seq_0_to_439",
        "ANALYZE TABLE daily",
    ]


def spread(partitions: int) -> list[str]:
    return [
        f"CREATE TABLE spread (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS {partitions}",
        "INSERT INTO spread SELECT seq FROM seq_2_to_8000_step_2",
        "ANALYZE TABLE spread",
    ]


def polled(server) -> None:
    report = poll_server(server)
    assert report.ok, report.error


def findings(server, schema: str) -> set[tuple[str, str]]:
    return {
        (table.name, finding["kind"])
        for table in PartitionedTable.objects.live().filter(server=server, schema=schema)
        for finding in table.health.get("findings") or []
    }


def downloaded(client, server) -> str:
    response = client.get(f"/api/v1/servers/{server.pk}/maintenance-plan.sql")
    assert response.status_code == 200, response.content
    return response.content.decode()


def run_script(instance, text: str) -> subprocess.CompletedProcess:
    """`mariadb < plan.sql`, over TCP as root (no password on the private server)."""
    client = ["mariadb", "--no-defaults", "--protocol=TCP", f"--host={instance.host}"]
    client += [f"--port={instance.port}", "--user=root"]
    return subprocess.run(client, input=text, text=True, capture_output=True, timeout=120)


def kept_rows(instance, schema: str, cutoff: date) -> int:
    ((count,),) = run(instance, schema, f"SELECT COUNT(*) FROM daily WHERE d >= '{cutoff}'")
    return int(count)


def test_each_servers_script_runs_whole_clears_what_it_lists_and_runs_again(
    reference, member, make_server, new_schema, admin_client, settings
):
    schema = new_schema(reference)
    member.execute(f"CREATE DATABASE {schema}")
    try:
        ((today,),) = reference.execute("SELECT UTC_DATE()")
        run(reference, schema, *daily(today, 3), *spread(7))
        run(member, schema, *daily(today, 1), *spread(4))
        ref, mem = make_server(reference, "ref"), make_server(member, "member")
        made = admin_client.post(
            "/api/v1/server-groups/",
            {"name": "pair", "kind": "replicas", "servers": [ref.pk, mem.pk], "reference": ref.pk},
            content_type="application/json",
        )
        assert made.status_code == 201, made.content
        policy = admin_client.post(
            "/api/v1/retention-policies/",
            {"pattern": f"{schema}.daily", "keep_days": KEEP_DAYS},
            content_type="application/json",
        )
        assert policy.status_code == 201, policy.content
        polled(ref)
        polled(mem)
        assert {
            ("daily", "runway"),
            ("daily", "drift"),
            ("daily", "retention"),
            ("spread", "drift"),
            ("spread", "skew"),
        } <= findings(mem, schema), findings(mem, schema)

        cutoff = today - timedelta(days=KEEP_DAYS - 1)
        kept = {
            name: kept_rows(instance, schema, cutoff)
            for name, instance in (("ref", reference), ("mem", member))
        }
        plan = admin_client.get("/api/v1/maintenance-plan/", {"server": mem.pk}).json()
        statements = plan["servers"][0]["statements"]
        # One statement per change of layout: one REORGANIZE of the catch-all, one ADD.
        daily_sql = [s for s in statements if s["table"] == "daily"]
        assert [s["section"] for s in daily_sql] == ["copies", "statistics", "destroys"]
        assert {c["kind"] for c in daily_sql[0]["clears"]} == {"runway", "drift"}
        spread_sql = [s for s in statements if s["table"] == "spread"]
        assert [s["section"] for s in spread_sql] == ["copies", "statistics"]
        assert {c["kind"] for c in spread_sql[0]["clears"]} == {"drift", "skew"}
        assert statements[-1]["section"] == "destroys"
        # The finding whose own statement was merged points at the combined one.
        (drift,) = [
            i for i in plan["servers"][0]["items"] if (i["table"], i["kind"]) == ("daily", "drift")
        ]
        assert drift["superseded"] and drift["sql"] is None
        assert drift["statement"] == daily_sql[0]["number"]
        assert f"statement {drift['statement']}" in drift["advice"]
        # The table page and the plan page show the same sequence.
        page = admin_client.get(f"/tables/{drift['table_id']}/").content.decode()
        assert "Combined fix" in page and "clears runway, drift" in page
        assert f"drift: superseded by statement {drift['statement']}" in page
        plan_page = admin_client.get("/plan/").content.decode()
        assert f'id="plan-statement-{mem.pk}-{drift["statement"]}"' in plan_page
        listed = {(s["table"], c["kind"]) for s in statements if s["table_id"] for c in s["clears"]}

        scripts = {}
        for server, instance in ((ref, reference), (mem, member)):
            text = scripts[server.name] = downloaded(admin_client, server)
            assert "--force" not in text.replace("do not add --force", "")
            done = run_script(instance, text)
            assert done.returncode == 0, (done.stderr, text)
        for server in (ref, mem):
            polled(server)
        assert findings(mem, schema) & listed == set(), findings(mem, schema)
        assert findings(ref, schema) & {("daily", "runway"), ("daily", "retention")} == set()
        for name, instance in (("ref", reference), ("mem", member)):
            assert kept_rows(instance, schema, cutoff) == kept[name]

        for server, instance in ((ref, reference), (mem, member)):
            done = run_script(instance, downloaded(admin_client, server))
            assert done.returncode == 0, done.stderr
    finally:
        member.execute(f"DROP DATABASE IF EXISTS {schema}")
