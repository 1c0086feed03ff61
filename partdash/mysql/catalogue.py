"""Everything partdash reads on a monitored server, declared once.

Each `Source` holds its SQL, a cheap probe query (at most one row), what it gives, what
it needs (a privilege, a setting) and the exact fix. The collector reads through it,
Test connection probes through it, and the server page's capability panel is drawn from
it, so the three say the same thing in the same words.

What cannot be read becomes a `Shortfall`: its cause, the sources concerned, one line
of message and the statements that fix it. A poll groups its shortfalls by fix, so a
degraded server reads as a few lines however many tables are concerned; the tables
themselves are kept as detail for the server page.
"""

from dataclasses import dataclass, field

from partdash.lib.quoting import identifier, qualified
from partdash.mysql import figures
from partdash.mysql.dialects import Dialect

# Why something could not be read (Shortfall.cause).
PRIVILEGE = "privilege"  # the account lacks a privilege: a GRANT fixes it
SETTING = "setting"  # a server setting is OFF: SET GLOBAL or my.cnf fixes it
HIDDEN = "hidden"  # tables the cheap sources list but information_schema hides
ERROR = "error"  # the server refused for another reason (timeout, ...): no fix known
DROPPED = "dropped"  # a table went away between the cheap sources and its definitions
DEFERRED = "deferred"  # more new tables than one poll reads: they follow

SHOWN_PER_LINE = 3  # fixes or table names spelled out in one line; the rest are counted


@dataclass(frozen=True)
class Source:
    """One place partdash reads from. `sql`, `probe` and `label` may name the dialect's
    tables as `{tablespaces}`, `{tablestats}`, `{zip_page_size}` and `{autoinc}`."""

    key: str  # as in ServerSnapshot.sources and in every shortfall
    label: str
    gives: str  # what partdash gets from it
    loses: str  # what is missing without it, in a few words
    sql: str
    probe: str = ""  # reads at most one row: can the account read it at all?
    privilege: str = ""  # what the account needs, as a DBA would say it
    grant: str = ""  # the GRANT, with {account} (and {schema} for per-schema grants)
    setting: str = ""  # a variable that should be ON
    setting_fix: str = ""
    # True: with the setting OFF the source gives nothing and is not read; False: it is
    # read and gives less (no file for partitions, statistics that do not persist).
    setting_required: bool = False
    read_when: str = ""  # "" when read by every poll, else when it is read

    def dialect_text(self, text: str, dialect: Dialect) -> str:
        return text.format(
            tablespaces=dialect.tablespaces_table,
            tablestats=dialect.tablestats_table,
            zip_page_size=dialect.zip_page_size_column or "0",
            autoinc="AUTOINC" if dialect.has_autoinc else "0",
            sample_text="QUERY_SAMPLE_TEXT" if dialect.has_sample_text else "NULL",
        )

    def name(self, dialect: Dialect) -> str:
        return self.dialect_text(self.label, dialect)

    def query(self, dialect: Dialect) -> str:
        return self.dialect_text(self.sql, dialect)

    def probe_query(self, dialect: Dialect) -> str:
        return self.dialect_text(self.probe, dialect)

    def grant_for(self, account: str, schema: str = "") -> str:
        """The GRANT for `account` (already quoted, see `partdash.lib.quoting.account`);
        a schema is quoted here."""
        return self.grant.format(account=account, schema=identifier(schema))


