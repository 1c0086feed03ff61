"""`Test connection`: can partdash reach a server, and what can it see there?

Every source of `partdash.mysql.catalogue` is probed with its cheap query (at most
one row) and judged with the same settings and the same fixes as a poll, so Test
connection, the poll's warnings and the server page's capability panel agree: a GRANT
for a missing privilege, a my.cnf or SET GLOBAL line for a setting.
"""

from dataclasses import dataclass, field
from typing import cast

import pymysql
from django.conf import settings as django_settings

from partdash.health import coverage
from partdash.health.coverage import CoverageShape
from partdash.lib.quoting import identifier
from partdash.mysql.catalogue import (
    CMP_PER_INDEX,
    DEFINITIONS,
    FILE_IO,
    HIDDEN,
    INNODB_CMP,
    INNODB_TABLE_STATS,
    PRIVILEGE,
    SETTING,
    STATEMENTS,
    TABLESPACES,
    TABLESTATS,
    Shortfall,
    Source,
    SourceState,
    consumer_shortfall,
    hidden_schemas_shortfall,
    privilege_shortfall,
    setting_shortfall,
    source_states,
)
from partdash.mysql.choices import Flavor
from partdash.mysql.connection import ConnectionFailure, Session, Target, open_session
from partdash.mysql.dialects import Dialect, dialect_for
from partdash.mysql.names import split_partition, split_tablespace
from partdash.mysql.sources import (
    DENIED,
    SourceUnavailable,
    server_facts,
    statements,
    tablestats,
)

# The settings Test connection shows, in this order.
SETTINGS = (
    "performance_schema",
    "innodb_file_per_table",
    "innodb_cmp_per_index_enabled",
    "innodb_stats_persistent",
)


@dataclass
class MissingPrivilege:
    privilege: str
    grant: str


@dataclass
class ProbeResult:
    """What `Test connection` reports for one server. `sources` has one entry per
    catalogue source, shaped like the capability panel's (`SourceState.as_dict`)."""

    reachable: bool
    error_kind: str = ""
    error: str = ""
    flavor: str = cast(str, Flavor.UNKNOWN)  # (a str: mypy sees the choice's tuple)
    version: str = ""
    account: str = ""
    settings: dict[str, bool] = field(default_factory=dict)
    missing_privileges: list[MissingPrivilege] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)
    # Each signal polls will measure or not, why and what enables it (`health.coverage`).
    coverage: list[CoverageShape] = field(default_factory=list)
    # What the server's greeting said about TLS (None: no greeting), and whether this
    # connection was encrypted.
    tls_offered: bool | None = None
    encrypted: bool = False
    # The certificate the server presented (`SHA256:` + hex, "" without TLS), whether a CA
    # verified it in the handshake (the verifying modes) and whether it is the approved one.
    tls_fingerprint: str = ""
    certificate_verified: bool = False
    certificate_approved: bool = False

    @property
    def flavor_label(self) -> str:
        return Flavor(self.flavor).label

    @property
    def complete(self) -> bool:
        """Every source partdash reads on this server is readable: a poll will be ok."""
        return all(source["ok"] for source in self.sources)

    @property
    def blind(self) -> list[CoverageShape]:
        """The signals polls will not measure here (`coverage`, measured left out)."""
        return [signal for signal in self.coverage if not signal["measured"]]

    @property
    def certificate(self) -> str:
        """One line on the certificate for an operator who may approve it ("" without TLS)."""
        if not self.tls_fingerprint:
            return ""
        if self.certificate_verified:
            trust = "verified by the CA"
        elif self.certificate_approved:
            trust = "approved"
        else:
            trust = "not verified: approve it to answer authentication that sends the password"
        return f"TLS certificate {self.tls_fingerprint} ({trust})"

    @property
    def summary(self) -> str:
        """One line for a message or the CLI."""
        if not self.reachable:
            return f"unreachable: {self.error}"
        parts = [f"reachable, {self.flavor} {self.version}"]
        parts += [f"{name}={'ON' if on else 'OFF'}" for name, on in self.settings.items()]
        if self.missing_privileges:
            parts.append("missing: " + ", ".join(m.privilege for m in self.missing_privileges))
        if self.blind:
            parts.append("not measured here: " + ", ".join(s["label"] for s in self.blind))
        if self.certificate:
            parts.append(self.certificate)
        return "; ".join(parts)


