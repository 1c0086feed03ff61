"""Statement digests stored per partitioned table, with whether they prune.

A poll that read the digests (`collector.collect`, at most every
PARTDASH_STATEMENTS_EVERY_SECONDS) hands them here: each digest is matched to the
server's partitioned tables by the names its text quotes (a cheap prefilter), then
judged against each table's layout by parsing (`health.pruning.judge`), or counted from
the server's EXPLAIN where the poll ran one (`how: explained`). One row per (table,
digest), its counters overwritten by the newest read (they are cumulative on the server).
"""

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.utils import timezone

from partdash.health import pruning
from partdash.health.pruning import Layout, StatementVerdict, Verdict, judge
from partdash.metrics.models import (
    Partition,
    PartitionedTable,
    StatementDigest,
    StatementRead,
)
from partdash.mysql.names import fold
from partdash.mysql.sources.explain import PlanRead
from partdash.mysql.sources.statements import Digest, quoted_names

Prunes = StatementDigest.Prunes
# A digest's first word, where it may read rows (DDL, SET, SHOW... are not judged).
STATEMENTS_THAT_READ = frozenset({"SELECT", "WITH", "UPDATE", "DELETE", "INSERT", "REPLACE"})
NOT_A_READ = "not a read"  # `judge`'s why for statements that read no rows
# Worst first: those reading every partition, then those partdash cannot tell, then the
# rest; the costliest first within each.
RANK = {Prunes.ALL: 0, Prunes.UNKNOWN: 1, Prunes.SOME: 2, Prunes.ONE: 3}


def since(server) -> int | None:
    """The server clock from which its digests are read this poll: 0 on its first read,
    the last read's watermark once PARTDASH_STATEMENTS_EVERY_SECONDS have passed, else
    None (not due)."""
    last = StatementRead.objects.filter(server=server).first()
    if last is None:
        return 0
    if not _elapsed(last):
        return None
    return last.watermark or 0


def _elapsed(last: StatementRead) -> bool:
    every = timedelta(seconds=settings.PARTDASH_STATEMENTS_EVERY_SECONDS)
    return timezone.now() - last.read_at >= every


def layout_of(table: PartitionedTable, partitions: Iterable[tuple[str, str | None]]) -> Layout:
    """A stored table's layout, as `health.pruning` judges statements against, from its
    live partitions' (name, description) in ordinal order (a subpartition each)."""
    names: dict[str, str | None] = {}
    per_partition: dict[str, int] = defaultdict(int)
    for name, description in partitions:
        names.setdefault(name, description)
        per_partition[name] += 1
    return Layout(
        schema=table.schema,
        table=table.name,
        method=table.method.upper(),
        expression=table.expression,
        partitions=tuple(names.items()),
        subpartition_method=table.subpartition_method.upper() or None,
        subpartition_expression=table.subpartition_expression or None,
        subpartitions_per_partition=max(per_partition.values(), default=1)
        if table.subpartition_method
        else 1,
    )


TABLE_FIELDS: tuple[str, ...] = ("id", "schema", "name", "method", "expression", "layout")
TABLE_FIELDS += ("subpartition_method", "subpartition_expression")


class Tables:
    """The server's live partitioned tables by folded name (their layouts, `layouts_of`,
    read only for the tables with a digest to judge)."""

    def __init__(self, server) -> None:
        self.by_name: dict[str, list[PartitionedTable]] = defaultdict(list)
        tables = PartitionedTable.objects.live().filter(server=server).exclude(method="")
        for table in tables.only(*TABLE_FIELDS):
            self.by_name[fold(table.name)].append(table)

    def named_in(self, text: str, schema: str | None) -> list[PartitionedTable]:
        """The tables the text names: by a quoted name, in a schema it also names or
        the digest's default schema."""
        quoted = quoted_names(text)
        folded_schema = fold(schema) if schema else None
        return [
            table
            for name in quoted & self.by_name.keys()
            for table in self.by_name[name]
            if fold(table.schema) in quoted or fold(table.schema) == folded_schema
        ]

    def layouts_of(self, tables: list[PartitionedTable]) -> dict[int, Layout]:
        """The layouts of `tables`, their partitions read in one query (only the tables
        with a digest to judge: 64,000 partitions read each time cost a second)."""
        wanted = {table.pk: table for table in tables}
        by_table: dict[int, list[tuple[str, str | None]]] = defaultdict(list)
        live = Partition.objects.live().filter(table_id__in=list(wanted))
        ordered = live.order_by("table_id", "ordinal", "subpartition_ordinal")
        for table_id, name, description in ordered.values_list("table_id", "name", "description"):
            by_table[table_id].append((name, description))
        return {pk: layout_of(table, by_table[pk]) for pk, table in wanted.items()}


