"""`{{ table.total_rows|count }}`: a count as every page's script prints it (format.js's
`count`, the browser's Intl.NumberFormat: 36,300), so a server-rendered page does not
print 36300 beside it; "—" where the count is unknown."""

from django import template

register = template.Library()

UNKNOWN = "—"


@register.filter
def count(value: int | None) -> str:
    return UNKNOWN if value is None else f"{int(value):,}"
