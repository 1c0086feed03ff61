"""Statement digests stored per partitioned table, with whether they prune.

A poll that read the digests (`collector.collect`, at most every
PARTDASH_STATEMENTS_EVERY_SECONDS) hands them here: each digest is matched to the
server's partitioned tables by the names its text quotes (a cheap prefilter), then
judged against each table's layout by parsing (`health.pruning.judge`), or counted from
the server's EXPLAIN where the poll ran one (`how: explained`). One row per (table,
digest), its counters overwritten by the newest read (they are cumulative on the server).
"""

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
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
from partdash.mysql.sources.statements import Digest

Prunes = StatementDigest.Prunes
QUOTED = re.compile(r"`((?:[^`]|``)+)`")
# Worst first: those reading every partition, then those partdash cannot tell, then the
# rest; the costliest first within each.
STATEMENTS_THAT_READ = frozenset({"SELECT", "WITH", "UPDATE", "DELETE", "INSERT", "REPLACE"})
NOT_A_READ = "not a read"  # `judge`'s why for statements that read no rows
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


def layout_of(table: PartitionedTable, partitions: list[Partition]) -> Layout:
    """A stored table's layout, as `health.pruning` judges statements against."""
    names: dict[str, str | None] = {}
    per_partition: dict[str, int] = defaultdict(int)
    for partition in partitions:
        names.setdefault(partition.name, partition.description)
        per_partition[partition.name] += 1
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


class Tables:
    """The server's live partitioned tables by folded name, their layouts built once."""

    def __init__(self, server) -> None:
        self.by_name: dict[str, list[PartitionedTable]] = defaultdict(list)
        for table in PartitionedTable.objects.live().filter(server=server).exclude(method=""):
            self.by_name[fold(table.name)].append(table)
        self.layouts: dict[int, Layout] = {}

    def named_in(self, text: str, schema: str | None) -> list[PartitionedTable]:
        """The tables the text names: by a quoted name, in a schema it also names or
        the digest's default schema."""
        quoted = {fold(name.replace("``", "`")) for name in QUOTED.findall(text)}
        folded_schema = fold(schema) if schema else None
        return [
            table
            for name in quoted & self.by_name.keys()
            for table in self.by_name[name]
            if fold(table.schema) in quoted or fold(table.schema) == folded_schema
        ]

    def layout(self, table: PartitionedTable) -> Layout:
        if table.pk not in self.layouts:
            partitions = list(Partition.objects.live().filter(table=table).order_by("ordinal"))
            self.layouts[table.pk] = layout_of(table, partitions)
        return self.layouts[table.pk]


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


def store(server, digests: Iterable[Digest], plans: dict[str, list[PlanRead]]) -> set[int]:
    """Store each digest against the tables it reads; returns the ids of the tables
    whose statements were written (their analysis is due: the `pruning` finding)."""
    tables = Tables(server)
    written: set[int] = set()
    for digest in digests:
        if not may_read(digest.text):
            continue
        for table in tables.named_in(digest.text, digest.schema):
            verdict = judge(digest.text, tables.layout(table), digest.schema)
            if verdict.why.startswith(NOT_A_READ):
                continue  # INSERT ... VALUES, DDL: nothing to prune
            exact = explained(verdict, plans.get(digest.digest), table, digest.schema)
            _save(table, digest, exact or verdict, exact is not None)
            written.add(table.pk)
    return written


def _save(table: PartitionedTable, digest: Digest, verdict: Verdict, exact: bool) -> None:
    StatementDigest.objects.update_or_create(
        table=table,
        digest=digest.digest,
        defaults={
            "text": digest.text,
            "calls": digest.calls,
            "rows_examined": digest.rows_examined,
            "seconds": digest.micros / 1e6,
            "no_index_used": digest.no_index_used,
            "first_seen": _at(digest.first_seen),
            "last_seen": _at(digest.last_seen) or timezone.now(),
            "prunes": verdict.prunes,
            "partitions_read": verdict.partitions_read,
            "partitions_total": verdict.partitions_total,
            "how": StatementDigest.How.EXPLAINED if exact else StatementDigest.How.PARSED,
            "why": verdict.why[:1000],
            "filters_on": list(verdict.filters_on),
        },
    )


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
