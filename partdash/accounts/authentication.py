"""`Authorization: Token KEY` against hashed keys (partdash.accounts.models.ApiToken)."""

from django.conf import settings
from django.core.cache import cache
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled

from partdash.accounts.backends import client_address
from partdash.accounts.models import ApiToken, key_hash


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's header parsing, our lookup: the key's SHA-256 is looked up by equality on a
    unique index, so no comparison of secret bytes happens in Python (no timing leak of
    the key); revoked tokens and inactive users are refused alike.

    Wrong keys are counted per address, as wrong passwords are (django-axes): after
    PARTDASH_TOKEN_FAILURE_LIMIT of them within PARTDASH_LOCKOUT_MINUTES, the address's
    token requests get 429 until the period ends, right keys included (a guesser does
    not learn which key would have worked). A right key before the limit starts the
    count again."""

    def authenticate(self, request):
        self.address = client_address(request) or "unknown"
        return super().authenticate(request)

    def authenticate_credentials(self, key: str):
        failures_key = f"partdash:token-failures:{getattr(self, 'address', 'unknown')}"
        period = int(settings.AXES_COOLOFF_TIME * 3600)
        if cache.get(failures_key, 0) >= settings.PARTDASH_TOKEN_FAILURE_LIMIT:
            raise Throttled(period, "too many wrong tokens from this address")
        token = (
            ApiToken.objects.active().select_related("user").filter(key_hash=key_hash(key)).first()
        )
        if token is None or not token.user.is_active:
            if not cache.add(failures_key, 1, period):
                cache.incr(failures_key)
            raise AuthenticationFailed("Invalid token.")
        cache.delete(failures_key)
        token.touch()
        return (token.user, token)