def may_read(text: str) -> bool:
    """Whether a digest can read rows (a cheap look at its first word: DDL, SET, SHOW...
    cannot, and are not judged)."""
    words = text.lstrip(" (").split(None, 1)
    return bool(words) and words[0].upper() in STATEMENTS_THAT_READ


def explained(verdict: Verdict, plan: list[PlanRead] | None, table, schema) -> Verdict | None:
    """The verdict with EXPLAIN's count, where the plan read `table`."""
    for read in plan or ():
        same_schema = fold(read.schema or schema or "") == fold(table.schema)
        if fold(read.table) == fold(table.name) and same_schema:
            total = verdict.partitions_total
            count = min(read.partitions, total)
            prunes: pruning.Prunes = "all" if count >= total else "one" if count <= 1 else "some"
            return Verdict(prunes, count, total, "EXPLAIN", verdict.filters_on)
    return None


def _at(epoch: int) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch else None


# The digests that read nothing of a table (INSERT ... SELECT from another), per table
# layout: not stored, so without this each read would judge them again (this process's).
READ_NOTHING: set[tuple[str, int, str]] = set()
READ_NOTHING_MAX = 100_000
COUNTERS = ("calls", "rows_examined", "seconds", "no_index_used", "first_seen", "last_seen")
VERDICT: tuple[str, ...] = (
    "text",
    "prunes",
    "partitions_read",
    "partitions_total",
    "how",
    "why",
    "filters_on",
)
VERDICT += ("judged_layout",)


def store(server, digests: Iterable[Digest], plans: dict[str, list[PlanRead]]) -> set[int]:
    """Store each digest against the tables it reads; returns the ids of the tables whose
    statements were written. A digest already stored against a table whose layout has
    not changed since keeps its verdict (its counters are updated), unless EXPLAIN
    counted it this read: a read of 1,000 digests judged them all again in 0.5 s, against
    a quiet poll's 0.08 s (bench/statements_bench.py)."""
    tables = Tables(server)
    stored = {
        (row.table_id, row.digest): row
        for row in StatementDigest.objects.filter(table__server=server).only(
            "id", "table_id", "digest", "judged_layout", "calls"
        )
    }
    counted: list[StatementDigest] = []
    due = []
    for digest in digests:
        if not may_read(digest.text):
            continue
        for table in tables.named_in(digest.text, digest.schema):
            plan = plans.get(digest.digest)
            row = stored.get((table.pk, digest.digest))
            if row is not None and row.judged_layout == table.layout and plan is None:
                if row.calls != digest.calls:  # (the same calls: nothing ran since)
                    _count(row, digest)
                    counted.append(row)
            elif (digest.digest, table.pk, table.layout) not in READ_NOTHING:
                due.append(
                    (row or StatementDigest(table=table, digest=digest.digest), digest, table)
                )
    layouts = tables.layouts_of([table for _, _, table in due])
    judged: list[StatementDigest] = []
    new: list[StatementDigest] = []
    for row, digest, table in due:
        _count(row, digest)
        if _judge(row, digest, layouts[table.pk], table, plans.get(digest.digest)):
            (judged if row.pk is not None else new).append(row)
        elif len(READ_NOTHING) < READ_NOTHING_MAX:
            READ_NOTHING.add((digest.digest, table.pk, table.layout))
    _update_counters(counted)
    StatementDigest.objects.bulk_update(judged, COUNTERS + VERDICT, batch_size=BATCH)
    StatementDigest.objects.bulk_create(new, batch_size=BATCH)
    return {row.table_id for row in counted + judged + new}


