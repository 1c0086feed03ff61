"""Retention policies between the store and the analysis: those in force on a server,
as `health.retention.Policy`s (one query per analysed poll), and the tables a policy's
change makes due for analysis.

A table is analysed again only when due (`analysis._is_due`), so a policy created,
changed or deleted clears `analysed_at` of the live tables its pattern matches (before
and after a change) in one UPDATE: the server's next poll applies it.
"""

from django.db.models import Q
from django.db.models.signals import post_delete, post_save, pre_save

from partdash.health.retention import Policy, matches
from partdash.metrics.models import PartitionedTable, RetentionPolicy

_IN_LIST = 900  # ids in one UPDATE ... IN (...)


def as_policy(row: RetentionPolicy) -> Policy:
    return Policy(
        id=row.pk,
        pattern=row.pattern,
        keep_days=row.keep_days,
        keep_partitions=row.keep_partitions,
        server_scoped=row.server_id is not None,
    )


def server_policies(server) -> list[Policy]:
    """The policies in force on `server`: its own and the fleet-wide ones."""
    rows = RetentionPolicy.objects.filter(Q(server=None) | Q(server=server))
    return [as_policy(row) for row in rows]


def make_due(scopes: list[tuple[str, int | None]]) -> int:
    """Clear `analysed_at` of the live tables each (pattern, server id or None) names;
    returns how many."""
    due: set[int] = set()
    for pattern, server_id in scopes:
        tables = PartitionedTable.objects.live()
        if server_id is not None:
            tables = tables.filter(server_id=server_id)
        rows = tables.values_list("id", "schema", "name")
        # Case-insensitively on every server: a few tables more analysed again, never
        # one that the policy now matches left out.
        due.update(pk for pk, schema, name in rows if matches(pattern, schema, name, False))
    ids = sorted(due)
    for start in range(0, len(ids), _IN_LIST):
        chunk = ids[start : start + _IN_LIST]
        PartitionedTable.objects.filter(pk__in=chunk).update(analysed_at=None)
    return len(ids)


def _remember(sender, instance: RetentionPolicy, **kwargs) -> None:
    before = RetentionPolicy.objects.filter(pk=instance.pk).values("pattern", "server_id").first()
    instance._scope_before = (before["pattern"], before["server_id"]) if before else None


def _saved(sender, instance: RetentionPolicy, **kwargs) -> None:
    scopes = [(instance.pattern, instance.server_id)]
    before = getattr(instance, "_scope_before", None)
    if before and before != scopes[0]:
        scopes.append(before)
    make_due(scopes)


def _deleted(sender, instance: RetentionPolicy, **kwargs) -> None:
    make_due([(instance.pattern, instance.server_id)])


def connect() -> None:
    """Wire the signals (from `MetricsConfig.ready`)."""
    pre_save.connect(_remember, sender=RetentionPolicy, dispatch_uid="retention_remember")
    post_save.connect(_saved, sender=RetentionPolicy, dispatch_uid="retention_saved")
    post_delete.connect(_deleted, sender=RetentionPolicy, dispatch_uid="retention_deleted")
