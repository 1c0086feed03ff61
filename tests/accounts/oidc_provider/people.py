"""The provider's people, from `people.json` in its directory ({name: {password, groups}}),
read at every sign-in and every claim, so a test changes a group by rewriting the file."""

import json

from django.conf import settings
from django.contrib.auth import get_user_model
from oauth2_provider.oauth2_validators import OAuth2Validator


def people() -> dict:
    return json.loads((settings.STATE / "people.json").read_text())


class PeopleBackend:
    def authenticate(self, request, username=None, password=None, **kwargs):
        person = people().get(username or "")
        if person is None or person["password"] != password:
            return None
        user, _ = get_user_model().objects.get_or_create(username=username)
        return user

    def get_user(self, user_id):
        return get_user_model().objects.filter(pk=user_id).first()


class ClaimsValidator(OAuth2Validator):
    """Every claim whatever the scopes, among them the person's groups."""

    oidc_claim_scope = None

    def get_additional_claims(self, request):
        name = request.user.username
        return {
            "preferred_username": name,
            "email": f"{name}@example.test",
            "groups": people().get(name, {}).get("groups", []),
        }
