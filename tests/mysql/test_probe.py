"""`probe()` and `open_session()` against real private MariaDB servers: what a reachable
server reports, how each kind of failure reads, least-privilege grants, session caps, TLS."""

import socket
import threading
from collections.abc import Iterator

import pymysql
import pytest

from partdash.mysql.connection import Target, open_session
from partdash.mysql.probe import ProbeResult, probe
from tests.services import free_port

PASSWORD = "Zq9-unguessable-probe-pw"
MONITOR_PASSWORD = "mon-Pw-7731"
GRANTS = [
    "GRANT PROCESS ON *.* TO 'probe_mon'@'%'",
    "GRANT SELECT ON mysql.innodb_table_stats TO 'probe_mon'@'%'",
    "GRANT SELECT ON performance_schema.* TO 'probe_mon'@'%'",
]


def root_target(instance, **fields) -> Target:
    return Target(host=instance.host, port=instance.port, user="root", **fields)


@pytest.fixture
def monitor(mariadb_ps) -> Iterator[Target]:
    """A `probe_mon` account with no privileges at all, dropped afterwards."""
    mariadb_ps.execute("DROP USER IF EXISTS 'probe_mon'@'%'")
    mariadb_ps.execute("CREATE USER 'probe_mon'@'%%' IDENTIFIED BY %s", (MONITOR_PASSWORD,))
    yield Target(mariadb_ps.host, mariadb_ps.port, "probe_mon", MONITOR_PASSWORD)
    mariadb_ps.execute("DROP USER IF EXISTS 'probe_mon'@'%'")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP server that accepts connections but never sends the MySQL handshake."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []

    def accept_forever() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept_forever, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in accepted:
        conn.close()


def create_partitioned_table(instance) -> None:
    instance.execute("CREATE DATABASE IF NOT EXISTS probe_lp")
    instance.execute(
        "CREATE TABLE IF NOT EXISTS probe_lp.t (id INT PRIMARY KEY) "
        "PARTITION BY HASH(id) PARTITIONS 5"
    )


def grant_what_probe_suggests(instance, target: Target) -> ProbeResult:
    """Run the GRANTs the probe lists, as a user would, until it lists none (what the
    account may read decides what more it can see, so a second round can add some)."""
    for _ in range(3):
        result = probe(target)
        if not result.missing_privileges:
            break
        for missing in result.missing_privileges:
            instance.execute(missing.grant)
    return result


def partitions_as_root(instance) -> int:
    rows = instance.execute(
        "SELECT COUNT(*) FROM mysql.innodb_table_stats WHERE table_name LIKE '%%#P#%%'"
    )
    return rows[0][0]


# -- a reachable server -------------------------------------------------------------------------


def test_it_reports_flavor_version_and_that_performance_schema_is_off(mariadb):
    result = probe(root_target(mariadb))

    assert result.reachable, result.error
    assert result.flavor == "mariadb"
    assert result.version.startswith("10.")
    assert result.settings["performance_schema"] is False
    assert result.settings["innodb_cmp_per_index_enabled"] is False
    assert any("performance_schema=ON" in fix for fix in result.fixes)
    assert result.missing_privileges == []


def test_it_reports_performance_schema_on_without_a_fix_for_it(mariadb_ps):
    result = probe(root_target(mariadb_ps))

    assert result.reachable, result.error
    assert result.settings["performance_schema"] is True
    assert result.settings["innodb_cmp_per_index_enabled"] is True
    assert not any("performance_schema" in fix for fix in result.fixes)


# -- failures: one line each, never the password ------------------------------------------------


def test_it_reports_a_name_that_does_not_resolve():
    result = probe(Target("nosuch.invalid", 3306, "root", PASSWORD))

    assert not result.reachable
    assert result.error_kind == "dns"
    assert result.error.startswith("cannot resolve host 'nosuch.invalid': ")
    assert "\n" not in result.error and PASSWORD not in result.error


def test_it_reports_a_refused_connection():
    port = free_port()
    result = probe(Target("127.0.0.1", port, "root", PASSWORD))

    assert result.error_kind == "refused"
    assert result.error == f"connection refused by 127.0.0.1:{port}"


def test_it_reports_a_timeout_when_the_server_never_greets(silent_port, settings):
    settings.PARTDASH_CONNECT_TIMEOUT = 1
    settings.PARTDASH_READ_TIMEOUT = 1

    result = probe(Target("127.0.0.1", silent_port, "root", PASSWORD))

    assert result.error_kind == "timeout"
    assert result.error == (
        f"timed out talking to 127.0.0.1:{silent_port}: no answer within the connect timeout of 1 s"
    )


def test_it_reports_access_denied_without_showing_the_password(mariadb):
    mariadb.execute("DROP USER IF EXISTS 'probe_denied'@'%'")
    mariadb.execute("CREATE USER 'probe_denied'@'%' IDENTIFIED BY 'the-right-one'")

    result = probe(Target(mariadb.host, mariadb.port, "probe_denied", PASSWORD))

    assert result.error_kind == "access_denied"
    assert result.error == f"access denied for 'probe_denied' at {mariadb.host}:{mariadb.port}"
    assert PASSWORD not in result.error and PASSWORD not in result.summary


# -- least privilege ----------------------------------------------------------------------------


