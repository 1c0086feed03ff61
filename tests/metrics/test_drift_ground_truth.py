"""Layout drift against ground truth, on two real MariaDB servers grouped as replicas: one
lacks a partition and a table the other has; partdash says so on that member alone
(finding, side by side view, alert), its statement is run there as is, and after the
next poll the finding and the alert are gone."""

from uuid import uuid4

import pytest

from partdash.alerts.models import Alert
from partdash.metrics.models import PartitionedTable, ServerSnapshot
from partdash.polling.service import poll_server
from partdash.servers.models import Server
from tests.sql import run

pytestmark = pytest.mark.django_db

EVENTS = (
    "CREATE TABLE ev (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) ("
    "PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200), {extra}"
    "PARTITION pmax VALUES LESS THAN MAXVALUE)"
)
AUDIT = "CREATE TABLE audit (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2"


# Two MariaDB servers of this module's own (an option no other test sets): a group
# compares every table its members hold, and the shared servers hold other tests'.
@pytest.fixture
def mariadb(mariadb_factory):
    return mariadb_factory.get({"table_definition_cache": 411})


@pytest.fixture
def other(mariadb_factory):
    """The group's other member."""
    return mariadb_factory.get({"table_definition_cache": 412})


def polled(server) -> ServerSnapshot:
    report = poll_server(server)
    assert report.ok, report.error
    return ServerSnapshot.objects.latest_for(server).first()


def drift_of(server, schema: str) -> list[dict]:
    table = PartitionedTable.objects.live().get(server=server, schema=schema, name="ev")
    return [f for f in table.health.get("findings", []) if f["kind"] == "drift"]


def test_a_member_lacking_a_partition_is_told_the_ddl_that_clears_it(
    mariadb, other, make_server, new_schema, admin_client, settings
):
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    schema = new_schema(mariadb)
    other.execute(f"CREATE DATABASE {schema}")
    try:
        run(
            mariadb,
            schema,
            EVENTS.format(extra="PARTITION p2 VALUES LESS THAN (300), "),
            "INSERT INTO ev SELECT seq, seq FROM seq_1_to_400",
            AUDIT,
        )
        run(
            other,
            schema,
            EVENTS.format(extra=""),
            "INSERT INTO ev SELECT seq, seq FROM seq_1_to_400",
        )
        run(other, schema, "ANALYZE TABLE ev")
        full, lacking = make_server(mariadb, "full"), make_server(other, "lacking")
        # A member never polled (nothing answers there) holds no table yet: it makes no
        # table "only on" the others.
        never = Server.objects.create(name="never", host="127.0.0.1", port=9, user="u")
        made = admin_client.post(
            "/api/v1/server-groups/",
            {
                "name": "replicas-1",
                "kind": "replicas",
                "servers": [full.pk, lacking.pk, never.pk],
            },
            content_type="application/json",
        )
        assert made.status_code == 201, made.content
        polled(full)
        snapshot = polled(lacking)

        # The member lacking p2 has the finding, the other none.
        assert drift_of(full, schema) == []
        (finding,) = drift_of(lacking, schema)
        assert "lacks partition(s) p2" in finding["message"]
        assert "full" in finding["message"] and "replicas-1" in finding["message"]
        fix = finding["fix"]
        assert fix["sql"] == (
            f"ALTER TABLE `{schema}`.`ev` REORGANIZE PARTITION `pmax` INTO (PARTITION `p2` "
            "VALUES LESS THAN (300), PARTITION `pmax` VALUES LESS THAN MAXVALUE)"
        )
        # It copies the catch-all's rows: 400 - 199 of them, as the server counts them.
        ((in_pmax,),) = run(other, schema, "SELECT COUNT(*) FROM ev PARTITION (pmax)")
        assert fix["safety"] == "copies" and fix["rows"] == in_pmax == 201
        # The table it lacks is the server's own finding.
        missing = [f for f in snapshot.pressure["findings"] if f["kind"] == "drift"]
        assert len(missing) == 1 and f"{schema}.audit" in missing[0]["message"]

        # Side by side, partition by partition.
        table = PartitionedTable.objects.get(server=lacking, schema=schema, name="ev")
        (view,) = admin_client.get(f"/api/v1/tables/{table.pk}/drift/").json()
        assert [c["server"] for c in view["columns"]] == ["full", "lacking", "never"]
        assert [c["in_line"] for c in view["columns"]] == [True, False, False]
        rows = {row["partition"]: row for row in view["rows"]}
        assert list(rows) == ["p0", "p1", "p2", "pmax"]
        assert rows["p2"]["present"] == [True, False, False] and not rows["p2"]["same"]
        assert rows["p0"]["bounds"] == ["100", "100", None]
        members = admin_client.get(f"/api/v1/server-groups/{made.json()['id']}/").json()["members"]
        assert {m["name"]: (m["drifting_tables"], m["missing_tables"]) for m in members} == {
            "full": (0, 0),
            "lacking": (1, 1),
            "never": (0, 0),
        }
        page = admin_client.get(f"/tables/{table.pk}/").content.decode()
        assert "Group replicas-1 (replicas), side by side: differs" in page
        assert page.count("<em>missing</em>") == 1  # p2 on lacking
        metrics = admin_client.get("/metrics").content.decode()
        assert 'partdash_server_drift_tables{server="lacking"} 1' in metrics
        assert 'partdash_server_missing_group_tables{server="lacking"} 1' in metrics
        assert 'partdash_server_drift_tables{server="full"} 0' in metrics
        differences = [
            line for line in metrics.splitlines() if line.startswith("partdash_table_drift_")
        ]
        assert differences == [
            f'partdash_table_drift_differences{{schema="{schema}",server="lacking",table="ev"}} 1.0'
        ]
        firing = Alert.objects.filter(server=lacking, rule="drift", state="firing")
        assert {(a.schema, a.table) for a in firing} == {(schema, "ev"), ("", "")}

        # Run the statement as shown, create the missing table: both clear.
        run(other, schema, fix["sql"], "ANALYZE TABLE ev", AUDIT)
        snapshot = polled(lacking)
        assert drift_of(lacking, schema) == []
        assert "drift" not in {f["kind"] for f in snapshot.pressure["findings"]}
        assert not Alert.objects.filter(server=lacking, rule="drift", state="firing").exists()
        assert Alert.objects.filter(server=lacking, rule="drift", state="resolved").count() == 2
    finally:
        other.execute(f"DROP DATABASE IF EXISTS {schema}")


