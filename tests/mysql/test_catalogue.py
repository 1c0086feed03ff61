"""The catalogue of what partdash reads, on real MariaDB servers: a poll's warnings, Test
connection and the server page's capability panel name the same sources with the same
fixes; tables hidden from the account are counted in one line, never called dropped;
every statement partdash suggests runs as exactly the one statement it says."""

import io
from contextlib import closing
from uuid import uuid4

import pymysql
import pytest
from django.core.management import call_command

from partdash.lib.quoting import account, identifier, string_literal
from partdash.metrics.models import PartitionedTable, ServerSnapshot
from partdash.mysql.catalogue import STATE_CAUSES, Shortfall, grouped, hidden_shortfall
from partdash.mysql.connection import target_for
from partdash.mysql.probe import probe
from partdash.mysql.sources import definitions
from partdash.polling.service import poll_server
from tests.services import MariaDB

pytestmark = pytest.mark.django_db

# A schema name that would inject a second statement into a GRANT built carelessly.
EVIL = "x`.* TO evil; --"
MONITOR_GRANTS = {
    "PROCESS": "PROCESS ON *.*",
    "statistics": "SELECT ON mysql.innodb_table_stats",
    "performance_schema": "SELECT ON performance_schema.*",
}


@pytest.fixture(scope="module")
def instance():
    """A MariaDB of this module's own, performance_schema and per-index counters on, so
    the only partitioned tables on it are the ones these tests create."""
    with MariaDB({"performance_schema": "ON", "innodb_cmp_per_index_enabled": "ON"}) as server:
        yield server


@pytest.fixture
def schemas(instance):
    """`schemas(n)`: n new schemas on the module's server, dropped after the test."""
    made: list[str] = []

    def make(n: int = 1) -> list[str]:
        names = [f"cat_{uuid4().hex[:8]}" for _ in range(n)]
        for name in names:
            instance.execute(f"CREATE DATABASE {identifier(name)}")
        made.extend(names)
        return names

    yield make
    for name in made:
        instance.execute(f"DROP DATABASE IF EXISTS {identifier(name)}")


@pytest.fixture
def monitor(instance):
    """`monitor(*grants, user=None)`: a monitoring account with these grants (raw SQL
    privilege clauses), dropped after the test. Returns (user, password)."""
    made: list[str] = []

    def make(*grants: str, user: str | None = None) -> tuple[str, str]:
        user = user or f"mon_{uuid4().hex[:8]}"
        password = "pw-" + uuid4().hex[:8]
        instance.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, password))
        made.append(user)
        for grant in grants:
            instance.execute(f"GRANT {grant} TO %s@'%%'", (user,))
        return user, password

    yield make
    for user in made:
        instance.execute("DROP USER IF EXISTS %s@'%%'", (user,))


def create_tables(instance, schema: str, count: int, prefix: str = "t") -> None:
    with closing(instance.connect()) as conn, conn.cursor() as cursor:
        for n in range(count):
            cursor.execute(
                f"CREATE TABLE {identifier(schema)}.{identifier(f'{prefix}{n}')} "
                "(id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 2"
            )


def as_monitor(make_server, instance, user: str, password: str, name: str = "mon"):
    server = make_server(instance, name=name, password=password)
    server.user = user
    server.save()
    return server


def grants_of(instance, user: str) -> set[str]:
    return {row[0] for row in instance.execute("SHOW GRANTS FOR %s@'%%'", (user,))}


def pairs(entries) -> set[tuple[str, str]]:
    """(source, fix) for every fix an entry gives (capabilities, Test connection)."""
    return {(entry["source"], fix) for entry in entries for fix in entry["fixes"]}


def poll_pairs(server) -> set[tuple[str, str]]:
    """(source, fix) for every fix the latest poll's warnings give about a source."""
    snapshot = ServerSnapshot.objects.filter(server=server).latest()
    warnings = [Shortfall.from_dict(stored) for stored in snapshot.warnings]
    return {
        (source, fix)
        for warning in warnings
        if warning.cause in STATE_CAUSES
        for source in warning.sources
        for fix in warning.fixes
    }


# -- the three views agree -------------------------------------------------------------------