TABLESPACES = Source(
    key="tablespaces",
    label="{tablespaces}",
    gives="file and allocated size per partition, page (zip) size, row format",
    loses="file sizes",
    sql=(
        "SELECT NAME, SPACE, FILE_SIZE, ALLOCATED_SIZE, PAGE_SIZE, {zip_page_size}, ROW_FORMAT "
        "FROM {tablespaces} WHERE NAME LIKE '%%#P#%%' OR NAME LIKE '%%#p#%%'"
    ),
    probe="SELECT 1 FROM {tablespaces} LIMIT 1",
    privilege="PROCESS",
    grant="GRANT PROCESS ON *.* TO {account}",
    setting="innodb_file_per_table",
    setting_fix="SET GLOBAL innodb_file_per_table=ON (and in my.cnf); rebuild the tables "
    "created while it was OFF",
)
INNODB_TABLE_STATS = Source(
    key="innodb_table_stats",
    label="mysql.innodb_table_stats",
    gives="estimated rows, data and index size per partition, statistics age",
    loses="rows and sizes",
    sql=(
        "SELECT database_name, table_name, n_rows, clustered_index_size, "
        "sum_of_other_index_sizes, UNIX_TIMESTAMP(last_update) FROM mysql.innodb_table_stats "
        "WHERE (table_name LIKE '%%#P#%%' OR table_name LIKE '%%#p#%%')"
    ),
    probe="SELECT 1 FROM mysql.innodb_table_stats LIMIT 1",
    privilege="SELECT on mysql.innodb_table_stats",
    grant="GRANT SELECT ON mysql.innodb_table_stats TO {account}",
    setting="innodb_stats_persistent",
    setting_fix="SET GLOBAL innodb_stats_persistent=ON (and in my.cnf)",
)
FILE_IO = Source(
    key="file_io",
    label="performance_schema.file_summary_by_instance",
    gives="physical reads and writes per partition file (hotspots)",
    loses="per-partition I/O; hotspots fall back to row growth",
    sql=(
        f"SELECT FILE_NAME, {figures.columns(figures.FILE_IO)} "
        "FROM performance_schema.file_summary_by_instance "
        "WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_data_file' "
        "AND (FILE_NAME LIKE '%%#P#%%' OR FILE_NAME LIKE '%%#p#%%')"
    ),
    probe="SELECT 1 FROM performance_schema.file_summary_by_instance LIMIT 1",
    privilege="SELECT on performance_schema",
    grant="GRANT SELECT ON performance_schema.* TO {account}",
    setting="performance_schema",
    setting_fix="set performance_schema=ON under [mysqld] in my.cnf and restart (it is not "
    "dynamic; MariaDB ships with it OFF)",
    setting_required=True,
)
INNODB_CMP = Source(
    key="innodb_cmp",
    label="information_schema.INNODB_CMP",
    gives="compression counters per page size, server-wide",
    loses="compression counters",
    sql=(
        "SELECT page_size, compress_ops, compress_ops_ok, compress_time, uncompress_ops, "
        "uncompress_time FROM information_schema.INNODB_CMP"
    ),
    probe="SELECT 1 FROM information_schema.INNODB_CMP LIMIT 1",
    privilege="PROCESS",
    grant="GRANT PROCESS ON *.* TO {account}",
)
CMP_PER_INDEX = Source(
    key="cmp_per_index",
    label="information_schema.INNODB_CMP_PER_INDEX",
    gives="compression failure rate per table and partition",
    loses="per-partition compression failure rates",
    sql=(
        f"SELECT database_name, table_name, {figures.columns(figures.CMP_PER_INDEX)} "
        "FROM information_schema.INNODB_CMP_PER_INDEX "
        "WHERE table_name LIKE '%%#P#%%' OR table_name LIKE '%%#p#%%'"
    ),
    probe="SELECT 1 FROM information_schema.INNODB_CMP_PER_INDEX LIMIT 1",
    privilege="PROCESS",
    grant="GRANT PROCESS ON *.* TO {account}",
    setting="innodb_cmp_per_index_enabled",
    setting_fix="SET GLOBAL innodb_cmp_per_index_enabled=ON (and in my.cnf; costs some CPU)",
    setting_required=True,
    read_when="where ROW_FORMAT=COMPRESSED tables exist or innodb_cmp_per_index_enabled is ON",
)
TABLESTATS = Source(
    key="tablestats",
    label="{tablestats}",
    gives="rows modified since the last statistics refresh, AUTO_INCREMENT",
    loses="rows modified since the statistics",
    sql=(
        f"SELECT NAME, {figures.columns(figures.TABLESTATS)} FROM {{tablestats}} "
        "WHERE MODIFIED_COUNTER > 0 AND (NAME LIKE '%%#P#%%' OR NAME LIKE '%%#p#%%')"
    ),
    # No probe: even a LIMIT 1 read fills the whole table, which is what makes it costly:
    # InnoDB walks SYS_TABLES and loads every table missing from its dictionary cache
    # (pages of its partition files), whatever the WHERE clause says.
    privilege="PROCESS",
    grant="GRANT PROCESS ON *.* TO {account}",
    read_when="when rows changed since its last read and InnoDB's dictionary cache "
    "(table_definition_cache) holds every InnoDB table (PARTDASH_READ_TABLESTATS)",
)
# How many tables InnoDB's dictionary has (a partition is one), counted without loading
# any: a TABLESTATS read is free only when table_definition_cache holds them all.
DICTIONARY_TABLES_SQL = "SELECT COUNT(*) FROM {dictionary}"
DEFINITIONS = Source(
    key="definitions",
    label="information_schema.PARTITIONS",
    gives="partitioning method, expression, names, ordinals and bounds",
    loses="partition definitions",
    sql=(
        "SELECT PARTITION_NAME, SUBPARTITION_NAME, PARTITION_ORDINAL_POSITION, "
        "SUBPARTITION_ORDINAL_POSITION, PARTITION_METHOD, SUBPARTITION_METHOD, "
        "PARTITION_EXPRESSION, SUBPARTITION_EXPRESSION, PARTITION_DESCRIPTION "
        "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
        "AND PARTITION_NAME IS NOT NULL"
    ),
    # One named table: information_schema shows it only where the account has a privilege.
    probe=(
        "SELECT 1 FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s LIMIT 1"
    ),
    privilege="SHOW VIEW on each schema with partitioned tables",
    # SHOW VIEW makes the tables visible in information_schema and reads no data.
    grant="GRANT SHOW VIEW ON {schema}.* TO {account}",
    read_when="for new tables and tables whose partitions changed, one table at a time",
)
TABLE_OPTIONS_SQL = (
    "SELECT CREATE_OPTIONS FROM information_schema.TABLES "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)