def test_a_reference_member_decides_and_leaving_the_group_clears_the_finding(
    mariadb, other, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb)
    other.execute(f"CREATE DATABASE {schema}")
    try:
        run(mariadb, schema, EVENTS.format(extra="PARTITION p2 VALUES LESS THAN (300), "))
        run(other, schema, EVENTS.format(extra=""))
        full, lacking = make_server(mariadb, "full"), make_server(other, "lacking")
        group = admin_client.post(
            "/api/v1/server-groups/",
            {"name": "g", "servers": [full.pk, lacking.pk], "reference": lacking.pk},
            content_type="application/json",
        ).json()
        polled(lacking)
        polled(full)
        # The reference lacks p2: the member holding it is the one out of line.
        assert drift_of(lacking, schema) == []
        (finding,) = drift_of(full, schema)
        assert "lacking (the reference)" in finding["message"]
        assert finding["fix"]["sql"] == (
            f"ALTER TABLE `{schema}`.`ev` REORGANIZE PARTITION `p2`, `pmax` INTO (PARTITION "
            "`pmax` VALUES LESS THAN MAXVALUE)"
        )
        # A reference outside the group is one line, 400; nothing changes.
        refused = admin_client.patch(
            f"/api/v1/server-groups/{group['id']}/",
            {"servers": [full.pk]},
            content_type="application/json",
        )
        assert refused.status_code == 400
        assert refused.json()["reference"] == ["the reference lacking is not a member of the group"]
        admin_client.patch(
            f"/api/v1/server-groups/{group['id']}/",
            {"servers": [full.pk], "reference": None},
            content_type="application/json",
        )
        polled(full)
        assert drift_of(full, schema) == []
    finally:
        other.execute(f"DROP DATABASE IF EXISTS {schema}")


LONELY = "CREATE TABLE lonely (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2"


def missing_here(snapshot: ServerSnapshot) -> str:
    """The server's own drift finding (tables of its group it lacks), "" for none."""
    return " ".join(f["message"] for f in snapshot.pressure["findings"] if f["kind"] == "drift")


def test_a_group_leaves_the_demo_and_its_own_patterns_out_of_the_comparison(
    mariadb, other, make_server, admin_client
):
    """A table only in partdash_demo (made by `make up` where it can) on one member is no
    finding by default; a schema of a pattern the group is given is left out too, and
    one outside every pattern is still compared."""
    scratch = f"scratch_{uuid4().hex[:8]}"
    mariadb.execute(f"CREATE DATABASE {scratch}")
    try:
        mariadb.execute("CREATE DATABASE IF NOT EXISTS partdash_demo")
        run(mariadb, "partdash_demo", "DROP TABLE IF EXISTS lonely", LONELY)
        run(mariadb, scratch, LONELY)
        full, bare = make_server(mariadb, "full"), make_server(other, "bare")
        made = admin_client.post(
            "/api/v1/server-groups/",
            {"name": "left-out", "servers": [full.pk, bare.pk]},
            content_type="application/json",
        )
        assert made.status_code == 201, made.content
        assert made.json()["excluded_schemas"] == [
            "partdash_demo",
            "sys",
            "mysql",
            "performance_schema",
            "information_schema",
        ]
        polled(full)
        # Half the group holds both tables: each is expected on the other member, but
        # the demo's is left out; the scratch schema is not (yet).
        missing = missing_here(polled(bare))
        assert f"{scratch}.lonely" in missing and "partdash_demo" not in missing
        assert not PartitionedTable.objects.filter(server=full, health__has_key="drift").exists()

        url = f"/api/v1/server-groups/{made.json()['id']}/"
        refused = admin_client.patch(
            url, {"excluded_schemas": ["sys", "a,b"]}, content_type="application/json"
        )
        assert refused.status_code == 400
        assert refused.json()["excluded_schemas"] == [
            "the schema pattern 'a,b' holds a comma or a control character"
        ]
        changed = admin_client.patch(
            url,
            {"excluded_schemas": ["partdash_demo", "SCRATCH_*"]},
            content_type="application/json",
        )
        assert changed.json()["excluded_schemas"] == ["partdash_demo", "SCRATCH_*"]
        assert missing_here(polled(bare)) == ""
        # Every schema compared again: both tables are missing on the bare member.
        admin_client.patch(url, {"excluded_schemas": []}, content_type="application/json")
        missing = missing_here(polled(bare))
        assert f"{scratch}.lonely" in missing and "partdash_demo.lonely" in missing
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS {scratch}")
        mariadb.execute("DROP TABLE IF EXISTS partdash_demo.lonely")