@pytest.mark.parametrize(
    "withheld", [None, "PROCESS", "statistics", "performance_schema", "SHOW VIEW"]
)
def test_the_poll_test_connection_and_the_panel_give_the_same_fixes(
    instance, schemas, monitor, make_server, admin_client, withheld
):
    (schema,) = schemas(1)
    create_tables(instance, schema, 2)
    grants = [grant for name, grant in MONITOR_GRANTS.items() if name != withheld]
    if withheld != "SHOW VIEW":
        grants.append(f"SHOW VIEW ON {identifier(schema)}.*")
    user, password = monitor(*grants)
    server = as_monitor(make_server, instance, user, password)

    report = poll_server(server)
    tested = probe(target_for(server))
    panel = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()["capabilities"]

    account = f"'{user}'@'%'"
    expected = {
        None: set(),
        "PROCESS": {
            (source, f"GRANT PROCESS ON *.* TO {account}")
            for source in ("tablespaces", "tablestats", "innodb_cmp", "cmp_per_index")
        },
        "statistics": {
            ("innodb_table_stats", f"GRANT SELECT ON mysql.innodb_table_stats TO {account}")
        },
        # The statement digests need the same grant as file I/O.
        "performance_schema": {
            (source, f"GRANT SELECT ON performance_schema.* TO {account}")
            for source in ("file_io", "statements")
        },
        "SHOW VIEW": {("definitions", f"GRANT SHOW VIEW ON `{schema}`.* TO {account}")},
    }[withheld]
    assert report.ok, report.error
    assert poll_pairs(server) == expected
    assert pairs(tested.sources) == expected
    assert pairs(panel) == expected
    # One line per distinct fix, in the poll, the server and the CLI alike.
    assert len(report.warnings) == len({fix for _, fix in expected})
    server.refresh_from_db()
    assert server.last_error.splitlines() == report.warnings
    assert server.status == ("ok" if withheld is None else "degraded")
    assert tested.complete is (withheld is None)
    assert [c["source"] for c in panel] == [s["source"] for s in tested.sources]
    assert {c["source"]: c["ok"] for c in panel} == {s["source"]: s["ok"] for s in tested.sources}


def test_performance_schema_off_is_one_setting_in_all_three(mariadb, make_server, admin_client):
    server = make_server(mariadb, name="ps-off")

    report = poll_server(server)
    tested = probe(target_for(server))
    panel = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()["capabilities"]

    fix = (
        "set performance_schema=ON under [mysqld] in my.cnf and restart (it is not dynamic; "
        "MariaDB ships with it OFF)"
    )
    assert ("file_io", fix) in poll_pairs(server)
    assert poll_pairs(server) == pairs(tested.sources) == pairs(panel)
    (file_io,) = [c for c in panel if c["source"] == "file_io"]
    assert (file_io["state"], file_io["causes"]) == ("missing", ["setting"])
    lost = (
        "per-partition I/O; hotspots fall back to row growth; which statements read every partition"
    )
    assert f"performance_schema is OFF ({lost}): {fix}" in report.warnings
    assert tested.missing_privileges == []


def test_performance_schema_off_and_not_granted_gives_both_fixes_in_all_three(
    mariadb, make_server, admin_client
):
    user = f"mon_{uuid4().hex[:8]}"
    mariadb.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
    try:
        for grant in ("PROCESS, SHOW VIEW ON *.*", MONITOR_GRANTS["statistics"]):
            mariadb.execute(f"GRANT {grant} TO '{user}'@'%'")
        server = as_monitor(make_server, mariadb, user, "pw", name="ps-off-bare")
        poll_server(server)
        tested = probe(target_for(server))
    finally:
        mariadb.execute(f"DROP USER '{user}'@'%'")
    panel = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()["capabilities"]

    (file_io,) = [c for c in panel if c["source"] == "file_io"]
    assert file_io["causes"] == ["privilege", "setting"]
    assert file_io["fixes"][0] == f"GRANT SELECT ON performance_schema.* TO '{user}'@'%'"
    assert "performance_schema=ON under [mysqld]" in file_io["fixes"][1]
    assert poll_pairs(server) == pairs(tested.sources) == pairs(panel)


def test_performance_schema_on_but_not_granted_says_grant_not_my_cnf(
    instance, schemas, monitor, make_server, admin_client
):
    user, password = monitor(MONITOR_GRANTS["PROCESS"], MONITOR_GRANTS["statistics"])
    server = as_monitor(make_server, instance, user, password)

    poll_server(server)
    panel = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()["capabilities"]

    (file_io,) = [c for c in panel if c["source"] == "file_io"]
    assert file_io["causes"] == ["privilege"]
    assert file_io["fixes"] == [f"GRANT SELECT ON performance_schema.* TO '{user}'@'%'"]
    assert "performance_schema is OFF" not in file_io["detail"]


# -- tables hidden from the account ----------------------------------------------------------


