"""Server-level facts: the settings and status counters health checks need."""

import re
from dataclasses import dataclass, field

from partdash.servers.connection import Session

VARIABLES = (
    "innodb_buffer_pool_size",
    "table_open_cache",
    "table_definition_cache",
    "open_files_limit",
    "innodb_file_per_table",
    "performance_schema",
    "innodb_cmp_per_index_enabled",
    "innodb_stats_persistent",
    "innodb_page_size",
)
STATUS = ("Opened_tables", "Open_tables", "Performance_schema_file_instances_lost", "Uptime")

# `orders#P#p3`, `orders#p#p3#sp#p3sp0`: a partition's entry in the InnoDB statistics.
PARTITION_NAME = re.compile(r"^(?P<table>.+?)#p#(?P<partition>.+)$", re.IGNORECASE)


@dataclass
class ServerFacts:
    """What one poll learnt about the server as a whole."""

    variables: dict[str, str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)

    def is_on(self, name: str) -> bool:
        return self.variables.get(name, "").upper() in ("ON", "1")


def _show(session: Session, what: str, names: tuple[str, ...]) -> dict[str, str]:
    placeholders = ", ".join(["%s"] * len(names))
    rows = session.rows(f"SHOW GLOBAL {what} WHERE Variable_name IN ({placeholders})", names)
    return {name.lower(): value for name, value in rows}


def read_facts(session: Session) -> ServerFacts:
    status = _show(session, "STATUS", STATUS)
    return ServerFacts(variables=_show(session, "VARIABLES", VARIABLES), status=status)


def count_partitions(session: Session) -> tuple[int, int]:
    """(partitioned tables, partitions) from the InnoDB persistent statistics, which
    list one row per partition without opening any table."""
    names = session.rows("SELECT database_name, table_name FROM mysql.innodb_table_stats")
    tables = set()
    partitions = 0
    for schema, name in names:
        match = PARTITION_NAME.match(name)
        if match:
            tables.add((schema, match["table"]))
            partitions += 1
    return len(tables), partitions
