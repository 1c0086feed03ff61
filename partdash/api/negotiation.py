"""The browsable API for people who are logged in, JSON for everyone else.

The browsable API shows only what the JSON shows (the same permissions decide), so it is
on in production too; an anonymous browser gets the plain JSON 403 rather than a page of
forms, and scripts that send `Accept: text/html` without credentials are not surprised.
"""

from rest_framework.exceptions import APIException, NotAcceptable, Throttled
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer


def _is_authenticated(request) -> bool:
    try:
        return bool(request.user and request.user.is_authenticated)
    except Throttled:  # too many bad tokens from this address: the 429 stands
        raise
    except APIException:  # a bad token: the view answers 401 in JSON
        return False


class BrowsableForUsers(DefaultContentNegotiation):
    """Offer the BrowsableAPIRenderer only to authenticated requests."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if _is_authenticated(request):
            return super().select_renderer(request, renderers, format_suffix)
        json_only = [r for r in renderers if not isinstance(r, BrowsableAPIRenderer)]
        try:
            return super().select_renderer(request, json_only, format_suffix)
        except NotAcceptable:  # asked for HTML alone: the JSON refusal, not a 406
            return json_only[0], json_only[0].media_type
