"""Sessions in the database under a hash of their key: a copy of the database (a backup,
a read-only SQL account, a stolen disk) holds no cookie that logs anyone in.

The cookie carries the key; the `django_session` row is found by the key's BLAKE2b
(20 bytes, 40 hex digits: the column's width). Keys are 32 random characters of 36 (165
bits), so the hash cannot be reversed, and a row read from a copy cannot be replayed."""

import hashlib

from django.contrib.sessions.backends import db
from django.utils import timezone


def stored_key(session_key: str) -> str:
    """What `django_session.session_key` holds for the cookie's `session_key`."""
    return hashlib.blake2b(session_key.encode(), digest_size=20).hexdigest()


class SessionStore(db.SessionStore):
    """Django's database sessions, looked up, created and deleted by `stored_key`."""

    def _get_session_from_db(self):
        if not self._validate_session_key(self.session_key):
            self._session_key = None
            return None
        found = self.model.objects.filter(
            session_key=stored_key(self.session_key), expire_date__gt=timezone.now()
        ).first()
        if found is None:
            self._session_key = None
        return found

    def exists(self, session_key: str) -> bool:
        return self.model.objects.filter(session_key=stored_key(session_key)).exists()

    def create_model_instance(self, data):
        session = super().create_model_instance(data)
        session.session_key = stored_key(session.session_key)
        return session

    def delete(self, session_key: str | None = None) -> None:
        session_key = session_key or self.session_key
        if session_key is not None:
            self.model.objects.filter(session_key=stored_key(session_key)).delete()
