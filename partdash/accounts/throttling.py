"""API rate limits per address (anonymous), per user and per token.

The rates are read from settings on every request (DRF's own classes read them once, at
import), so a deployment, or a test, can change them in settings alone."""

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

from partdash.accounts.models import ApiToken


class SettingsRates:
    def get_rate(self) -> str | None:
        return settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].get(self.scope)


class AnonThrottle(SettingsRates, AnonRateThrottle):
    pass


class UserThrottle(SettingsRates, UserRateThrottle):
    pass


class TokenThrottle(SettingsRates, SimpleRateThrottle):
    """One token's requests, apart from its user's other tokens and sessions: a runaway
    script is slowed without locking its owner out of the pages."""

    scope = "token"

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}
