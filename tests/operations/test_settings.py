"""partdash.settings as a user meets it: refused insecure defaults in production, a clean
deploy check with real keys, working defaults for development, DATABASE_URL honoured."""

import os
import stat
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
REAL_SECRET_KEY = "k3Y-" + "x8Qz!p2Lm#v9Rt$w4Nb&c7Hd" * 3
OUR_VARIABLES = ("DEBUG", "SECRET_KEY", "DATABASE_URL", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS")


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run `python *args` with partdash.settings and only the given variables set."""
    clean = {
        name: value
        for name, value in os.environ.items()
        if name not in OUR_VARIABLES and not name.startswith(("PARTDASH_", "SECURE_", "DJANGO_"))
    }
    clean |= {"DJANGO_SETTINGS_MODULE": "partdash.settings", "PARTDASH_VAR_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_refuses_the_development_secret_key_when_debug_is_off(tmp_path):
    result = run(tmp_path, "manage.py", "check")

    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is the built-in development key" in result.stderr


def test_check_refuses_the_development_encryption_key_when_debug_is_off(tmp_path):
    result = run(tmp_path, "manage.py", "check", SECRET_KEY=REAL_SECRET_KEY)

    assert result.returncode != 0
    assert "ImproperlyConfigured: PARTDASH_ENCRYPTION_KEYS uses the built-in" in result.stderr


def test_the_deploy_check_passes_with_real_keys_and_https(tmp_path):
    production = {
        "SECRET_KEY": REAL_SECRET_KEY,
        "PARTDASH_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "PARTDASH_HTTPS": "1",
        "ALLOWED_HOSTS": "partdash.example.com",
    }
    # Before collectstatic too: nothing may need the static manifest at import time.
    result = run(
        tmp_path, "manage.py", "check", "--deploy", "--fail-level", "WARNING", **production
    )

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_with_debug_on_the_defaults_work_and_migrate_creates_sqlite(tmp_path):
    migrate = run(tmp_path, "manage.py", "migrate", "--no-input", DEBUG="1")
    check = run(tmp_path, "manage.py", "check", DEBUG="1")

    assert migrate.returncode == 0, migrate.stderr
    assert (tmp_path / "partdash.sqlite3").stat().st_size > 0
    assert check.returncode == 0, check.stderr


def test_database_url_selects_postgresql(tmp_path):
    show = (
        "import django; django.setup(); from django.conf import settings; "
        "db = settings.DATABASES['default']; print(db['ENGINE'], db['HOST'], db['NAME'])"
    )

    url = "postgres://pd:pw@db.example:5432/partdash"

    result = run(tmp_path, "-c", show, DEBUG="1", DATABASE_URL=url)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.postgresql", "db.example", "partdash"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_migrate_by_hand_creates_a_private_var_and_database(tmp_path):
    var = tmp_path / "var"

    migrate = run(var, "manage.py", "migrate", "--no-input", DEBUG="1")

    assert migrate.returncode == 0, migrate.stderr
    assert mode(var) == 0o700
    assert mode(var / "partdash.sqlite3") == 0o600
    assert [path for path in var.rglob("*") if mode(path) & 0o077] == []


def test_an_existing_var_open_to_others_is_made_private(tmp_path):
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)
    for name in ("partdash.sqlite3", "partdash.sqlite3-wal", "partdash.env"):
        (var / name).touch()
        (var / name).chmod(0o644)

    check = run(var, "manage.py", "check", DEBUG="1")

    assert check.returncode == 0, check.stderr
    assert mode(var) == 0o700
    assert mode(var / "partdash.sqlite3") == 0o600
    assert mode(var / "partdash.sqlite3-wal") == 0o600
    assert mode(var / "partdash.env") == 0o600


SHOW_KEYS = (
    "import django; django.setup(); from django.conf import settings; "
    "from partdash.lib.secrets import decrypt, encrypt; "
    "print(*settings.PARTDASH_ENCRYPTION_KEYS); print(decrypt(encrypt('pw')))"
)


def keys_file(tmp_path: Path, text: str, file_mode: int = 0o600) -> Path:
    path = tmp_path / "etc" / "keys"
    path.parent.mkdir()
    path.write_text(text)
    path.chmod(file_mode)
    return path


def test_encryption_keys_are_read_from_a_file_outside_var(tmp_path):
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    path = keys_file(tmp_path, f"# partdash's keys: the first encrypts\n{new}\n\n{old}\n")

    result = run(
        tmp_path / "var",
        "-c",
        SHOW_KEYS,
        SECRET_KEY=REAL_SECRET_KEY,
        PARTDASH_ENCRYPTION_KEYS_FILE=str(path),
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{new} {old}", "pw"]


def test_a_keys_file_may_list_its_keys_comma_separated(tmp_path):
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    path = keys_file(tmp_path, f"{new},{old}\n", 0o640)

    result = run(
        tmp_path / "var", "-c", SHOW_KEYS, DEBUG="1", PARTDASH_ENCRYPTION_KEYS_FILE=str(path)
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{new} {old}"


def test_a_keys_file_other_users_can_read_is_refused(tmp_path):
    path = keys_file(tmp_path, Fernet.generate_key().decode(), 0o644)

    result = run(
        tmp_path / "var", "manage.py", "check", DEBUG="1", PARTDASH_ENCRYPTION_KEYS_FILE=str(path)
    )

    assert result.returncode != 0
    assert (
        f"PARTDASH_ENCRYPTION_KEYS_FILE: {path} is open to other users (mode 0644)" in result.stderr
    )
    assert f"chmod 600 {path}" in result.stderr


def test_a_missing_keys_file_is_a_clear_error(tmp_path):
    path = tmp_path / "nowhere" / "keys"

    result = run(
        tmp_path / "var", "manage.py", "check", DEBUG="1", PARTDASH_ENCRYPTION_KEYS_FILE=str(path)
    )

    assert result.returncode != 0
    assert (
        f"PARTDASH_ENCRYPTION_KEYS_FILE: cannot read {path}: No such file or directory"
        in result.stderr
    )


def test_keys_in_both_the_environment_and_a_file_are_refused(tmp_path):
    path = keys_file(tmp_path, Fernet.generate_key().decode())

    result = run(
        tmp_path / "var",
        "manage.py",
        "check",
        DEBUG="1",
        PARTDASH_ENCRYPTION_KEYS_FILE=str(path),
        PARTDASH_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
    )

    assert result.returncode != 0
    assert (
        "PARTDASH_ENCRYPTION_KEYS and PARTDASH_ENCRYPTION_KEYS_FILE are both set" in result.stderr
    )


def test_a_hotspot_hold_longer_than_the_window_is_refused_at_start_up(tmp_path):
    """Issue 43: a hold the window cannot hold would turn hotspots off; say so instead."""
    result = run(
        tmp_path,
        "manage.py",
        "check",
        DEBUG="1",
        PARTDASH_HOTSPOT_WINDOW_SECONDS="120",
        PARTDASH_HOTSPOT_HOLD_SECONDS="300",
    )

    assert result.returncode != 0
    assert (
        "ImproperlyConfigured: PARTDASH_HOTSPOT_HOLD_SECONDS (300) must be between 1 and "
        "PARTDASH_HOTSPOT_WINDOW_SECONDS (120)"
    ) in result.stderr
    shorter = run(tmp_path, "manage.py", "check", DEBUG="1", PARTDASH_HOTSPOT_WINDOW_SECONDS="120")
    assert shorter.returncode == 0, shorter.stderr


SIGN_ON_SETTINGS = (
    "import partdash.settings as s; "
    "print(s.AUTHENTICATION_BACKENDS, s.AUTH_LDAP_START_TLS, s.AUTH_LDAP_BIND_PASSWORD,"
    " s.AUTH_LDAP_USER_SEARCH.filterstr, s.OIDC_RP_CLIENT_SECRET, s.PARTDASH_OIDC_ROLE_GROUPS)"
)


def test_sign_on_is_configured_from_its_variables_and_refused_without_a_role_group(tmp_path):
    (tmp_path / "bind").write_text("from-a-file\n")
    sign_on = {
        "DEBUG": "1",
        "PARTDASH_LDAP_URI": "ldap://127.0.0.1:1",
        "PARTDASH_LDAP_BIND_PASSWORD_FILE": str(tmp_path / "bind"),
        "PARTDASH_LDAP_START_TLS": "1",
        "PARTDASH_LDAP_OPERATOR_GROUP": "cn=dba,ou=groups,dc=example,dc=com",
        "PARTDASH_OIDC_ISSUER": "https://login.example.com",
        "PARTDASH_OIDC_CLIENT_SECRET": "client-secret",
        "PARTDASH_OIDC_ADMIN_GROUP": "dba-leads",
    }
    loaded = run(tmp_path, "-c", SIGN_ON_SETTINGS, **sign_on)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split("] ")[0] + "]" == str(
        [
            "partdash.accounts.backends.LockoutBackend",
            "partdash.accounts.directory.DirectoryBackend",
            "partdash.accounts.oidc.ProviderBackend",
            "django.contrib.auth.backends.ModelBackend",
        ]
    )
    assert "True from-a-file (uid=%(user)s) client-secret" in loaded.stdout
    assert "'admins': 'dba-leads'" in loaded.stdout

    no_group = {**sign_on, "PARTDASH_LDAP_OPERATOR_GROUP": ""}
    refused = run(tmp_path, "-c", SIGN_ON_SETTINGS, **no_group)
    assert refused.returncode != 0
    assert "PARTDASH_LDAP_URI is set but none of PARTDASH_LDAP_VIEWER_GROUP" in refused.stderr
