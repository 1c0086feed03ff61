"""Partition names as InnoDB spells them in its statistics, tablespaces and file paths.

`orders#P#p3` (MySQL 5.7, MariaDB) or `orders#p#p3` (MySQL 8), with `#SP#`/`#sp#` for a
subpartition. Tablespace names and file paths write each name in MySQL's filename
encoding (`café` is `caf@0p`, `a#b` is `a@0023b`), so the `#P#` separators there are the
only `#`: they are split first, then each name is decoded. The statistics tables
(`mysql.innodb_table_stats`, `INNODB_CMP_PER_INDEX`) hold the names decoded, `#` and
all, so a table named `a#P#b` makes `a#P#b#P#p0` ambiguous there; the partitions the
tablespace list names settle it (`split_partition`'s `known`).

Matching follows the server: schema and table names exactly (on Linux, with
lower_case_table_names=0, `É` and `é` are two tables; with 1 every source spells them in
lower case alike), partition names without regard to case (`p0` and `P0` are one name,
and MySQL 8 lower-cases them in file names).
"""

import re
from collections.abc import Container
from sys import intern
from typing import NamedTuple

from partdash.mysql.filename_charset import DECODE, ENCODE


def fold(name: str) -> str:
    """A partition name's matching form: each character lower-cased on its own, as the
    server compares identifiers (not `str.lower`, whose final sigma makes `ΟΔΟΣ` and
    `οδοσ` differ; not `casefold`, which makes the distinct `pß` and `pss` equal)."""
    if name.isascii():
        return intern(name.lower())  # (one string per name: p0 is in every table)
    return "".join([char.lower()[0] for char in name])


class PartitionKey(NamedTuple):
    """A partition's identity on one server: schema and table exact, partition folded."""

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
        return PartitionKey(self.schema, self.table, fold(self.partition), fold(self.subpartition))


NAME_CHARS = 64  # MySQL's longest identifier (NAME_CHAR_LEN), and partdash's columns


def clipped(name: PartitionName) -> PartitionName:
    """`name` with each part cut to NAME_CHARS: no server makes a longer identifier, but a
    hostile one may send one, and PostgreSQL refuses it for a 64-character column."""
    return PartitionName(*(part[:NAME_CHARS] for part in name))


# -- MySQL's filename encoding -----------------------------------------------------------

_PLAIN = re.compile(r"[0-9A-Za-z_]*")
# What the server decodes: safe ASCII, `@` and four lower-case hex digits, `@` and a code
# from the table. No code in the table is made of two hex digits, so trying the hex form
# first reads every name as the server does (it tries the table first).
_ENCODED = re.compile(r"(?:[0-9A-Za-z_]+|@[0-9a-f]{4}|@[0-\x7f]{2})*")
_ESCAPE = re.compile(r"@([0-9a-f]{4}|[0-\x7f]{2})")
# The server names a file it cannot decode `#mysql50#` + the file name (a name from
# MySQL 5.0), and its own temporary tables' files `#sql...`, left as they are.
MYSQL50_PREFIX = "#mysql50#"
TEMPORARY_PREFIX = "#sql"


def _unescape(match: re.Match) -> str:
    code = match[1]
    if len(code) == 4:
        return chr(int(code, 16))
    return DECODE[code]  # KeyError: not a code the server knows


def decode_filename(name: str) -> str:
    """One identifier from its filename encoding (`caf@0p` -> `café`), as the server's
    `filename_to_tablename` reads it."""
    if "@" not in name and _PLAIN.fullmatch(name):
        return name
    if name.startswith(TEMPORARY_PREFIX):
        return name
    if _ENCODED.fullmatch(name):
        try:
            return _ESCAPE.sub(_unescape, name)
        except KeyError:
            pass
    return MYSQL50_PREFIX + name


def encode_filename(name: str) -> str:
    """One identifier in the filename encoding (`café` -> `caf@0p`), as the server writes
    it (identifiers hold characters of the Basic Multilingual Plane only)."""
    if _PLAIN.fullmatch(name):
        return name
    return "".join(
        char
        if char.isascii() and (char.isalnum() or char == "_")
        else f"@{ENCODE.get(char) or format(ord(char), '04x')}"
        for char in name
    )


# -- splitting partition names -------------------------------------------------------------

