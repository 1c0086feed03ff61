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
    """The partitions' files. What repeats from row to row (sizes of small files, page
    sizes, row formats) is held once: a poll's memory keeps these rows, and PyMySQL reads
    each value of each row as an object of its own (3-4 MB per 32,000 partitions)."""
    files: list[PartitionFile] = []
    sizes: dict[int, int] = {}
    formats: dict[str, str] = {}
    for name, space, file_size, allocated, page_size, zip_size, row_format in rows:
        parsed = split_tablespace(name)
        if parsed is not None:
            file_size, allocated, row_format = file_size or 0, allocated or 0, row_format or ""
            physical_page = int(zip_size or 0) or int(page_size or 0)
            files.append(
                PartitionFile(
                    parsed,
                    space,
                    sizes.setdefault(file_size, file_size),
                    sizes.setdefault(allocated, allocated),
                    sizes.setdefault(physical_page, physical_page),
                    formats.setdefault(row_format, row_format),
                )
            )
    return files


def read(session: Session, dialect: Dialect) -> list[PartitionFile]:
    try:
        return parse(session.rows(sql(dialect)))
    except pymysql.MySQLError as exc:
        raise unavailable(TABLESPACES, exc) from None
