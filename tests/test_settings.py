"""partdash.settings as a user meets it: refused insecure defaults in production, a clean
deploy check with real keys, working defaults for development, DATABASE_URL honoured."""

import os
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
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