def test_57_of_65_hidden_tables_make_one_line_and_are_counted(
    instance, schemas, monitor, make_server, admin_client, monkeypatch
):
    shown, first, second, third = schemas(4)
    create_tables(instance, shown, 8)
    for schema, count in ((first, 20), (second, 20), (third, 17)):
        create_tables(instance, schema, count)
    user, password = monitor(*MONITOR_GRANTS.values(), f"SELECT ON {shown}.*")
    server = as_monitor(make_server, instance, user, password)

    report = poll_server(server)

    order = sorted([first, second]) + [third]  # most hidden tables first, then by name
    grants = "; ".join(f"GRANT SHOW VIEW ON `{schema}`.* TO '{user}'@'%'" for schema in order)
    line = (
        "57 of 65 partitioned tables are not visible to the account, so their partition "
        f"definitions cannot be read (in 3 schemas): {grants}"
    )
    assert report.warnings == [line]
    server.refresh_from_db()
    assert server.last_error == line and len(server.last_error) < 400
    assert (server.status, server.partitioned_tables) == ("degraded", 65)
    health = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()
    assert (health["hidden_tables"], health["partitioned_tables"]) == (57, 65)
    (warning,) = health["warnings"]
    assert (warning["cause"], warning["count"], len(warning["tables"])) == ("hidden", 57, 57)
    assert {schema for schema, _ in warning["tables"]} == {first, second, third}
    listed = admin_client.get(f"/api/v1/servers/{server.pk}/tables/").json()
    assert {t["schema"] for t in listed} == {shown} and len(listed) == 8
    assert not PartitionedTable.objects.filter(server=server).exclude(schema=shown).exists()

    # The next poll remembers them: one table per hidden schema is looked at again.
    reads = []
    real_read = definitions.read
    monkeypatch.setattr(definitions, "read", lambda *a: reads.append(a[1:]) or real_read(*a))
    assert poll_server(server).warnings == [line]
    assert sorted(schema for schema, _ in reads) == sorted([first, second, third])
    older, latest = ServerSnapshot.objects.filter(server=server).order_by("taken_at")
    assert older.warnings[0]["tables"] == [] and older.warnings[0]["count"] == 57
    assert len(latest.warnings[0]["tables"]) == 57

    # A GRANT on one schema is noticed at the next poll, and its tables are read.
    instance.execute(f"GRANT SHOW VIEW ON {identifier(first)}.* TO %s@'%%'", (user,))
    report = poll_server(server)
    assert report.warnings[0].startswith("37 of 65 partitioned tables are not visible")
    listed = admin_client.get(f"/api/v1/servers/{server.pk}/tables/").json()
    assert len(listed) == 28
    assert not PartitionedTable.objects.filter(server=server).exclude(dropped_at=None).exists()


def test_without_process_hidden_tables_are_still_not_called_dropped(
    instance, schemas, monitor, make_server
):
    shown, hidden = schemas(2)
    create_tables(instance, shown, 1)
    create_tables(instance, hidden, 3)
    user, password = monitor(MONITOR_GRANTS["statistics"], f"SELECT ON {shown}.*")
    server = as_monitor(make_server, instance, user, password)

    report = poll_server(server)

    assert not [line for line in report.warnings if "dropped" in line]
    assert any(line.startswith("3 of 4 partitioned tables") for line in report.warnings)


# -- quoting -----------------------------------------------------------------------------------


def test_a_schema_name_cannot_inject_a_statement_into_the_suggested_grant(
    instance, monitor, make_server, admin_client
):
    instance.execute(f"CREATE DATABASE {identifier(EVIL)}")
    try:
        create_tables(instance, EVIL, 1)
        user, password = monitor(*MONITOR_GRANTS.values())
        server = as_monitor(make_server, instance, user, password)
        report = poll_server(server)
        tested = probe(target_for(server))
        before = grants_of(instance, user)

        grant = f"GRANT SHOW VIEW ON `x``.* TO evil; --`.* TO '{user}'@'%'"
        assert report.warnings[0].endswith(f": {grant}")
        assert grant + ";" in tested.fixes
        with closing(instance.connect()) as conn, conn.cursor() as cursor:
            cursor.execute(grant)  # one statement: PyMySQL refuses several in one call
        after = grants_of(instance, user)
        users = instance.execute("SELECT COUNT(*) FROM mysql.user WHERE User = 'evil'")[0][0]

        assert after - before == {f"GRANT SHOW VIEW ON `x``.* TO evil; --`.* TO `{user}`@`%`"}
        assert before <= after and users == 0
        assert poll_server(server).warnings == []
        listed = admin_client.get(f"/api/v1/servers/{server.pk}/tables/").json()
        assert [(t["schema"], t["name"]) for t in listed] == [(EVIL, "t0")]
    finally:
        instance.execute(f"DROP DATABASE IF EXISTS {identifier(EVIL)}")


