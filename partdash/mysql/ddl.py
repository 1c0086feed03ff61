"""Whether DDL since the previous poll may have changed a table's partition definitions
without moving any of its files, which the tables' signatures cannot show.

A table's definitions are read again when its signature (partition names and tablespace
ids) changes; most partition DDL moves a file. Some does not: renaming a column that the
partitioning expression names is instant (measured on MariaDB 10.11: `RENAME COLUMN a TO
c` turns PARTITION_EXPRESSION `a` into `c`, same tablespaces, same table ids), and
partitions without a tablespace of their own (innodb_file_per_table=OFF) keep their
empty signature through any rebuild. Only ALTER TABLE makes such a change, and the
server counts those statements (`Com_alter_table`) in the status the poll reads anyway,
so the witness costs no query.

When that count moved by more than the tables whose signatures changed (each ALTER
changes at most one table, so then some ALTER moved no file, or touched a table that is
not partitioned), every table's definitions are read again. A partition maintenance job
(ADD, DROP, REORGANIZE PARTITION: each moves files of the one table it alters) costs no
more than before. The count can also be made to look explained, rarely: a statement
that is not an ALTER changes a table's files in the same interval (TRUNCATE, CREATE OR
REPLACE and OPTIMIZE are subtracted or distrusted below; a partition the server adds
itself, SYSTEM_TIME ... AUTO, is not counted), or an ALTER counted at the previous poll
finishes in this one (the server counts a statement when it starts).
"""

ALTERS = "com_alter_table"
# Statements that change the files of at most one existing table each, or of any number
# (then the changed signatures cannot vouch for any ALTER).
ONE_TABLE_EACH = ("com_truncate", "com_create_table")
ANY_NUMBER = ("com_rename_table", "com_optimize")
# Statements that create, drop or rename tables, or change their engine or partitioning.
TABLE_DDL = ("com_create_table", "com_alter_table", "com_drop_table", "com_rename_table")
# And what else adds tables to InnoDB's dictionary or takes them away: a FULLTEXT index's
# auxiliary tables come with CREATE INDEX and go with DROP INDEX.
DICTIONARY_DDL = (*TABLE_DDL, "com_create_index", "com_drop_index")
STATUS = (
    "Com_alter_table",
    "Com_truncate",
    "Com_create_table",
    "Com_rename_table",
    "Com_optimize",
    "Com_drop_table",
    "Com_create_index",
    "Com_drop_index",
)


def _count(status: dict, name: str) -> int | None:
    value = status.get(name)
    return int(str(value)) if str(value).isdigit() else None


def altered_since(before: dict | None, now: dict) -> bool:
    """Whether an ALTER TABLE may have run since the previous poll (its count moved, or
    cannot be compared)."""
    old, new = _count(before or {}, ALTERS), _count(now, ALTERS)
    return old is None or new is None or old != new


def definitions_may_have_moved(before: dict | None, now: dict, changed: int) -> bool:
    """Whether some table's definitions may have changed unseen since the previous poll
    (status `before`, as stored with it), given `now` (this poll's status) and how many
    tables known before have a changed signature. No previous status with the counters
    (a first poll, a poll by an older partdash): no."""
    if not before or _count(before, ALTERS) is None or _count(now, ALTERS) is None:
        return False
    deltas = {}
    for name in (ALTERS, *ONE_TABLE_EACH, *ANY_NUMBER, "uptime"):
        old, new = _count(before, name), _count(now, name)
        deltas[name] = None if old is None or new is None else new - old
    if any(delta is not None and delta < 0 for delta in deltas.values()):
        return True  # a restart or FLUSH STATUS: the ALTERs in between are unknown
    alters = deltas[ALTERS]
    if not alters:
        return False
    if any(deltas[name] for name in ANY_NUMBER):
        return True
    explained = changed - sum(deltas[name] or 0 for name in ONE_TABLE_EACH)
    return alters > explained


def tables_may_have_changed(
    before: dict | None, now: dict, statements: tuple[str, ...] = TABLE_DDL
) -> bool:
    """Whether a table may have been created, dropped, renamed or altered since the
    previous poll (or that cannot be told: a first poll, a restart); with
    `DICTIONARY_DDL`, whether InnoDB's dictionary may have gained or lost a table."""
    for name in (*statements, "uptime"):
        old, new = _count(before or {}, name), _count(now, name)
        if old is None or new is None or (old != new if name != "uptime" else new < old):
            return True
    return False
