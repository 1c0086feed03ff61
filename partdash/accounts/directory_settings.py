"""django-auth-ldap's settings (`AUTH_LDAP_*`) from partdash's `PARTDASH_LDAP_*`, read by
partdash.settings when PARTDASH_LDAP_URI is set (and by the tests, against the directory
they start). Imports no model: settings are read before the apps are ready."""

from pathlib import Path

import ldap
from django_auth_ldap.config import GroupOfNamesType, LDAPGroupQuery, LDAPSearch


def ldap_settings(env) -> dict[str, object]:
    """The settings, from `env` (a django-environ `Env`); ValueError when no role group
    is named (nobody could log in)."""
    role_groups = {
        "viewers": env.str("PARTDASH_LDAP_VIEWER_GROUP", default=""),
        "operators": env.str("PARTDASH_LDAP_OPERATOR_GROUP", default=""),
        "admins": env.str("PARTDASH_LDAP_ADMIN_GROUP", default=""),
    }
    groups = [dn for dn in role_groups.values() if dn]
    if not groups:
        raise ValueError(
            "PARTDASH_LDAP_URI is set but none of PARTDASH_LDAP_VIEWER_GROUP, "
            "PARTDASH_LDAP_OPERATOR_GROUP, PARTDASH_LDAP_ADMIN_GROUP: nobody could log in"
        )
    required = LDAPGroupQuery(groups[0])
    for dn in groups[1:]:
        required |= LDAPGroupQuery(dn)
    password_file = env.str("PARTDASH_LDAP_BIND_PASSWORD_FILE", default="")
    timeout = env.float("PARTDASH_LDAP_TIMEOUT", default=10.0)
    ca_file = env.str("PARTDASH_LDAP_CA_FILE", default="")
    return {
        "PARTDASH_LDAP_ROLE_GROUPS": role_groups,
        "AUTH_LDAP_SERVER_URI": env.str("PARTDASH_LDAP_URI"),
        "AUTH_LDAP_BIND_DN": env.str("PARTDASH_LDAP_BIND_DN", default=""),
        "AUTH_LDAP_BIND_PASSWORD": Path(password_file).read_text().strip()
        if password_file
        else env.str("PARTDASH_LDAP_BIND_PASSWORD", default=""),
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(
            env.str("PARTDASH_LDAP_USER_BASE", default=""),
            ldap.SCOPE_SUBTREE,
            env.str("PARTDASH_LDAP_USER_FILTER", default="(uid=%(user)s)"),
        ),
        "AUTH_LDAP_GROUP_SEARCH": LDAPSearch(
            env.str("PARTDASH_LDAP_GROUP_BASE", default=""),
            ldap.SCOPE_SUBTREE,
            "(objectClass=groupOfNames)",
        ),
        "AUTH_LDAP_GROUP_TYPE": GroupOfNamesType(),
        "AUTH_LDAP_REQUIRE_GROUP": required,
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "AUTH_LDAP_START_TLS": env.bool("PARTDASH_LDAP_START_TLS", default=False),
        "AUTH_LDAP_CONNECTION_OPTIONS": {
            ldap.OPT_NETWORK_TIMEOUT: timeout,
            ldap.OPT_TIMEOUT: timeout,
            ldap.OPT_REFERRALS: 0,
            **({ldap.OPT_X_TLS_CACERTFILE: ca_file} if ca_file else {}),
            ldap.OPT_X_TLS_REQUIRE_CERT: ldap.OPT_X_TLS_DEMAND,
            ldap.OPT_X_TLS_NEWCTX: 0,  # last: the TLS options above take effect
        },
    }