def _readable(session: Session, sql: str, args: tuple = ()) -> bool:
    """Whether the account may read it; any other error is not the account's to fix."""
    try:
        session.rows(sql, args)
    except pymysql.MySQLError as exc:
        if exc.args and exc.args[0] in DENIED:
            return False
    return True


class _Prober:
    """Judges each source as a poll would, from one cheap query each."""

    def __init__(self, session: Session, facts: server_facts.ServerFacts, dialect: Dialect):
        self.session, self.facts, self.dialect = session, facts, dialect
        self.read: dict[str, bool] = {}
        self.shortfalls: list[Shortfall] = []
        self.rows_changed: coverage.Blind | None = None  # why polls will not read them

    def denied(self, source: Source) -> None:
        self.shortfalls.append(privilege_shortfall(source, self.facts.account, self.dialect))

    def off(self, source: Source) -> None:
        self.shortfalls.append(setting_shortfall(source))

    def check(self, source: Source) -> bool:
        """Probe one source: its privilege, then its setting. Returns whether the
        account may read it."""
        readable = _readable(self.session, source.probe_query(self.dialect))
        if not readable:
            self.denied(source)
        setting_off = bool(source.setting) and not self.facts.is_on(source.setting)
        if setting_off:
            self.off(source)
        self.read[source.key] = readable and not (setting_off and source.setting_required)
        return readable

    def statements(self) -> None:
        """The digest summary as the file I/O source (same privilege and setting), and its
        consumer, which only performance_schema's own table tells."""
        readable = self.check(STATEMENTS)
        if readable and self.facts.is_on("performance_schema"):
            if not statements.consumer_on(self.session):
                self.shortfalls.append(consumer_shortfall())
                self.read[STATEMENTS.key] = False

    def has_compressed_partitions(self) -> bool:
        sql = (
            f"SELECT 1 FROM {self.dialect.tablespaces_table} WHERE ROW_FORMAT = 'Compressed' "
            "AND (NAME LIKE '%%#P#%%' OR NAME LIKE '%%#p#%%') LIMIT 1"
        )
        return bool(self.session.rows(sql))

    def compression(self, process: bool) -> None:
        """Per-index counters are read where compressed partitions exist or the setting
        is ON, as a poll does; without PROCESS neither can be told."""
        self.check(INNODB_CMP)
        enabled = self.facts.is_on(CMP_PER_INDEX.setting)
        if enabled:
            self.check(CMP_PER_INDEX)
        elif process and self.has_compressed_partitions():
            self.off(CMP_PER_INDEX)
            self.read[CMP_PER_INDEX.key] = False

    def tablestats(self, process: bool) -> None:
        """Read by polls unless switched off, and by default only where the dictionary
        cache holds every InnoDB table (`tablestats.plan`); even a LIMIT 1 read of it
        costs what a full one does, so PROCESS (which it needs) stands for it, and the
        dictionary's table count (which loads no table) for the cache."""
        mode = django_settings.PARTDASH_READ_TABLESTATS
        if mode == "off":
            self.rows_changed = coverage.TABLESTATS_OFF
            return
        self.read[TABLESTATS.key] = process
        if not process:
            self.denied(TABLESTATS)
        elif mode == "auto":
            self.dictionary_cache()

    def dictionary_cache(self) -> None:
        """Where table_definition_cache holds fewer tables than the dictionary, polls do
        not read rows changed: not `ok`, with the SET GLOBAL that makes them free."""
        try:
            tables = tablestats.dictionary_tables(self.session, self.dialect)
        except SourceUnavailable:
            return  # the poll would fail the same way and say so
        cache = self.facts.number("table_definition_cache")
        if tables <= cache:
            return
        blind = coverage.uncached(cache, tables)
        assert blind.enable is not None  # the cache's SET GLOBAL
        self.shortfalls.append(Shortfall(SETTING, (TABLESTATS.key,), blind.why, (blind.enable,)))
        self.read[TABLESTATS.key] = False
        self.rows_changed = blind

    def blind(self, source: Source) -> coverage.Blind | None:
        """Why polls will not read `source` and its first fix; None where they will."""
        if self.read.get(source.key, True):
            return None
        mine = [s for s in self.shortfalls if source.key in s.sources]
        fixes = [fix for s in mine for fix in s.fixes]
        why = "; ".join(s.message for s in mine) or f"{source.name(self.dialect)} is not read"
        return coverage.Blind(why, fixes[0] if fixes else None)

    def coverage(self) -> list[coverage.CoverageShape]:
        """What polls will measure here, as the API and the pages will say it."""
        rows_changed = self.rows_changed or self.blind(TABLESTATS)
        others = tuple(
            (source.key, source.loses, blind)
            for source in (TABLESPACES, INNODB_CMP, CMP_PER_INDEX)
            if (blind := self.blind(source)) is not None
        )
        return coverage.coverage(rows_changed, self.blind(FILE_IO), others)

    def hidden_schemas(self) -> None:
        """Schemas whose partitioned tables InnoDB lists but information_schema hides:
        one table per schema is looked up by name (cheap: no scan of every table)."""
        samples = [
            (schema, table)
            for schema, table in self._one_table_per_schema()
            if not self.session.rows(DEFINITIONS.probe, (schema, table))
        ]
        if samples:
            self.shortfalls.append(hidden_schemas_shortfall(samples, self.facts.account))

    def _one_table_per_schema(self) -> list[tuple[str, str]]:
        tables: dict[str, str] = {}
        if self.read.get(INNODB_TABLE_STATS.key):
            rows = self.session.rows(
                "SELECT database_name, MIN(table_name) FROM mysql.innodb_table_stats "
                "WHERE table_name LIKE %s OR table_name LIKE %s GROUP BY database_name",
                ("%#P#%", "%#p#%"),
            )
            names = [split_partition(schema, table) for schema, table in rows]
        elif self.read.get(TABLESPACES.key):
            rows = self.session.rows(TABLESPACES.query(self.dialect))
            names = [split_tablespace(row[0]) for row in rows]
        else:
            return []  # nothing lists the tables: the missing grants say so
        for name in names:
            if name is not None:
                tables.setdefault(name.schema, name.table)
        return sorted(tables.items())

    def run(self) -> list[SourceState]:
        process = self.check(TABLESPACES)
        self.check(INNODB_TABLE_STATS)
        self.check(FILE_IO)
        self.compression(process)
        self.tablestats(process)
        self.hidden_schemas()
        self.statements()
        return source_states(self.read, self.shortfalls, self.dialect)


