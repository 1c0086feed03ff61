"""Where MySQL 5.7, MySQL 8.0/8.4 and MariaDB differ, in one place.

Every source module asks its `Dialect` for table and column names instead of testing the
flavour itself.
"""

import re
from dataclasses import dataclass

from partdash.mysql.choices import Flavor


@dataclass(frozen=True)
class Dialect:
    """The SQL spelling of partdash's sources on one server version."""

    name: str
    tablespaces_table: str
    tablestats_table: str
    # Column giving a compressed tablespace's physical page size (None: PAGE_SIZE says it).
    zip_page_size_column: str | None
    # Lists InnoDB's tables (a partition is one) without loading them into the
    # dictionary cache: what tells whether that cache can hold them all.
    dictionary_table: str = "information_schema.INNODB_SYS_TABLES"
    has_autoinc: bool = True
    # events_statements_summary_by_digest has QUERY_SAMPLE_TEXT (MySQL 8.0.3 and later).
    has_sample_text: bool = False


MARIADB = Dialect(
    name="mariadb",
    tablespaces_table="information_schema.INNODB_SYS_TABLESPACES",
    tablestats_table="information_schema.INNODB_SYS_TABLESTATS",
    zip_page_size_column=None,  # 10.6+ dropped ZIP_PAGE_SIZE; PAGE_SIZE is the zip size
)
MARIADB_OLD = Dialect(
    name="mariadb<10.6",
    tablespaces_table="information_schema.INNODB_SYS_TABLESPACES",
    tablestats_table="information_schema.INNODB_SYS_TABLESTATS",
    zip_page_size_column="ZIP_PAGE_SIZE",
)
MYSQL57 = Dialect(
    name="mysql5.7",
    tablespaces_table="information_schema.INNODB_SYS_TABLESPACES",
    tablestats_table="information_schema.INNODB_SYS_TABLESTATS",
    zip_page_size_column="ZIP_PAGE_SIZE",
)
MYSQL8 = Dialect(
    name="mysql8",
    tablespaces_table="information_schema.INNODB_TABLESPACES",
    tablestats_table="information_schema.INNODB_TABLESTATS",
    zip_page_size_column="ZIP_PAGE_SIZE",
    # The data dictionary's tablespaces (one per table or partition with a file of its
    # own): read by every poll already, so known not to load tables.
    dictionary_table="information_schema.INNODB_TABLESPACES",
    has_sample_text=True,
)

_VERSION = re.compile(r"(\d+)\.(\d+)")


def dialect_for(flavor: str, version: str) -> Dialect:
    match = _VERSION.search(version.removeprefix("5.5.5-"))
    major, minor = (int(match[1]), int(match[2])) if match else (0, 0)
    if flavor == Flavor.MARIADB:
        return MARIADB if (major, minor) >= (10, 6) else MARIADB_OLD
    return MYSQL8 if major >= 8 else MYSQL57