# Not in SOURCES: what it gives is listed, not monitored (see sources/other_engines.py).
# Engines that keep their data on the server only: opening a SPIDER, FEDERATED, CONNECT or
# S3 table to count its partitions would reach another server.
OTHER_ENGINES = Source(
    key="other_engines",
    label="information_schema.TABLES and PARTITIONS (other engines)",
    gives="partitioned MyISAM, Aria, MEMORY... tables: partitions, rows, sizes (not monitored)",
    loses="the partitioned tables of other engines",
    sql=(
        "SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES "
        "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') "
        "AND ENGINE IN ('MyISAM', 'Aria', 'MEMORY', 'ARCHIVE', 'BLACKHOLE', 'ROCKSDB') "
        "AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"
    ),
    privilege=DEFINITIONS.privilege,
    grant=DEFINITIONS.grant,
    read_when="on a first poll and after CREATE, ALTER, DROP or RENAME TABLE",
)
OTHER_ENGINE_TOTALS_SQL = (
    "SELECT COUNT(*), SUM(TABLE_ROWS), SUM(DATA_LENGTH), SUM(INDEX_LENGTH) "
    "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
    "AND PARTITION_NAME IS NOT NULL"
)
SERVER_FACTS = Source(
    key="server_facts",
    label="SHOW GLOBAL VARIABLES / STATUS",
    gives="buffer pool, table caches, file limits, settings, Opened_tables and friends",
    loses="server settings",
    sql="SHOW GLOBAL {what} WHERE Variable_name IN ({names})",
)
# With the facts, in the same round trip: the server's clock and the account to GRANT to.
CLOCK_AND_ACCOUNT_SQL = "SELECT UNIX_TIMESTAMP(), CURRENT_USER()"