def _missing_privileges(states: list[SourceState]) -> list[MissingPrivilege]:
    missing: dict[str, MissingPrivilege] = {}
    for state in states:
        for shortfall in state.shortfalls:
            if shortfall.cause == PRIVILEGE:
                grant = shortfall.fixes[0]
                missing.setdefault(grant, MissingPrivilege(state.source.privilege, grant))
            elif shortfall.cause == HIDDEN:
                for (schema, _), grant in zip(shortfall.tables, shortfall.fixes, strict=True):
                    privilege = f"SHOW VIEW on {identifier(schema)}"
                    missing.setdefault(grant, MissingPrivilege(privilege, grant))
    return list(missing.values())


def _fixes(states: list[SourceState]) -> list[str]:
    """Every statement to run, each once: GRANTs (with their `;`), then settings."""
    grants = [fix for s in states for x in s.shortfalls if x.cause != SETTING for fix in x.fixes]
    lines = [fix for s in states for x in s.shortfalls if x.cause == SETTING for fix in x.fixes]
    return list(dict.fromkeys([f"{grant};" for grant in grants] + lines))


def _approved(fingerprint: str, target: Target) -> bool:
    return bool(fingerprint) and fingerprint == target.approved_fingerprint


def probe(target: Target, deadline: float | None = None) -> ProbeResult:
    """Connect and report reachability, flavour, version and every source's state; with
    `deadline` (seconds), give up then, whatever the server does (`open_session`)."""
    try:
        with open_session(target, deadline) as session:
            facts = server_facts.read(session)
            dialect = dialect_for(session.flavor, session.version)
            prober = _Prober(session, facts, dialect)
            states = prober.run()
            signals = prober.coverage()
    except ConnectionFailure as failure:
        return ProbeResult(
            reachable=False,
            error_kind=failure.kind,
            error=failure.message,
            tls_offered=failure.tls_offered,
            tls_fingerprint=failure.tls_fingerprint,
            certificate_approved=_approved(failure.tls_fingerprint, target),
        )
    return ProbeResult(
        reachable=True,
        flavor=session.flavor,
        version=session.version,
        account=facts.account,
        settings={name: facts.is_on(name) for name in SETTINGS},
        missing_privileges=_missing_privileges(states),
        fixes=_fixes(states),
        sources=[state.as_dict() for state in states],
        coverage=signals,
        tls_offered=session.tls_offered,
        encrypted=session.encrypted,
        tls_fingerprint=session.tls_fingerprint,
        certificate_verified=session.certificate_verified,
        certificate_approved=_approved(session.tls_fingerprint, target),
    )
