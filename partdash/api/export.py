"""CSV for spreadsheets: `?format=csv` on a server's tables, a table's partitions and
the alerts. One header row, nested figures flattened (`skew.max_mean_ratio`), lists
joined with "; ", and any text that a spreadsheet would run as a formula (starting with
= + - @, a tab or a carriage return) prefixed with a quote."""

import csv
import io
import re

from rest_framework.renderers import BaseRenderer
from rest_framework.settings import api_settings

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def flattened(row: dict, prefix: str = "") -> dict:
    """A row's nested objects as dotted columns, its lists as one "; "-joined cell."""
    flat = {}
    for name, value in row.items():
        if isinstance(value, dict):
            flat.update(flattened(value, f"{prefix}{name}."))
        elif isinstance(value, list):
            flat[f"{prefix}{name}"] = "; ".join(_text(item) for item in value)
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def _text(value) -> str:
    return (
        ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
    )


def safe_cell(value) -> object:
    """`value` as a cell no spreadsheet evaluates (numbers stay numbers)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(rows: list[dict]) -> str:
    flat = [flattened(row) for row in rows]
    header = list(dict.fromkeys(name for row in flat for name in row))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([safe_cell(name) for name in header])
    for row in flat:
        writer.writerow([safe_cell(row.get(name)) for name in header])
    return out.getvalue()


class CSVRenderer(BaseRenderer):
    """A list as CSV (an error's object as a one-row CSV), downloaded as a file named
    by the view (its `csv_name`)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        rows = data if isinstance(data, list) else [data or {}]
        context = renderer_context or {}
        response, view = context.get("response"), context.get("view")
        if response is not None and response.status_code < 400:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", getattr(view, "csv_name", "partdash"))
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        return csv_text([row if isinstance(row, dict) else {"value": row} for row in rows]).encode()


# The API's renderers and CSV, for the views that export.
WITH_CSV = [*api_settings.DEFAULT_RENDERER_CLASSES, CSVRenderer]
