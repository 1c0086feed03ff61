"""Filtering and ordering of the lists a poll renders (a server's tables, a table's
partitions): on the rendered rows, so the per-poll cache holds one rendering and every
query is answered from it.

`?FIELD=VALUE` filters on text (`q`: a substring of `schema.table`, `table` and `name`:
a substring, any case; the others: equal, any case), on flags (`findings=true|false`),
`?FIGURE_min=N` / `?FIGURE_max=N` on figures, and
`?ordering=-score,name` orders (`-` for descending; rows without the figure last)."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter

from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError

Row = dict
Getter = Callable[[Row], object]


def nested(name: str, key: str) -> Getter:
    return lambda row: (row.get(name) or {}).get(key)


@dataclass(frozen=True)
class Listing:
    """What a list can be filtered and ordered on: text fields (substring ones apart)
    and figures, each a getter on a rendered row."""

    text: Mapping[str, Getter]
    figures: Mapping[str, Getter]
    substring: frozenset[str] = field(default_factory=frozenset)
    flags: Mapping[str, Callable[[Row], bool]] = field(default_factory=dict)

    @property
    def parameters(self) -> list[str]:
        bounds = [f"{figure}_{end}" for figure in self.figures for end in ("min", "max")]
        return [*self.text, *self.flags, *bounds, "ordering"]

    def openapi(self) -> list[OpenApiParameter]:
        """The parameters as the OpenAPI document lists them."""
        described = {"ordering": "comma-separated; `-` for descending"}
        return [
            OpenApiParameter(
                name,
                float if name.endswith(("_min", "_max")) else bool if name in self.flags else str,
                description=described.get(name, ""),
            )
            for name in self.parameters
        ]

    def select(self, rows: list[Row], params: Mapping[str, str]) -> list[Row]:
        """The rows `params` asks for, in its order; a 400 naming a bad parameter."""
        for name, wanted in params.items():
            rows = [row for row in rows if self._keeps(name, wanted, row)]
        ordering = params.get("ordering")
        return self._ordered(rows, ordering) if ordering else rows

    def check(self, params: Mapping[str, str]) -> None:
        """Raise a 400 for a bad value (before any work is done)."""
        for name, wanted in params.items():
            if self._bound_of(name):
                _number(name, wanted)
            if name in self.flags:
                _flag(name, wanted)
        if "ordering" in params:
            self._ordered([], params["ordering"])

    def _bound_of(self, name: str) -> str | None:
        figure, _, end = name.rpartition("_")
        return figure if figure in self.figures and end in ("min", "max") else None

    def _keeps(self, name: str, wanted: str, row: Row) -> bool | None:
        if name == "ordering":
            return True
        if name in self.flags:
            return self.flags[name](row) == _flag(name, wanted)
        if name in self.text:
            value = str(self.text[name](row) or "").casefold()
            return (
                wanted.casefold() in value if name in self.substring else value == wanted.casefold()
            )
        figure = self._bound_of(name)
        if figure is None:
            return True  # not ours (e.g. `format`)
        bound, value = _number(name, wanted), self.figures[figure](row)
        if value is None:
            return False
        return value >= bound if name.endswith("_min") else value <= bound

    def _ordered(self, rows: list[Row], ordering: str) -> list[Row]:
        keys = [key.strip() for key in ordering.split(",") if key.strip()]
        getters = {**self.text, **self.figures}
        for key in reversed(keys):  # stable sorts, least significant key first
            name = key.removeprefix("-")
            if name not in getters:
                raise ValidationError({"ordering": [f"cannot order on {name!r}"]})
            get, descending = getters[name], key.startswith("-")
            present = [row for row in rows if get(row) is not None]
            absent = [row for row in rows if get(row) is None]
            present.sort(key=lambda row: _sortable(get(row)), reverse=descending)
            rows = present + absent
        return rows


def _flag(name: str, wanted: str) -> bool:
    if wanted.lower() not in ("true", "false"):
        raise ValidationError({name: ["true or false"]})
    return wanted.lower() == "true"


def _number(name: str, wanted: str) -> float:
    try:
        bound = float(wanted)
    except ValueError:
        raise ValidationError({name: ["a number is required"]}) from None
    if bound != bound or bound in (float("inf"), float("-inf")):
        raise ValidationError({name: ["a finite number is required"]})
    return bound


def _sortable(value):
    return value.casefold() if isinstance(value, str) else value


TABLES = Listing(
    text={
        "q": lambda row: f"{row['schema']}.{row['name']}",
        "schema": lambda row: row["schema"],
        "table": lambda row: row["name"],
        "name": lambda row: row["name"],
        "method": lambda row: row["method"],
    },
    figures={
        "score": lambda row: row["score"],
        "skew": nested("skew", "max_mean_ratio"),
        "runway_days": nested("runway", "days_left"),
        "catchall_rows": nested("runway", "catchall_rows"),
        "hot_partitions": lambda row: len(row["hotspots"] or []),
        "compression_failure_rate": nested("compression", "failure_rate"),
        "partition_count": lambda row: row["partition_count"],
        "rows": lambda row: row["rows"],
        "data_bytes": lambda row: row["data_bytes"],
        "index_bytes": lambda row: row["index_bytes"],
        "file_bytes": lambda row: row["file_bytes"],
    },
    substring=frozenset({"q", "table", "name"}),
    flags={"findings": lambda row: bool(row["findings"])},
)

PARTITIONS = Listing(
    text={"name": lambda row: row["name"], "subpartition": lambda row: row["subpartition"]},
    figures={
        name: itemgetter(name)
        for name in (
            "ordinal",
            "rows",
            "data_bytes",
            "index_bytes",
            "data_free",
            "file_bytes",
            "row_share",
            "rows_changed_per_s",
            "write_bytes_per_s",
            "read_bytes_per_s",
            "write_share",
            "read_share",
        )
    },
    substring=frozenset({"name"}),
)