# Not per partition: one row per normalised statement (its digest), server-wide. The
# sample text (MySQL 8) holds the literals of one run: it is used in memory only, to
# EXPLAIN it where an operator opted the server in, never stored, logged or shown.
STATEMENTS = Source(
    key="statements",
    label="performance_schema.events_statements_summary_by_digest",
    gives="calls, rows examined and time per statement digest (which statements prune)",
    loses="which statements read every partition",
    sql=(
        "SELECT DIGEST, DIGEST_TEXT, SCHEMA_NAME, COUNT_STAR, SUM_ROWS_EXAMINED, "
        "SUM_TIMER_WAIT DIV 1000000, SUM_NO_INDEX_USED, UNIX_TIMESTAMP(FIRST_SEEN), "
        "UNIX_TIMESTAMP(LAST_SEEN), {sample_text} "
        "FROM performance_schema.events_statements_summary_by_digest "
        "WHERE DIGEST IS NOT NULL AND LAST_SEEN >= FROM_UNIXTIME(%s) "
        "ORDER BY SUM_TIMER_WAIT DESC LIMIT %s"
    ),
    probe="SELECT 1 FROM performance_schema.events_statements_summary_by_digest LIMIT 1",
    privilege=FILE_IO.privilege,
    grant=FILE_IO.grant,
    setting=FILE_IO.setting,
    setting_fix=FILE_IO.setting_fix,
    setting_required=True,
    read_when="at most every PARTDASH_STATEMENTS_EVERY_SECONDS (300 s) and on a server's "
    "first poll, with performance_schema and its statements_digest consumer ON",
)
# The consumer that fills the digest summary: ON by default where performance_schema is.
DIGEST_CONSUMER_SQL = (
    "SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'statements_digest'"
)
DIGEST_CONSUMER_FIX = (
    "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
    "WHERE NAME = 'statements_digest' (and performance-schema-consumer-statements-digest=ON "
    "under [mysqld] in my.cnf)"
)
# MariaDB keeps no sample text with the digest: the history of recent statements does,
# where its consumer is ON, and the current statements' it depends on (both OFF by
# default). "YES" where both are.
HISTORY_CONSUMER_SQL = (
    "SELECT IF(COUNT(*) = 2, 'YES', 'NO') FROM performance_schema.setup_consumers "
    "WHERE NAME IN ('events_statements_current', 'events_statements_history_long') "
    "AND ENABLED = 'YES'"
)


def consumer_shortfall() -> "Shortfall":
    """The statements_digest consumer is OFF: performance_schema keeps no digests."""
    return Shortfall(
        SETTING,
        (STATEMENTS.key,),
        f"the statements_digest consumer is OFF ({STATEMENTS.loses})",
        (DIGEST_CONSUMER_FIX,),
    )


# In the order the capability panel and Test connection list them.
SOURCES: tuple[Source, ...] = (
    TABLESPACES,
    INNODB_TABLE_STATS,
    FILE_IO,
    INNODB_CMP,
    CMP_PER_INDEX,
    TABLESTATS,
    DEFINITIONS,
    SERVER_FACTS,
    STATEMENTS,
)


# -- shortfalls --------------------------------------------------------------------------


@dataclass(frozen=True)
class Shortfall:
    """What could not be read, why, and how to fix it. `tables` lists every table
    concerned (schema, table), for the server page; `count` is how many."""

    cause: str
    sources: tuple[str, ...]
    message: str
    fixes: tuple[str, ...] = ()
    tables: tuple[tuple[str, str], ...] = ()
    count: int = 0

    @property
    def line(self) -> str:
        """One line: the message and the first few fixes."""
        if not self.fixes:
            return self.message
        shown = "; ".join(self.fixes[:SHOWN_PER_LINE])
        more = len(self.fixes) - SHOWN_PER_LINE
        return f"{self.message}: {shown}" + (f"; and {more} more" if more > 0 else "")

    def as_dict(self) -> dict:
        return {
            "cause": self.cause,
            "sources": list(self.sources),
            "message": self.message,
            "fixes": list(self.fixes),
            "line": self.line,
            "count": self.count,
            "tables": [list(table) for table in self.tables],
        }

    @classmethod
    def from_dict(cls, stored: dict | str) -> "Shortfall":
        """As stored on a snapshot; a plain string is what polls stored before causes."""
        if isinstance(stored, str):
            return cls(ERROR, (), stored)
        return cls(
            stored.get("cause", ERROR),
            tuple(stored.get("sources", ())),
            stored.get("message", ""),
            tuple(stored.get("fixes", ())),
            tuple(tuple(table) for table in stored.get("tables", ())),
            stored.get("count", 0),
        )


