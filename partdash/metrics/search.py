"""Fleet-wide search for a schema or table: one question for the API and the page.

A substring of `schema.table` (so of the schema, of the table, or across the dot),
ignoring accents and case (`ete` finds `commandes_été`: both sides folded by
`lib.folding.folded`, the names when stored), over every server's live tables. Exact
table names rank first, then names that start with the text, then the rest; each group
by schema, table and server.
"""

from dataclasses import dataclass

from django.db.models import Case, IntegerField, Value, When
from django.db.models.functions import Concat, Lower

from partdash.lib.folding import folded
from partdash.metrics.models import PartitionedTable

# Longest text worth searching: a schema and a table name of 64 characters each and a dot.
MAX_QUERY_LENGTH = 129
DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The tables found (at most `limit`), and whether more matched."""

    tables: list[PartitionedTable]
    truncated: bool


def search_tables(text: str, limit: int = DEFAULT_LIMIT) -> SearchResult:
    """Live tables whose `schema.table` contains `text`, any accents and case, best
    matches first."""
    needle = folded(text.strip())
    found = (
        PartitionedTable.objects.live()
        .annotate(qualified=Concat("folded_schema", Value("."), "folded_name"))
        .filter(qualified__contains=needle)
        .annotate(
            rank=Case(
                When(folded_name=needle, then=Value(0)),
                When(folded_name__startswith=needle, then=Value(1)),
                When(folded_schema=needle, then=Value(2)),
                default=Value(3),
                output_field=IntegerField(),
            )
        )
        .select_related("server")
        .order_by("rank", Lower("schema"), Lower("name"), "server__name")
    )
    tables = list(found[: limit + 1])
    return SearchResult(tables[:limit], len(tables) > limit)
