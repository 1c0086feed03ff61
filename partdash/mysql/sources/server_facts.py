"""Server-level facts: the settings and status counters the health checks need."""

from dataclasses import dataclass, field
from typing import cast

from partdash.lib.quoting import account
from partdash.mysql import ddl
from partdash.mysql.catalogue import CLOCK_AND_ACCOUNT_SQL, SERVER_FACTS
from partdash.mysql.connection import Session

VARIABLES = (
    "innodb_buffer_pool_size",
    "table_open_cache",
    "table_definition_cache",
    "open_files_limit",
    "innodb_file_per_table",
    "performance_schema",
    "innodb_cmp_per_index_enabled",
    "innodb_stats_persistent",
    # Whether InnoDB recalculates statistics itself: rows changed make them stale only
    # where it does not (partdash.health.pressure.recalculates_statistics).
    "innodb_stats_auto_recalc",
    "innodb_page_size",
    "lower_case_table_names",
)
STATUS = (
    "Opened_tables",
    "Open_tables",
    "Performance_schema_file_handles_lost",
    "Performance_schema_file_instances_lost",
    "Uptime",
    *ddl.STATUS,
    # Rows written, updated and deleted through any table's handler (MariaDB counts its
    # internal temporary tables apart, as Handler_tmp_*; it has no Innodb_rows_* since
    # 10.6): while these stand still, no partition's MODIFIED_COUNTER can move, InnoDB
    # moving it only from the handler's write, update and delete (see `tablestats`).
    "Handler_write",
    "Handler_update",
    "Handler_delete",
)


@dataclass
class ServerFacts:
    """What one poll learnt about the server as a whole."""

    variables: dict[str, str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    clock: int | None = None  # the server's UNIX_TIMESTAMP() when the poll began
    account: str = ""  # CURRENT_USER(), quoted for a GRANT: 'partdash'@'%'

    def is_on(self, name: str) -> bool:
        return self.variables.get(name, "").upper() in ("ON", "1")

    def number(self, name: str, default: int = 0) -> int:
        value = self.variables.get(name, self.status.get(name.lower(), ""))
        return int(value) if str(value).isdigit() else default

    @property
    def page_size(self) -> int:
        return self.number("innodb_page_size", 16384)

    @property
    def row_writes(self) -> tuple[str, ...] | None:
        """The server's counts of rows written, updated and deleted (None: not shown)."""
        names = ("handler_write", "handler_update", "handler_delete")
        counts = tuple(self.status.get(name) for name in names)
        return None if None in counts else cast(tuple[str, ...], counts)


def _show(session: Session, what: str, names: tuple[str, ...]) -> dict[str, str]:
    sql = SERVER_FACTS.sql.format(what=what, names=", ".join(["%s"] * len(names)))
    return {name.lower(): value for name, value in session.rows(sql, names)}


def read(session: Session) -> ServerFacts:
    status = _show(session, "STATUS", STATUS)
    ((clock, current_user),) = session.rows(CLOCK_AND_ACCOUNT_SQL)
    return ServerFacts(
        variables=_show(session, "VARIABLES", VARIABLES),
        status=status,
        clock=int(clock),
        account=account(current_user),
    )
