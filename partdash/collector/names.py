"""Partition names as InnoDB spells them in its statistics, tablespaces and file paths.

`orders#P#p3` (MySQL 5.7, MariaDB) or `orders#p#p3` (MySQL 8), with `#SP#`/`#sp#` for a
subpartition; tablespaces and files use the filename encoding (`Weird$Name` is
`Weird@0024Name`). Everything is matched case-insensitively through `PartitionKey`.
"""

import re
from typing import NamedTuple

_PARTITION = re.compile(r"^(?P<table>.+?)#p#(?P<partition>.+?)(?:#sp#(?P<sub>.+))?$", re.I)
_ENCODED = re.compile(r"@([0-9a-fA-F]{4})")


class PartitionKey(NamedTuple):
    """A partition's identity on one server, lower-cased for matching."""

    schema: str
    table: str
    partition: str
    subpartition: str = ""

    @property
    def table_key(self) -> tuple[str, str]:
        return (self.schema, self.table)


class PartitionName(NamedTuple):
    """A partition's names as the server spells them (for display)."""

    schema: str
    table: str
    partition: str
    subpartition: str = ""

    @property
    def key(self) -> PartitionKey:
        return PartitionKey(
            self.schema.lower(),
            self.table.lower(),
            self.partition.lower(),
            self.subpartition.lower(),
        )


def decode_filename(name: str) -> str:
    """Undo MySQL's filename encoding of identifiers (`@0024` is `$`)."""
    if "@" not in name:
        return name
    return _ENCODED.sub(lambda match: chr(int(match[1], 16)), name)


def split_partition(schema: str, name: str) -> PartitionName | None:
    """`orders#P#p3#SP#p3sp0` in `schema` -> its names; None for a plain table."""
    match = _PARTITION.match(name)
    if match is None:
        return None
    return PartitionName(schema, match["table"], match["partition"], match["sub"] or "")


def split_tablespace(name: str) -> PartitionName | None:
    """`shop/orders#P#p3` (encoded) -> its names; None for other tablespaces."""
    schema, slash, table = decode_filename(name).partition("/")
    return split_partition(schema, table) if slash else None


def identity(name: PartitionName) -> tuple[PartitionKey, str, str]:
    """A partition's key, file path key and `partition#subpartition` slot (how the store
    names it within its table)."""
    key = name.key
    return key, path_key(key), f"{key.partition}#{key.subpartition}"


def path_key(key: PartitionKey) -> str:
    """`shop/orders#p#p3` (lower-cased): how a partition's file is named, decoded."""
    base = f"{key.schema}/{key.table}#p#{key.partition}"
    return f"{base}#sp#{key.subpartition}" if key.subpartition else base


def file_path_key(path: str) -> str | None:
    """`/var/lib/mysql/shop/orders#P#p3.ibd` -> `shop/orders#p#p3`, with string work only:
    per-partition files are matched to partitions by this key, not parsed."""
    if path[-4:].lower() != ".ibd":
        return None
    parts = path[:-4].replace("\\", "/").rsplit("/", 2)
    if len(parts) < 2:
        return None
    return decode_filename(f"{parts[-2]}/{parts[-1]}").lower()
