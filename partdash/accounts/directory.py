"""Sign-on from a directory (LDAP) with django-auth-ldap, configured by `PARTDASH_LDAP_*`
(partdash.settings builds `AUTH_LDAP_*` from them). Local accounts keep working beside
it: the model backend comes after this one."""

from django.conf import settings
from django_auth_ldap.backend import LDAPBackend

from partdash.accounts.sign_on import give_role, is_local, role_of


class DirectoryBackend(LDAPBackend):
    """django-auth-ldap's backend (settings: `AUTH_LDAP_*`, built from `PARTDASH_LDAP_*`),
    which refuses a directory user outside the three groups (`AUTH_LDAP_REQUIRE_GROUP`);
    at each sign-in the user's role is set again from their groups. A refusal is a
    failed login like a wrong local password: django-axes counts it. A local account
    (one with a password) is left to its password: the directory neither signs it in
    nor changes its role."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username and is_local(username):
            return None
        return super().authenticate(request, username, password, **kwargs)

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is not None:
            role = role_of(ldap_user.group_dns, settings.PARTDASH_LDAP_ROLE_GROUPS)
            if role is None:  # REQUIRE_GROUP let them through: never without a role
                return None
            give_role(user, role)
        return user
