"""`{{ table.name|shown }}`: a name from a monitored server with its control and bidi
characters escaped (partdash.lib.shown), then HTML-escaped as any value is."""

from django import template

from partdash.lib.shown import shown as shown_name

register = template.Library()


@register.filter
def shown(value) -> str:
    return "" if value is None else shown_name(str(value))
