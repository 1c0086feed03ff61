"""`Test connection`: can partdash reach a server, and what can it see there?

The result says what is missing and the exact statement that fixes it: a GRANT for a
missing privilege, a my.cnf line for a setting that is not dynamic.
"""

from dataclasses import dataclass, field

import pymysql

from partdash.collector.names import decode_filename, split_partition
from partdash.servers.choices import Flavor
from partdash.servers.connection import ConnectionFailure, Session, Target, open_session

# Each privilege-gated source, probed with a query that reads at most one row.
PRIVILEGE_PROBES = {
    "PROCESS": (
        "SELECT 1 FROM information_schema.INNODB_CMP LIMIT 1",
        "GRANT PROCESS ON *.* TO {account}",
    ),
    "SELECT on mysql.innodb_table_stats": (
        "SELECT 1 FROM mysql.innodb_table_stats LIMIT 1",
        "GRANT SELECT ON mysql.innodb_table_stats TO {account}",
    ),
    "SELECT on performance_schema": (
        "SELECT 1 FROM performance_schema.file_summary_by_instance LIMIT 1",
        "GRANT SELECT ON performance_schema.* TO {account}",
    ),
}

SETTINGS = ("performance_schema", "innodb_file_per_table", "innodb_cmp_per_index_enabled")

SETTING_FIXES = {
    "performance_schema": "add performance_schema=ON under [mysqld] in my.cnf and restart "
    "(it is not dynamic; MariaDB ships with it OFF)",
    "innodb_file_per_table": "SET GLOBAL innodb_file_per_table=ON (affects tables created "
    "or rebuilt afterwards)",
    "innodb_cmp_per_index_enabled": "SET GLOBAL innodb_cmp_per_index_enabled=ON (per-partition "
    "compression figures; costs some CPU)",
}


@dataclass
class MissingPrivilege:
    privilege: str
    grant: str


@dataclass
class ProbeResult:
    """What `Test connection` reports for one server."""

    reachable: bool
    error_kind: str = ""
    error: str = ""
    flavor: str = Flavor.UNKNOWN
    version: str = ""
    account: str = ""
    settings: dict[str, bool] = field(default_factory=dict)
    missing_privileges: list[MissingPrivilege] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    # What the server's greeting said about TLS (None: no greeting), and whether this
    # connection was encrypted.
    tls_offered: bool | None = None
    encrypted: bool = False

    @property
    def flavor_label(self) -> str:
        return Flavor(self.flavor).label

    @property
    def summary(self) -> str:
        """One line for a message or the CLI."""
        if not self.reachable:
            return f"unreachable: {self.error}"
        parts = [f"reachable, {self.flavor} {self.version}"]
        parts += [f"{name}={'ON' if on else 'OFF'}" for name, on in self.settings.items()]
        if self.missing_privileges:
            parts.append("missing: " + ", ".join(m.privilege for m in self.missing_privileges))
        return "; ".join(parts)


def _quoted_account(current_user: str) -> str:
    user, _, host = current_user.rpartition("@")
    return f"'{user}'@'{host}'"


def _settings(session: Session) -> dict[str, bool]:
    rows = session.rows("SHOW GLOBAL VARIABLES WHERE Variable_name IN (%s, %s, %s)", SETTINGS)
    values = {name.lower(): value.upper() in ("ON", "1") for name, value in rows}
    return {name: values.get(name, False) for name in SETTINGS}


def _missing_privileges(session: Session, account: str) -> list[MissingPrivilege]:
    missing = []
    for privilege, (query, grant) in PRIVILEGE_PROBES.items():
        try:
            session.rows(query)
        except pymysql.MySQLError as exc:
            if exc.args and exc.args[0] in (1044, 1142, 1227, 1143):
                missing.append(MissingPrivilege(privilege, grant.format(account=account)))
    return missing


def _hidden_schemas(session: Session, account: str) -> list[MissingPrivilege]:
    """Schemas whose partitioned tables InnoDB lists but information_schema hides: the
    account has no privilege there, so a poll cannot read their partition definitions.
    SHOW VIEW is enough to see them and, unlike SELECT, reads no data.
    One table per schema is looked up by name (cheap: no scan of every table)."""
    missing = []
    try:
        rows = session.rows(
            "SELECT database_name, MIN(table_name) FROM mysql.innodb_table_stats "
            "WHERE table_name LIKE %s OR table_name LIKE %s GROUP BY database_name",
            ("%#P#%", "%#p#%"),
        )
        for stored_schema, stored_table in rows:
            name = split_partition(decode_filename(stored_schema), decode_filename(stored_table))
            if name is None or session.rows(
                "SELECT 1 FROM information_schema.PARTITIONS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s LIMIT 1",
                (name.schema, name.table),
            ):
                continue
            quoted = "`" + name.schema.replace("`", "``") + "`"
            missing.append(
                MissingPrivilege(
                    f"SHOW VIEW on {quoted}", f"GRANT SHOW VIEW ON {quoted}.* TO {account}"
                )
            )
    except pymysql.MySQLError:
        pass  # no access to the statistics is reported as its own missing privilege
    return missing


def probe(target: Target) -> ProbeResult:
    """Connect and report reachability, flavour, version and capabilities."""
    try:
        with open_session(target) as session:
            account = _quoted_account(session.scalar("SELECT CURRENT_USER()"))
            settings = _settings(session)
            missing = _missing_privileges(session, account)
            missing += _hidden_schemas(session, account)
    except ConnectionFailure as failure:
        return ProbeResult(
            reachable=False,
            error_kind=failure.kind,
            error=failure.message,
            tls_offered=failure.tls_offered,
        )
    fixes = [f"{m.grant};" for m in missing]
    fixes += [SETTING_FIXES[name] for name, on in settings.items() if not on]
    return ProbeResult(
        reachable=True,
        flavor=session.flavor,
        version=session.version,
        account=account,
        settings=settings,
        missing_privileges=missing,
        fixes=fixes,
        tls_offered=session.tls_offered,
        encrypted=session.encrypted,
    )
