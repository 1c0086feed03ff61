"""The admin's changelists take filters from the query string (`?name__startswith=x`) on
any field of the model, secrets included: `?password__startswith=pbkdf2_sha256$1000000$a`
answered "1 user" or "0 users", so anyone who could open the list could read a password
hash, a token's hash or an encrypted server password one character at a time. Lookups
that touch a secret field are refused (Django answers 400)."""

from django.contrib import admin

# Field names that hold a secret or a hash of one, wherever they are in a lookup's path
# (`user__password__startswith` from another model's list too).
SECRET_FIELDS = frozenset({"password", "password_token", "key_hash", "session_key", "session_data"})


def touches_secret(lookup: str) -> bool:
    """Does `lookup` (`user__password__startswith`) name a secret field anywhere?"""
    return any(
        part in SECRET_FIELDS or "password" in part or "secret" in part
        for part in lookup.split("__")
    )


class SecretLookupsRefused(admin.ModelAdmin):
    """A ModelAdmin whose changelist accepts no filter on a secret field."""

    def lookup_allowed(self, lookup, value, request=None) -> bool:
        if touches_secret(lookup):
            return False
        return super().lookup_allowed(lookup, value, request)
