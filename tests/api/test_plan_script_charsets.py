"""The maintenance-plan script, downloaded through the API and run whole with the real
`mariadb` client under --default-character-set sjis, cp932, gbk and utf8mb4, runs its
intended statements and nothing else, whatever the partitions and tables are named.

U+5F0C (弌) is E5 BC 8C in UTF-8; sjis and cp932 read E5 BC as one character and 8C as
the lead byte of the next, gbk likewise: a backtick after it becomes that character's
trail byte, so the name's quote closes one backtick early and what the name holds after
it runs as SQL (measured before the fix: the `CREATE TABLE` ran). The payload names
here would create a table and touch a file through the client's `\\!` shell command.
"""

import subprocess
from pathlib import Path

import pytest

from partdash.lib.quoting import identifier
from partdash.metrics.models import RetentionPolicy
from partdash.polling.service import poll_server
from tests.sql import run

pytestmark = pytest.mark.django_db

# A private server: the plan names every table on it, and the script runs whole.
PRIVATE = {"max_connections": "77"}
CHARSETS = ("sjis", "cp932", "gbk", "utf8mb4")
LEAD = "\u5f0c"  # 弌: its last UTF-8 byte leads a character in sjis, cp932 and gbk
HOSTILE_TABLE = f"{LEAD}`;\\! touch pwned #"  # a table's own name, misread, runs the shell
SAFE = "café"  # non-ASCII that no client charset reads across a quote
# Bidi controls (right-to-left override, left-to-right isolate): an editor shows the text
# after them reordered, so a statement naming them could show otherwise than it runs.
BIDI = "evt\u202eld\u2066x"


def payload(schema: str) -> str:
    """A partition name that, misread, creates a table and runs a shell command."""
    return f"{LEAD}`;CREATE TABLE {schema}.pwn(i INT);\\! touch pwned #"


def range_table(name: str, partitions: list[str]) -> list[str]:
    """`name`, RANGE on id, a partition of 10 ids per name (10 rows each), then pmax."""
    bounds = ", ".join(
        f"PARTITION {identifier(p)} VALUES LESS THAN ({10 * (i + 1)})"
        for i, p in enumerate(partitions)
    )
    return [
        f"CREATE TABLE {identifier(name)} (id INT PRIMARY KEY) PARTITION BY RANGE (id) "
        f"({bounds}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
        f"INSERT INTO {identifier(name)} SELECT seq FROM seq_0_to_{10 * len(partitions) - 1}",
        f"ANALYZE TABLE {identifier(name)}",
    ]


def build(instance, schema: str) -> None:
    """Four tables, each with partitions past a keep-1 retention policy: one with a
    hostile partition, one whose own name is hostile, one with safe non-ASCII names, and
    one whose names hold bidi controls."""
    run(instance, schema, "DROP TABLE IF EXISTS pwn")
    for table in ("hostile", HOSTILE_TABLE, SAFE, BIDI):
        run(instance, schema, f"DROP TABLE IF EXISTS {identifier(table)}")
    run(
        instance,
        schema,
        *range_table("hostile", [payload(schema), "p1", "p2"]),
        *range_table(HOSTILE_TABLE, ["p0", "p1", "p2"]),
        *range_table(SAFE, ["été", "p1", "p2"]),
        *range_table(BIDI, ["p0", "p1\u202e", "p2"]),
    )


def partitions(instance, schema: str) -> dict[str, list[str]]:
    rows = instance.execute(
        "SELECT TABLE_NAME, PARTITION_NAME FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME, PARTITION_ORDINAL_POSITION",
        (schema,),
    )
    found: dict[str, list[str]] = {}
    for table, partition in rows:
        found.setdefault(table, []).append(partition)
    return found


def run_as(instance, charset: str, text: str, where: Path) -> subprocess.CompletedProcess:
    """`mariadb --default-character-set=CHARSET < plan.sql`, in `where` (the shell
    command's working directory)."""
    client = ["mariadb", "--no-defaults", "--protocol=TCP", f"--host={instance.host}"]
    client += [f"--port={instance.port}", "--user=root", f"--default-character-set={charset}"]
    return subprocess.run(
        client, input=text.encode(), capture_output=True, timeout=60, cwd=where, check=False
    )


@pytest.fixture
def planned(mariadb_factory, new_schema, make_server, admin_client):
    """The server, its schema and the plan script of its tables, through the API."""
    instance = mariadb_factory.get(PRIVATE)
    schema = new_schema(instance)
    build(instance, schema)
    server = make_server(instance)
    RetentionPolicy.objects.create(pattern=f"{schema}.*", keep_partitions=1, server=server)
    report = poll_server(server)
    assert report.ok, report.error
    response = admin_client.get(f"/api/v1/servers/{server.pk}/maintenance-plan.sql")
    assert response.status_code == 200
    return instance, schema, server, response.content.decode()


def test_hostile_names_get_advice_and_safe_ones_their_drop(planned, admin_client):
    _, schema, server, text = planned
    findings = admin_client.get(f"/api/v1/servers/{server.pk}/tables/").json()
    fixes = {
        table["name"]: f["fix"]
        for table in findings
        for f in table.get("findings", [])
        if f["kind"] == "retention"
    }
    assert fixes["hostile"]["sql"] is None and "sjis" in fixes["hostile"]["advice"]
    assert fixes[HOSTILE_TABLE]["sql"] is None
    drop = f"ALTER TABLE `{schema}`.`{SAFE}` DROP PARTITION `été`, `p1`"
    assert fixes[SAFE]["sql"] == drop
    assert fixes[BIDI]["sql"] is None and "invisible" in fixes[BIDI]["advice"]
    assert "\u202e" not in text and "\u2066" not in text
    assert f"on {schema}.evt<U+202E>ld<U+2066>x" in text  # the item's comment line
    assert text.startswith("charset utf8mb4\nSET NAMES utf8mb4;\n")
    assert f"{drop};\n" in text


@pytest.mark.parametrize("charset", CHARSETS)
def test_the_script_runs_only_its_statements_in_any_client_charset(planned, charset, tmp_path):
    instance, schema, _, text = planned
    build(instance, schema)  # as polled, for each charset (the previous run dropped some)
    done = run_as(instance, charset, text, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert not (tmp_path / "pwned").exists()  # no shell command ran
    after = partitions(instance, schema)
    assert "pwn" not in after and not run(instance, schema, "SHOW TABLES LIKE 'pwn'")
    assert after["hostile"] == [payload(schema), "p1", "p2", "pmax"]
    assert after[HOSTILE_TABLE] == ["p0", "p1", "p2", "pmax"]
    assert after[SAFE] == ["p2", "pmax"]  # the safe fix applied, to the right names
    assert after[BIDI] == ["p0", "p1\u202e", "p2", "pmax"]


def test_without_the_charset_lines_the_payload_runs(planned, tmp_path):
    """The payload is live: the same statement, without the script's first lines and
    with the name partdash now refuses, runs the CREATE TABLE and the shell command
    under sjis."""
    instance, schema, _, _ = planned
    build(instance, schema)
    statement = f"ALTER TABLE `{schema}`.`hostile` ANALYZE PARTITION {identifier(payload(schema))};"
    run_as(instance, "sjis", statement + "\n", tmp_path)
    ((tables,),) = instance.execute(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
        "TABLE_NAME = 'pwn'",
        (schema,),
    )
    assert tables == 1 and (tmp_path / "pwned").exists()
