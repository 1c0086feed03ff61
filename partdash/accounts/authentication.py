"""`Authorization: Token KEY` against hashed keys (partdash.accounts.models.ApiToken)."""

from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from partdash.accounts.models import ApiToken, key_hash


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's header parsing, our lookup: the key's SHA-256 is looked up by equality on a
    unique index, so no comparison of secret bytes happens in Python (no timing leak of
    the key); revoked tokens and inactive users are refused alike."""

    def authenticate_credentials(self, key: str):
        token = (
            ApiToken.objects.active().select_related("user").filter(key_hash=key_hash(key)).first()
        )
        if token is None or not token.user.is_active:
            raise AuthenticationFailed("Invalid token.")
        token.touch()
        return (token.user, token)
