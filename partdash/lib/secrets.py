"""Encryption at rest for monitored-server passwords (Fernet, with key rotation).

`PARTDASH_ENCRYPTION_KEYS` lists Fernet keys: the first encrypts, every key decrypts.
To rotate: put a new key first, keep the old ones after it, run
`python manage.py rotate_keys`, then drop the old keys.
"""

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretError(Exception):
    """A stored secret cannot be decrypted with the configured keys."""


@cache
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in keys])


def cipher() -> MultiFernet:
    return _cipher(tuple(settings.PARTDASH_ENCRYPTION_KEYS))


def encrypt(plaintext: str) -> str:
    return cipher().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretError(
            "the stored password cannot be decrypted with PARTDASH_ENCRYPTION_KEYS "
            "(was a key removed before `manage.py rotate_keys` ran?)"
        ) from None


def rotate(token: str) -> str:
    """Re-encrypt a token under the first (primary) key."""
    try:
        return cipher().rotate(token.encode()).decode()
    except InvalidToken:
        raise SecretError("a stored password cannot be decrypted with any configured key") from None
