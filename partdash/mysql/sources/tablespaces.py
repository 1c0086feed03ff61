"""File sizes per partition from InnoDB's tablespace list: apparent size, blocks really
allocated (the page-compression saving), page size and row format. Needs PROCESS
(`catalogue.TABLESPACES`)."""

from typing import NamedTuple

import pymysql

from partdash.mysql.catalogue import TABLESPACES
from partdash.mysql.connection import Session
from partdash.mysql.dialects import Dialect
from partdash.mysql.names import PartitionName, split_tablespace
from partdash.mysql.sources import unavailable


class PartitionFile(NamedTuple):
    name: PartitionName
    space_id: int
    file_bytes: int
    allocated_bytes: int
    page_size: int
    row_format: str


def sql(dialect: Dialect) -> str:
    return TABLESPACES.query(dialect)


def parse(rows) -> list[PartitionFile]:
    files = []
    for name, space, file_size, allocated, page_size, zip_size, row_format in rows:
        parsed = split_tablespace(name)
        if parsed is not None:
            physical_page = int(zip_size or 0) or int(page_size or 0)
            files.append(
                PartitionFile(
                    parsed, space, file_size or 0, allocated or 0, physical_page, row_format or ""
                )
            )
    return files


def read(session: Session, dialect: Dialect) -> list[PartitionFile]:
    try:
        return parse(session.rows(sql(dialect)))
    except pymysql.MySQLError as exc:
        raise unavailable(TABLESPACES, exc) from None
