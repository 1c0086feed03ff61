"""`manage.py check --deploy --database default`: a PostgreSQL store that reclaims what
each poll rewrites.

Every analysis rewrites the health of the tables that changed, and every poll its
snapshot: the old row versions are reclaimed by autovacuum. With it off (the server's
`autovacuum` or `track_counts`, or a table's `autovacuum_enabled`), they pile up: a
simulated fleet's `metrics_partitionedtable` grew by 3.5 GB a day for 139,132
partitions without a row added (docs: Benchmarks). Checked against the store only when
asked to (`--database`), as Django does for every check that queries a database."""

from django.core.checks import Tags, Warning, register
from django.db import DatabaseError, connections

OFF = frozenset({"off", "false", "no", "0", "f", "n"})
"""How PostgreSQL may spell a boolean storage parameter that is off."""


@register(Tags.database, deploy=True)
def store_reclaims_dead_rows(app_configs, databases=None, **kwargs) -> list[Warning]:
    found = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        try:
            off = autovacuum_off(connection)
        except DatabaseError:  # the store does not answer: migrate and the polls say so
            continue
        if off:
            found.append(
                Warning(
                    f"Autovacuum does not run on the metadata store ({alias}): {off}. The "
                    "row versions each poll and analysis leave behind are never reclaimed, "
                    "and the store grows without bound.",
                    hint="Turn it back on (PostgreSQL's default): autovacuum = on and "
                    "track_counts = on in postgresql.conf, or ALTER TABLE ... RESET "
                    "(autovacuum_enabled) (docs: Production).",
                    id="partdash.W002",
                )
            )
    return found


def autovacuum_off(connection) -> str:
    """Where autovacuum is off for the store's tables, said in a few words ("" if nowhere)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('autovacuum'), current_setting('track_counts')")
        autovacuum, track_counts = cursor.fetchone()
        cursor.execute(
            "SELECT c.relname, c.reloptions FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'm') "
            "AND c.reloptions IS NOT NULL ORDER BY c.relname"
        )
        tables = [name for name, options in cursor.fetchall() if _disables(options)]
    settings = (("autovacuum", autovacuum), ("track_counts", track_counts))
    said = [f"{name} = off" for name, value in settings if value in OFF]
    if tables:
        shown = ", ".join(tables[:3]) + (f" and {len(tables) - 3} more" if len(tables) > 3 else "")
        said.append(f"autovacuum_enabled = off on {shown}")
    return "; ".join(said)


def _disables(options: list[str]) -> bool:
    for option in options:
        name, _, value = option.partition("=")
        if name == "autovacuum_enabled" and value.lower() in OFF:
            return True
    return False
