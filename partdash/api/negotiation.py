"""The browsable API for people who are logged in, JSON for everyone else.

The browsable API shows only what the JSON shows (the same permissions decide), so it is
on in production too; an anonymous browser gets the plain JSON 403 rather than a page of
forms, and scripts that send `Accept: text/html` without credentials are not surprised.
"""

from rest_framework.exceptions import APIException
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer


def _is_authenticated(request) -> bool:
    try:
        return bool(request.user and request.user.is_authenticated)
    except APIException:  # a bad token: the view answers 401 in JSON
        return False


class BrowsableForUsers(DefaultContentNegotiation):
    """Offer the BrowsableAPIRenderer only to authenticated requests."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if not _is_authenticated(request):
            renderers = [r for r in renderers if not isinstance(r, BrowsableAPIRenderer)]
        return super().select_renderer(request, renderers, format_suffix)