def privilege_shortfall(source: Source, account: str, dialect: Dialect) -> Shortfall:
    return Shortfall(
        PRIVILEGE,
        (source.key,),
        f"cannot read {source.name(dialect)} ({source.loses})",
        (source.grant_for(account),),
    )


def setting_shortfall(source: Source) -> Shortfall:
    return Shortfall(
        SETTING, (source.key,), f"{source.setting} is OFF ({source.loses})", (source.setting_fix,)
    )


def error_shortfall(source: Source, dialect: Dialect, reason: str) -> Shortfall:
    return Shortfall(ERROR, (source.key,), f"cannot read {source.name(dialect)}: {reason}")


def table_names(tables: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> str:
    """`a`.`t`, `a`.`u` and 3 more."""
    shown = ", ".join(qualified(*table) for table in tables[:SHOWN_PER_LINE])
    more = len(tables) - SHOWN_PER_LINE
    return shown + (f" and {more} more" if more > 0 else "")


def _in_schemas(schemas: list[str]) -> str:
    return f"in {len(schemas)} schemas" if len(schemas) > 1 else f"in {identifier(schemas[0])}"


def show_view_grants(schemas: list[str], account: str) -> tuple[str, ...]:
    return tuple(DEFINITIONS.grant_for(account, schema) for schema in schemas)


def hidden_shortfall(hidden: list[tuple[str, str]], listed: int, account: str) -> Shortfall:
    """Tables the cheap sources list but information_schema hides from the account: one
    GRANT per schema, the schema with most hidden tables first."""
    per_schema: dict[str, int] = {}
    for schema, _ in hidden:
        per_schema[schema] = per_schema.get(schema, 0) + 1
    schemas = sorted(per_schema, key=lambda schema: (-per_schema[schema], schema))
    return Shortfall(
        HIDDEN,
        (DEFINITIONS.key,),
        f"{len(hidden)} of {listed} partitioned tables "
        f"{'is' if len(hidden) == 1 else 'are'} not visible to the account, so "
        f"their partition definitions cannot be read ({_in_schemas(schemas)})",
        show_view_grants(schemas, account),
        tuple(sorted(hidden)),
        len(hidden),
    )


def hidden_schemas_shortfall(samples: list[tuple[str, str]], account: str) -> Shortfall:
    """What Test connection can tell cheaply: one hidden table looked up per schema."""
    schemas = [schema for schema, _ in samples]
    return Shortfall(
        HIDDEN,
        (DEFINITIONS.key,),
        f"partitioned tables {_in_schemas(schemas)} are not visible to the account, so "
        "their partition definitions cannot be read",
        show_view_grants(schemas, account),
        tuple(samples),
        len(samples),
    )


def tables_shortfall(cause: str, tables: list[tuple[str, str]], reason: str = "") -> Shortfall:
    """Tables dropped mid-poll, or whose definitions the server refused to give."""
    ordered = tuple(sorted(tables))
    if cause == DROPPED:
        message = (
            f"table {qualified(*ordered[0])} was dropped mid-poll"
            if len(ordered) == 1
            else f"{len(ordered)} tables were dropped mid-poll: {table_names(ordered)}"
        )
    else:
        which = qualified(*ordered[0]) if len(ordered) == 1 else f"{len(ordered)} tables"
        message = f"cannot read the partition definitions of {which}: {reason}"
    return Shortfall(cause, (DEFINITIONS.key,), message, (), ordered, len(ordered))


def grouped(shortfalls: list[Shortfall]) -> list[Shortfall]:
    """One shortfall per distinct fix: the sources one GRANT fixes (PROCESS for the
    tablespaces and the compression counters) share one line."""
    merged: dict[object, Shortfall] = {}
    for shortfall in shortfalls:
        key = (shortfall.cause, shortfall.fixes) if shortfall.fixes else id(shortfall)
        first = merged.get(key)
        merged[key] = (
            shortfall
            if first is None
            else Shortfall(
                first.cause,
                first.sources + shortfall.sources,
                _joined(first.message, shortfall.message),
                first.fixes,
            )
        )
    return list(merged.values())


def _joined(first: str, other: str) -> str:
    """`cannot read A (x)` and `cannot read B (y)` -> `cannot read A (x), B (y)`;
    `S is OFF (x)` and `S is OFF (y)` -> `S is OFF (x; y)`."""
    prefix = "cannot read "
    if first.startswith(prefix) and other.startswith(prefix):
        return f"{first}, {other.removeprefix(prefix)}"
    setting, _, lost = other.partition(" is OFF (")
    if lost and first.startswith(f"{setting} is OFF (") and first.endswith(")"):
        return f"{first[:-1]}; {lost}"
    return f"{first}; {other}"


# -- one source's state, for Test connection and the capability panel -------------------

# Shortfalls that say a source cannot give what it should; a table dropped mid-poll or
# definitions left for the next poll are events of one poll, not a source's state.
STATE_CAUSES = (PRIVILEGE, SETTING, HIDDEN, ERROR)


@dataclass
class SourceState:
    """How one source stands on one server: read (or readable), not used there (and
    why), or what stops it and the fixes."""

    source: Source
    label: str
    used: bool
    read: bool
    shortfalls: list[Shortfall] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.shortfalls and (self.read or not self.used)

    @property
    def state(self) -> str:
        if not self.used and not self.shortfalls:
            return "unused"
        if self.ok:
            return "ok"
        return "partial" if self.read else "missing"

    @property
    def fixes(self) -> list[str]:
        return list(dict.fromkeys(fix for s in self.shortfalls for fix in s.fixes))

    @property
    def detail(self) -> str:
        if self.shortfalls:
            return "; ".join(shortfall.message for shortfall in self.shortfalls)
        if not self.used:
            return f"not read here: read {self.source.read_when}"
        return "" if self.read else "could not be read (see the poll's warnings)"

    def as_dict(self) -> dict:
        needs = [self.source.privilege]
        needs.append(f"{self.source.setting}=ON" if self.source.setting else "")
        return {
            "source": self.source.key,
            "name": self.label,
            "gives": self.source.gives,
            "needs": " and ".join(need for need in needs if need) or "nothing",
            "state": self.state,
            "ok": self.ok,
            "causes": list(dict.fromkeys(s.cause for s in self.shortfalls)),
            "detail": self.detail,
            "fixes": self.fixes,
            "fix": "; ".join(self.fixes),
        }


ALWAYS_READ = (DEFINITIONS.key, SERVER_FACTS.key)  # read whenever needed, not listed in `read`


def source_states(
    read: dict[str, bool], shortfalls: list[Shortfall], dialect: Dialect
) -> list[SourceState]:
    """Every source's state from what was read (`read`: key -> read; a source absent
    from it was not used) and what could not be (`shortfalls`, naming their sources)."""
    states = []
    for source in SOURCES:
        used = source.key in ALWAYS_READ or source.key in read
        mine = [s for s in shortfalls if source.key in s.sources and s.cause in STATE_CAUSES]
        readable = source.key in ALWAYS_READ or read.get(source.key, False)
        states.append(SourceState(source, source.name(dialect), used, readable, mine))
    return states