# In a tablespace or file name, encoded: every `#` is a separator. A trailing `#TMP#` or
# `#REN#` (partitions being reorganised) or a leading `#` (`#sql-...`, a table being
# altered) fails the match: those are the server's scratch files, not partitions.
_ENCODED_PARTITION = re.compile(r"([^#]+)#[Pp]#([^#]+)(?:#[Ss][Pp]#([^#]+))?")
_PLAIN_PARTITION = re.compile(r"(\w+)#[Pp]#(\w+)(?:#[Ss][Pp]#(\w+))?", re.ASCII)
_PARTITION_SEPARATOR = re.compile(r"(?=#p#)", re.I)
_SUBPARTITION_SEPARATOR = re.compile(r"(?=#sp#)", re.I)
_SCRATCH_SUFFIX = re.compile(r"#(?:tmp|ren)#$", re.I)


def split_tablespace(name: str) -> PartitionName | None:
    """`shop/orders#P#p3` (encoded) -> its names; None for other tablespaces."""
    schema, slash, table = name.partition("/")
    if not slash:
        return None
    return _split_encoded(schema, table)


def _split_encoded(schema: str, table: str) -> PartitionName | None:
    if _PLAIN.fullmatch(schema) and (plain := _PLAIN_PARTITION.fullmatch(table)):
        # Nothing to decode: most names. One string per name, for every partition that
        # has it (a poll memory holds 64,000 of them).
        return PartitionName(intern(schema), *map(intern, plain.groups("")))
    match = _ENCODED_PARTITION.fullmatch(table)
    if match is None:
        return None
    table, partition, sub = match.groups()
    return PartitionName(
        decode_filename(schema),
        decode_filename(table),
        decode_filename(partition),
        decode_filename(sub) if sub else "",
    )


def split_partition(
    schema: str, name: str, known: Container[PartitionKey] = ()
) -> PartitionName | None:
    """`orders#P#p3#SP#p3sp0` (decoded, as the statistics tables hold it) in `schema` ->
    its names; None for a plain table. Where a name holds `#P#` itself, the reading whose
    key is in `known` wins, else the one with the longest table name (tables are named by
    people, partitions mostly `p0`, `p2026`...)."""
    if name.count("#") == 2:  # the usual `table#P#partition`
        table, _, partition = name.partition("#")
        partition = partition[2:]
        if name[len(table) + 1] in "Pp" and name[len(table) + 2] == "#" and table and partition:
            return PartitionName(schema, table, partition)
        return None
    readings = _readings(schema, name)
    for reading in readings:
        if reading.key in known:
            return reading
    return readings[0] if readings else None


def _readings(schema: str, name: str) -> list[PartitionName]:
    """Every way to read `name` as table#P#partition[#SP#subpartition], longest table
    first, then with a subpartition before without."""
    readings = []
    for split in reversed([m.start() for m in _PARTITION_SEPARATOR.finditer(name)]):
        table, rest = name[:split], name[split + 3 :]
        if not table or not rest or _SCRATCH_SUFFIX.search(rest):
            continue
        for sub_split in reversed([m.start() for m in _SUBPARTITION_SEPARATOR.finditer(rest)]):
            partition, sub = rest[:sub_split], rest[sub_split + 4 :]
            if partition and sub:
                readings.append(PartitionName(schema, table, partition, sub))
        readings.append(PartitionName(schema, table, rest))
    return readings


# -- keys --------------------------------------------------------------------------------


def identity(name: PartitionName) -> tuple[PartitionKey, str, str]:
    """A partition's key, file path key and `partition#subpartition` slot (how the store
    names it within its table)."""
    key = name.key
    return key, intern(path_key(key)), intern(f"{key.partition}#{key.subpartition}")


def path_key(key: PartitionKey) -> str:
    """A partition's key as one string, for matching its file (`file_path_key`). NUL
    joins the names: no identifier may hold it, while `/` and `#p#` may."""
    return "\0".join(key)


def file_path_key(path: str) -> str | None:
    """`/var/lib/mysql/shop/orders#P#p3.ibd` -> the `path_key` of shop.orders p3; None
    for a file that is not a partition's."""
    if path[-4:].lower() != ".ibd":
        return None
    parts = path[:-4].replace("\\", "/").rsplit("/", 2)
    if len(parts) < 2:
        return None
    schema, table = parts[-2], parts[-1]
    # Read once per partition file and poll: the usual plain name takes a short cut.
    if _PLAIN.fullmatch(schema) and (plain := _PLAIN_PARTITION.fullmatch(table)):
        table, partition, sub = plain.groups("")
        return intern(f"{schema}\0{table}\0{partition.lower()}\0{sub.lower()}")
    name = _split_encoded(schema, table)
    return path_key(name.key) if name is not None else None
