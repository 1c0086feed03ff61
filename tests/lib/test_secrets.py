"""Passwords at rest: Fernet encryption with key rotation, and no plaintext in reprs or logs."""

import logging

import pytest
from cryptography.fernet import Fernet

from partdash.lib import secrets
from partdash.lib.secrets import SecretError
from partdash.mysql.connection import Target

PASSWORD = "Xy7-distinctive-secret-4411"


@pytest.fixture
def keys(settings) -> tuple[str, str]:
    """Two fresh Fernet keys, configured as PARTDASH_ENCRYPTION_KEYS = [new, old]."""
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.PARTDASH_ENCRYPTION_KEYS = [new, old]
    return new, old


def test_a_password_survives_encryption_and_decryption(keys):
    assert secrets.decrypt(secrets.encrypt(PASSWORD)) == PASSWORD


def test_the_token_does_not_contain_the_password(keys):
    token = secrets.encrypt(PASSWORD)

    assert PASSWORD not in token
    assert token != secrets.encrypt(PASSWORD)  # a fresh IV each time


def test_the_first_key_encrypts_and_every_key_decrypts(keys):
    new, old = keys
    under_old = Fernet(old.encode()).encrypt(b"old-secret").decode()

    assert secrets.decrypt(under_old) == "old-secret"
    assert Fernet(new.encode()).decrypt(secrets.encrypt(PASSWORD).encode()).decode() == PASSWORD


def test_rotation_moves_a_token_to_the_first_key(keys):
    new, old = keys
    under_old = Fernet(old.encode()).encrypt(PASSWORD.encode()).decode()

    rotated = secrets.rotate(under_old)

    assert Fernet(new.encode()).decrypt(rotated.encode()).decode() == PASSWORD


def test_a_token_from_a_foreign_key_raises_a_helpful_secret_error(keys):
    foreign = Fernet(Fernet.generate_key()).encrypt(PASSWORD.encode()).decode()

    with pytest.raises(SecretError) as caught:
        secrets.decrypt(foreign)

    assert "PARTDASH_ENCRYPTION_KEYS" in str(caught.value)
    assert "rotate_keys" in str(caught.value)


def test_a_server_never_shows_its_password(db):
    from partdash.servers.models import Server

    server = Server(name="db1", host="db.example", port=3306, user="mon")
    server.set_password(PASSWORD)

    assert server.get_password() == PASSWORD
    assert PASSWORD not in repr(server)
    assert PASSWORD not in str(server)
    assert PASSWORD not in server.password_token


def test_a_target_never_shows_its_password():
    target = Target("db.example", 3306, "mon", PASSWORD)

    assert repr(target) == "Target(mon@db.example:3306)"
    assert PASSWORD not in str(target)


def test_a_failed_poll_logs_nothing_containing_the_password(mariadb, make_server, caplog):
    from partdash.polling.service import poll_server

    server = make_server(mariadb, name="wrong-pw", password=PASSWORD)  # root has no password
    caplog.set_level(logging.DEBUG)

    report = poll_server(server)

    assert not report.ok
    assert "access denied" in caplog.text  # the failure itself was logged
    assert PASSWORD not in caplog.text
    assert PASSWORD not in report.error
    server.refresh_from_db()
    assert PASSWORD not in server.last_error