BATCH = 200


def _update_counters(rows: list[StatementDigest]) -> None:
    """One UPDATE per row, sent at once: Django's `bulk_update` builds a CASE per field
    and row, which took 1.7 ms a row (0.25 s for 150, bench/statements_bench.py)."""
    if not rows:
        return
    table = connection.ops.quote_name(StatementDigest._meta.db_table)
    columns = ", ".join(f"{connection.ops.quote_name(name)} = %s" for name in COUNTERS)
    sql = f"UPDATE {table} SET {columns} WHERE id = %s"  # noqa: S608 (names, not values)
    fields = [StatementDigest._meta.get_field(name) for name in COUNTERS]
    values = [
        [field.get_db_prep_save(getattr(row, field.attname), connection) for field in fields]
        + [row.pk]
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)


def _count(row: StatementDigest, digest: Digest) -> None:
    row.calls, row.rows_examined = digest.calls, digest.rows_examined
    row.seconds, row.no_index_used = digest.micros / 1e6, digest.no_index_used
    row.first_seen = _at(digest.first_seen)
    row.last_seen = _at(digest.last_seen) or timezone.now()


def _judge(row: StatementDigest, digest: Digest, layout: Layout, table, plan) -> bool:
    """Judge the digest against the table into `row`; False where it reads no rows."""
    verdict = judge(digest.text, layout, digest.schema)
    if verdict.why.startswith(NOT_A_READ):
        return False  # INSERT ... VALUES, DDL: nothing to prune
    exact = explained(verdict, plan, table, digest.schema)
    verdict = exact or verdict
    row.text, row.prunes, row.why = digest.text, verdict.prunes, verdict.why[:1000]
    row.partitions_read, row.partitions_total = verdict.partitions_read, verdict.partitions_total
    row.how = StatementDigest.How.EXPLAINED if exact else StatementDigest.How.PARSED
    row.filters_on, row.judged_layout = list(verdict.filters_on), table.layout
    return True


_VERDICT_FIELDS = (
    "table_id",
    "digest",
    "text",
    "calls",
    "rows_examined",
    "seconds",
    "prunes",
    "partitions_read",
    "partitions_total",
    "why",
    "filters_on",
)


def stored_verdicts(
    server_id: int, table_ids: list[int]
) -> dict[int, list[StatementVerdict]] | None:
    """The tables' stored statements as the `pruning` finding reads them
    (`kinds.Observed.statements`); None where the server's statements were never read."""
    if not StatementRead.objects.filter(server_id=server_id).exists():
        return None
    by_table: dict[int, list[StatementVerdict]] = {pk: [] for pk in table_ids}
    rows = StatementDigest.objects.filter(table_id__in=table_ids).values_list(*_VERDICT_FIELDS)
    for table_id, digest, text, calls, examined, seconds, *verdict in rows:
        prunes, read, total, why, filters = verdict
        judged = Verdict(prunes, read, total, why, tuple(filters or ()))
        by_table[table_id].append(StatementVerdict(digest, text, calls, examined, seconds, judged))
    return by_table


def record_read(server, watermark: int | None) -> None:
    """A read was due this poll: the next is due PARTDASH_STATEMENTS_EVERY_SECONDS on.
    A failed read keeps the last watermark."""
    defaults: dict = {"read_at": timezone.now()}
    if watermark is not None:
        defaults["watermark"] = watermark
    StatementRead.objects.update_or_create(server=server, defaults=defaults)


def worst_first(queryset: QuerySet) -> QuerySet:
    """Statements reading every partition first, then unknown, some, one; costliest first."""
    rank = Case(
        *(When(prunes=prunes, then=Value(order)) for prunes, order in RANK.items()),
        output_field=IntegerField(),
    )
    return queryset.annotate(rank=rank).order_by("rank", "-seconds", "digest")


def unpruned_tables(server) -> int:
    """How many of the server's live tables have a statement reading every partition."""
    return (
        PartitionedTable.objects.live()
        .filter(server=server, statements__prunes=Prunes.ALL)
        .distinct()
        .count()
    )