def test_an_account_name_with_quotes_and_backslashes_gets_a_grant_that_runs(
    instance, monitor, make_server
):
    user, password = monitor(MONITOR_GRANTS["statistics"], user="o'n\\e")
    server = as_monitor(make_server, instance, user, password)

    report = poll_server(server)

    (process,) = [line for line in report.warnings if "GRANT PROCESS" in line]
    grant = process.split(": ", 1)[1]
    assert grant == "GRANT PROCESS ON *.* TO `o'n\\e`@'%'"
    # The same statement grants the same account whether backslashes escape or not.
    for sql_mode in ("NO_BACKSLASH_ESCAPES", ""):
        with closing(instance.connect()) as conn, conn.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = %s", (sql_mode,))
            cursor.execute(grant)
        granted = grants_of(instance, user)
        assert any(g.startswith("GRANT PROCESS ON *.* TO `o'n\\e`@`%`") for g in granted)
        instance.execute("REVOKE PROCESS ON *.* FROM %s@'%%'", (user,))


def test_an_account_name_with_a_quote_gets_a_grant_that_runs_in_either_sql_mode(instance, monitor):
    user, _ = monitor(user="o'brien")
    grant = f"GRANT PROCESS ON *.* TO {account(user + '@%')}"
    assert grant == "GRANT PROCESS ON *.* TO 'o''brien'@'%'"
    for sql_mode in ("NO_BACKSLASH_ESCAPES", ""):
        with closing(instance.connect()) as conn, conn.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = %s", (sql_mode,))
            cursor.execute(grant)
        assert any(
            g.startswith("GRANT PROCESS ON *.* TO `o'brien`@`%`") for g in grants_of(instance, user)
        )
        instance.execute("REVOKE PROCESS ON *.* FROM %s@'%%'", (user,))


def test_quoting_doubles_backticks_and_escapes_strings():
    assert identifier("a`b") == "`a``b`"
    assert string_literal("it's a \\ test") == "'it''s a \\\\ test'"
    assert account("mon@x@10.0.%") == "'mon@x'@'10.0.%'"
    assert account("a\\b`c@%") == "`a\\b``c`@'%'"


def test_statements_with_a_quoted_name_do_not_parse_as_two(instance):
    """The doubled backtick keeps the name one token: the server sees one statement."""
    with closing(instance.connect()) as conn, conn.cursor() as cursor:
        with pytest.raises(pymysql.MySQLError) as caught:
            cursor.execute(f"SELECT 1 FROM {identifier(EVIL)}.t")
    assert caught.value.args[0] in (1049, 1146)  # unknown schema or table: one name


# -- grouping ----------------------------------------------------------------------------------


def test_many_fixes_make_one_bounded_line():
    hidden = [(f"s{n:02}", f"t{m}") for n in range(40) for m in range(3)]
    shortfall = hidden_shortfall(hidden, 200, "'m'@'%'")

    assert len(shortfall.fixes) == 40 and len(shortfall.tables) == 120
    assert shortfall.line.endswith("; and 37 more")
    assert shortfall.line.count("GRANT") == 3


def test_sources_one_grant_fixes_share_a_line():
    process = ("GRANT PROCESS ON *.* TO 'm'@'%'",)
    merged = grouped(
        [
            Shortfall("privilege", ("tablespaces",), "cannot read A (x)", process),
            Shortfall("privilege", ("innodb_cmp",), "cannot read B (y)", process),
            Shortfall("setting", ("file_io",), "performance_schema is OFF (z)", ("my.cnf",)),
        ]
    )

    assert [s.line for s in merged] == [
        "cannot read A (x), B (y): GRANT PROCESS ON *.* TO 'm'@'%'",
        "performance_schema is OFF (z): my.cnf",
    ]
    assert merged[0].sources == ("tablespaces", "innodb_cmp")


# -- manage.py poll --------------------------------------------------------------------------


def test_poll_prints_one_line_then_one_line_per_distinct_warning(
    instance, schemas, monitor, make_server
):
    shown, hidden = schemas(2)
    create_tables(instance, hidden, 12)
    user, password = monitor(MONITOR_GRANTS["statistics"], f"SELECT ON {shown}.*")
    as_monitor(make_server, instance, user, password, name="cli-mon")
    out = io.StringIO()

    call_command("poll", "cli-mon", stdout=out)

    first, *rest = out.getvalue().splitlines()
    assert first.startswith("cli-mon: ") and first.endswith(f", {len(rest)} warnings")
    assert len(rest) == 3  # PROCESS, performance_schema, the hidden tables
    assert all(line.startswith("  ") for line in rest)
    assert any("12 of 12 partitioned tables are not visible" in line for line in rest)
    assert sum(line.count("GRANT") for line in rest) == 3
