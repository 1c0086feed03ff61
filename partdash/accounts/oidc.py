"""Sign-on through an OpenID Connect provider with mozilla-django-oidc, configured by
`PARTDASH_OIDC_*` (docs/access.md, "OpenID Connect"): the login page's "Sign in with ..."
button, the provider's endpoints found from its issuer (`.well-known/openid-configuration`,
read once per process when first needed), and the groups claim deciding the role at each
sign-in. A person outside the three role groups, or whose name is a local account's,
cannot sign in this way."""

from functools import cache

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

from partdash.accounts.sign_on import give_role, is_local, role_of

# mozilla-django-oidc's endpoint settings, and where the provider's discovery names them.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


@cache
def discovery(issuer: str) -> dict:
    """The provider's OpenID configuration (`ISSUER/.well-known/openid-configuration`)."""
    answer = requests.get(
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
        timeout=settings.OIDC_TIMEOUT,
        verify=settings.OIDC_VERIFY_SSL,
    )
    answer.raise_for_status()
    return answer.json()


def provider_setting(attr: str, *args):
    """A mozilla-django-oidc setting: an endpoint from the provider's discovery unless
    set by hand, the rest from the settings."""
    if attr in DISCOVERED and not hasattr(settings, attr):
        if not settings.PARTDASH_OIDC_ISSUER:
            raise ImproperlyConfigured("PARTDASH_OIDC_ISSUER is not set")
        return discovery(settings.PARTDASH_OIDC_ISSUER)[DISCOVERED[attr]]
    return import_from_settings(attr, *args)


def claimed_role(claims: dict) -> str | None:
    groups = claims.get(settings.PARTDASH_OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    return role_of([str(group) for group in groups], settings.PARTDASH_OIDC_ROLE_GROUPS)


class ProviderSignIn(OIDCAuthenticationRequestView):
    """`/oidc/authenticate/`: off (404) unless PARTDASH_OIDC_ISSUER is set."""

    get_settings = staticmethod(provider_setting)

    def __init__(self, *args, **kwargs) -> None:
        self.configured = bool(settings.PARTDASH_OIDC_ISSUER)
        if self.configured:
            super().__init__(*args, **kwargs)

    def get(self, request):
        if not self.configured:
            raise Http404("OpenID Connect sign-on is not configured")
        return super().get(request)


class ProviderBackend(OIDCAuthenticationBackend):
    """The provider's user, by `PARTDASH_OIDC_USERNAME_CLAIM`, with the role of their
    `PARTDASH_OIDC_GROUPS_CLAIM` at each sign-in. Every login asks each backend, so this
    one reads its endpoints only when a provider's answer (`code`) is there: a password
    login never waits on the provider."""

    get_settings = staticmethod(provider_setting)

    def __init__(self, *args, **kwargs) -> None:
        from django.contrib.auth import get_user_model

        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if not settings.PARTDASH_OIDC_ISSUER or request is None or "code" not in request.GET:
            return None
        super().__init__()  # the endpoints, now that they are needed
        return super().authenticate(request, **kwargs)

    def verify_claims(self, claims) -> bool:
        name = claims.get(settings.PARTDASH_OIDC_USERNAME_CLAIM)
        return bool(name) and claimed_role(claims) is not None and not is_local(name)

    def filter_users_by_claims(self, claims):
        name = claims.get(settings.PARTDASH_OIDC_USERNAME_CLAIM)
        return self.UserModel.objects.filter(username=name)

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(
            claims[settings.PARTDASH_OIDC_USERNAME_CLAIM], email=claims.get("email", "")
        )
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        give_role(user, claimed_role(claims))
        return user