def test_it_lists_each_missing_privilege_with_the_grant_that_fixes_it(monitor):
    result = probe(monitor)

    assert result.reachable, result.error
    assert result.account == "'probe_mon'@'%'"
    assert [m.privilege for m in result.missing_privileges] == [
        "PROCESS",
        "SELECT on mysql.innodb_table_stats",
        "SELECT on performance_schema",
    ]
    assert [m.grant for m in result.missing_privileges] == GRANTS
    assert [f"{grant};" for grant in GRANTS] == result.fixes[:3]


def test_it_names_a_schema_whose_partitions_the_account_cannot_see(mariadb_ps, monitor):
    create_partitioned_table(mariadb_ps)
    for grant in GRANTS:
        mariadb_ps.execute(grant)

    missing = probe(monitor).missing_privileges

    assert ("SHOW VIEW on `probe_lp`", "GRANT SHOW VIEW ON `probe_lp`.* TO 'probe_mon'@'%'") in [
        (m.privilege, m.grant) for m in missing
    ]


def test_running_the_suggested_grants_leaves_nothing_missing(mariadb_ps, monitor):
    create_partitioned_table(mariadb_ps)

    result = grant_what_probe_suggests(mariadb_ps, monitor)

    assert result.reachable, result.error
    assert result.missing_privileges == []


def test_a_poll_through_a_granted_monitor_account_counts_partitions(
    mariadb_ps, monitor, make_server
):
    from partdash.polling.service import poll_server

    create_partitioned_table(mariadb_ps)
    assert grant_what_probe_suggests(mariadb_ps, monitor).missing_privileges == []
    server = make_server(mariadb_ps, name="least", password=MONITOR_PASSWORD)
    server.user = "probe_mon"
    server.save()

    report = poll_server(server)

    assert report.ok, report.error
    assert report.warnings == []
    assert report.partitions_seen == partitions_as_root(mariadb_ps) >= 5
    server.refresh_from_db()
    assert server.status == "ok"


def test_a_poll_without_privileges_succeeds_degraded(mariadb_ps, monitor, make_server):
    from partdash.polling.service import poll_server

    server = make_server(mariadb_ps, name="bare", password=MONITOR_PASSWORD)
    server.user = "probe_mon"
    server.save()

    report = poll_server(server)

    assert report.ok, report.error
    assert report.warnings == [
        "cannot read information_schema.INNODB_SYS_TABLESPACES (file sizes), "
        "information_schema.INNODB_SYS_TABLESTATS (rows modified since the statistics), "
        "information_schema.INNODB_CMP (compression counters), "
        "information_schema.INNODB_CMP_PER_INDEX (per-partition compression failure rates): "
        "GRANT PROCESS ON *.* TO 'probe_mon'@'%'",
        "cannot read mysql.innodb_table_stats (rows and sizes): "
        "GRANT SELECT ON mysql.innodb_table_stats TO 'probe_mon'@'%'",
        "cannot read performance_schema.file_summary_by_instance (per-partition I/O; hotspots "
        "fall back to row growth), performance_schema.events_statements_summary_by_digest "
        "(which statements read every partition): "
        "GRANT SELECT ON performance_schema.* TO 'probe_mon'@'%'",
    ]
    server.refresh_from_db()
    assert server.status == "degraded"


# -- session caps -------------------------------------------------------------------------------


def test_a_session_carries_the_statement_and_lock_wait_caps(mariadb, settings):
    settings.PARTDASH_STATEMENT_TIMEOUT = 7
    settings.PARTDASH_LOCK_WAIT_TIMEOUT = 4

    with open_session(root_target(mariadb)) as session:
        statement_cap = session.scalar("SELECT @@session.max_statement_time")
        lock_wait = session.scalar("SELECT @@session.lock_wait_timeout")

    assert statement_cap == 7.0
    assert lock_wait == 4


def test_a_session_cannot_write_rows(mariadb):
    mariadb.execute("CREATE DATABASE IF NOT EXISTS probe_ro")
    mariadb.execute("CREATE TABLE IF NOT EXISTS probe_ro.t (id INT PRIMARY KEY) ENGINE=InnoDB")

    with open_session(root_target(mariadb)) as session:
        with pytest.raises(pymysql.MySQLError) as caught:
            session.rows("INSERT INTO probe_ro.t VALUES (1)")

    assert caught.value.args[0] == 1792  # cannot execute in a READ ONLY transaction
    assert mariadb.execute("SELECT COUNT(*) FROM probe_ro.t")[0][0] == 0


def test_a_session_cannot_run_ddl(mariadb):
    mariadb.execute("DROP DATABASE IF EXISTS probe_ddl")

    with open_session(root_target(mariadb)) as session:
        with pytest.raises(pymysql.MySQLError) as caught:
            session.rows("CREATE DATABASE probe_ddl")

    assert caught.value.args[0] == 1792
    assert mariadb.execute("SHOW DATABASES LIKE 'probe_ddl'") == ()


# -- TLS ----------------------------------------------------------------------------------------


def test_verify_ca_fails_against_a_server_without_tls(mariadb):
    result = probe(root_target(mariadb, tls_mode="verify_ca"))

    assert result.error_kind == "tls"
    assert result.error == f"{mariadb.host}:{mariadb.port} does not offer TLS but verify_ca is set"


def test_preferred_tls_connects_to_a_server_without_tls(mariadb):
    result = probe(root_target(mariadb))

    assert root_target(mariadb).tls_mode == "preferred"
    assert result.reachable, result.error
