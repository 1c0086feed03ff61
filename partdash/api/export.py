"""CSV for spreadsheets: `?format=csv` on a server's tables, a table's partitions and
the alerts. Every cell is plain text or a number, never a Python repr: one header row,
nested figures flattened to one dotted column each (`skew.max_mean_ratio`, also where a
figure is null in some rows: `runway.days_left` is empty for a HASH table, with no
`runway` column beside it), a list of findings as one line each ("critical skew: ...
Fix: advice"), other lists joined with "; ", and any text that a spreadsheet would run as a
formula (starting with = + - @, a tab or a carriage return) prefixed with a quote.

The body starts with a UTF-8 byte order mark: without it Excel reads a CSV in the
system's legacy code page, and `commandes_été` opens as `commandes_Ã©tÃ©`. Python's
`utf-8-sig`, LibreOffice and pandas read the mark and drop it."""

import csv
import io
import re

from rest_framework.renderers import BaseRenderer
from rest_framework.settings import api_settings

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
BOM = "\ufeff"


def flattened(row: dict, prefix: str = "") -> dict:
    """A row's nested objects as dotted columns, its lists as one readable cell."""
    flat = {}
    for name, value in row.items():
        if isinstance(value, dict):
            flat.update(flattened(value, f"{prefix}{name}."))
        elif isinstance(value, list):
            flat[f"{prefix}{name}"] = _list_text(value)
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def _list_text(items: list) -> str:
    """Findings one per line; anything else joined with "; "."""
    if items and all(_is_finding(item) for item in items):
        return "\n".join(_finding_text(item) for item in items)
    return "; ".join(_text(item) for item in items)


def _is_finding(item) -> bool:
    return isinstance(item, dict) and {"kind", "severity", "message"} <= item.keys()


def _finding_text(finding: dict) -> str:
    """ "critical skew: message. Fix: advice" on one line, as the pages say it. The fix's
    statement (several lines) stays on the table page, in the API and in the maintenance
    plan, where it is copied whole."""
    text = f"{finding['severity']} {finding['kind']}: {finding['message']}"
    advice = (finding.get("fix") or {}).get("advice")
    if advice:
        text += f". Fix: {advice}"
    return " ".join(text.split())


def _text(value) -> str:
    """A list item as text: an object as "name: value" pairs (nested ones dotted, nulls
    left out), a list as its items."""
    if isinstance(value, dict):
        pairs = flattened(value)
        return ", ".join(f"{name}: {_scalar(v)}" for name, v in pairs.items() if v is not None)
    if isinstance(value, list):
        return _list_text(value)
    return _scalar(value)


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def columns(rows: list[dict]) -> list[str]:
    """The header: every column in first-seen order, where a figure null in some rows and
    an object in others has its dotted columns only (in the place of the null's)."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    header: list[str] = []
    for name in names:
        children = [other for other in names if other.startswith(f"{name}.")]
        if children and all(row.get(name) is None for row in rows):
            header += [child for child in children if child not in header]
        elif name not in header:
            header.append(name)
    return header


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
    header = columns(flat)
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
        text = csv_text([row if isinstance(row, dict) else {"value": row} for row in rows])
        return (BOM + text).encode()


# The API's renderers and CSV, for the views that export.
WITH_CSV = [*api_settings.DEFAULT_RENDERER_CLASSES, CSVRenderer]
