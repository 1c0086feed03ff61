"""The runway fix of a table whose bounds and names are odd but legal (quotes, `;`,
comment markers in RANGE COLUMNS strings; backticks, `--` and `#` in names), as a real
MariaDB spells them in PARTITION_DESCRIPTION: pasted into the mariadb command-line client
it runs as one statement and the next poll has no runway finding. A table whose name
holds `/` (which MariaDB 10.11 destroys on partition ALTERs) gets advice only, and is
left alone."""

import subprocess
from datetime import timedelta

import pytest

from partdash.polling.service import poll_server
from tests.health.test_fixes_on_mariadb import api_table, count, finding, partition_names
from tests.mysql_tokens import one_statement
from tests.sql import run

pytestmark = pytest.mark.django_db

MARIADB_CLIENT = "/usr/bin/mariadb"  # the client a DBA pastes the statement into
TABLE = "o`dd -- t#"
QUOTED = "`o``dd -- t#`"
SIDE = "O'Brien; DROP DATABASE x; -- # /* */"  # the other column's value in every bound


def poll(server) -> None:
    report = poll_server(server)
    assert report.ok, report.error


def paste(instance, schema: str, sql: str) -> str:
    """Run a statement as a DBA would: pasted into the client, with a `;` after it."""
    done = subprocess.run(
        [MARIADB_CLIENT, "--protocol=socket", f"--socket={instance.socket}", "-uroot", schema],
        input=sql + ";\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_runway_fix_of_odd_but_legal_bounds_runs_and_clears_the_finding(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    today = mariadb.execute("SELECT UTC_DATE()")[0][0]
    side = SIDE.replace("'", "''")
    day = [f"{today - timedelta(days=n):%Y-%m-%d}" for n in (2, 1, 0)]
    run(
        mariadb,
        schema,
        f"CREATE TABLE {QUOTED} (d DATE NOT NULL, s VARCHAR(60) NOT NULL, id INT NOT NULL, "
        "PRIMARY KEY (d, s, id)) PARTITION BY RANGE COLUMNS (d, s) ("
        f"PARTITION `p;1 -- x` VALUES LESS THAN ('{day[0]}', '{side}'), "
        f"PARTITION `p#2 /*` VALUES LESS THAN ('{day[1]}', '{side}'), "
        f"PARTITION `p``3` VALUES LESS THAN ('{day[2]}', '{side}'), "
        "PARTITION `max'` VALUES LESS THAN (MAXVALUE, MAXVALUE))",
        f"INSERT INTO {QUOTED} SELECT UTC_DATE() - INTERVAL seq % 3 DAY, 'a', seq "
        "FROM seq_1_to_300",
        f"INSERT INTO {QUOTED} SELECT UTC_DATE() + INTERVAL seq % 5 DAY, 'b', seq "
        "FROM seq_1_to_200",
        f"ANALYZE TABLE {QUOTED}",
    )
    in_catchall = count(mariadb, schema, TABLE, "max'")
    server = make_server(mariadb)
    poll(server)

    fix = finding(api_table(admin_client, server, schema, TABLE), "runway")["fix"]
    found = one_statement(fix["sql"], (schema, TABLE), "REORGANIZE", "PARTITION")
    strings = {t.value for t in found if t.kind == "string"}
    assert SIDE in strings  # the other column's value kept, re-quoted by partdash
    assert (fix["safety"], fix["rows"]) == ("copies", in_catchall)

    paste(mariadb, schema, fix["sql"])
    poll(server)

    assert finding(api_table(admin_client, server, schema, TABLE), "runway") is None
    assert count(mariadb, schema, TABLE) == 500
    assert count(mariadb, schema, TABLE, "max'") == 0
    assert partition_names(mariadb, schema, TABLE)[-1] == "max'"
    assert run(mariadb, schema, "SHOW DATABASES LIKE 'x'") == ()


def test_a_bound_partdash_cannot_requote_gets_advice_without_sql(
    mariadb, new_schema, make_server, admin_client
):
    """A backslash reads differently under NO_BACKSLASH_ESCAPES; accents differently in
    another client character set."""
    schema = new_schema(mariadb)
    yesterday = mariadb.execute("SELECT UTC_DATE() - INTERVAL 1 DAY")[0][0]
    for name, side in (("slash", "a\\\\b"), ("accent", "été")):
        run(
            mariadb,
            schema,
            f"CREATE TABLE {name} (d DATE NOT NULL, s VARCHAR(9) NOT NULL) "
            "PARTITION BY RANGE COLUMNS (d, s) ("
            f"PARTITION p1 VALUES LESS THAN ('{yesterday:%Y-%m-%d}', '{side}'), "
            "PARTITION pmax VALUES LESS THAN (MAXVALUE, MAXVALUE))",
            f"INSERT INTO {name} VALUES (UTC_DATE(), 'x')",
            f"ANALYZE TABLE {name}",
        )
    server = make_server(mariadb)
    poll(server)

    for name in ("slash", "accent"):
        fix = finding(api_table(admin_client, server, schema, name), "runway")["fix"]
        assert fix["sql"] is None and fix["safety"] is None, fix
        assert "does not re-quote" in fix["advice"]


def test_a_table_whose_name_holds_a_slash_gets_advice_naming_the_server_bug(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE `orders/2026` (id INT PRIMARY KEY) PARTITION BY RANGE (id) ("
        "PARTITION p0 VALUES LESS THAN (1000), PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO `orders/2026` SELECT seq FROM seq_1_to_1500",
        "ANALYZE TABLE `orders/2026`",
    )
    server = make_server(mariadb)
    poll(server)

    fix = finding(api_table(admin_client, server, schema, "orders/2026"), "runway")["fix"]
    assert fix["sql"] is None and fix["safety"] is None
    assert "Unknown database" in fix["advice"] and "RENAME TABLE" in fix["advice"]
    assert "ALTER TABLE" not in fix["advice"]  # nothing that would destroy it
    assert count(mariadb, schema, "orders/2026") == 1500  # untouched
