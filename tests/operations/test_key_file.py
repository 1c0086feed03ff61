"""`make up`'s keys (scripts/keys.py): the encryption key is kept in a private file outside
var/, so a copy of var/ cannot decrypt the stored passwords; an install that kept it in
var/partdash.env keeps working, its key moved out with a message saying where."""

import os
import stat
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

from tests.conftest import ROOT

PASSWORD = "Kq2-stored-server-password-9051"


def run_keys(var: Path, config: Path, **environ: str) -> str:
    """scripts/keys.py as `make up` runs it; what it said."""
    env = clean_environment(var) | {"XDG_CONFIG_HOME": str(config), **environ}
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "keys.py"), str(var)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stderr


def clean_environment(var: Path) -> dict[str, str]:
    """A user's environment: none of the test run's settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PARTDASH_", "DJANGO_", "CELERY_"))
        and key not in ("DEBUG", "DATABASE_URL", "SECRET_KEY")
    }
    return env | {"PARTDASH_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "partdash.settings"}


def decrypted_by_partdash(var: Path, token: str) -> str:
    """`token` decrypted by partdash's settings for this var/, in a process of their own."""
    script = "import django; django.setup(); from partdash.lib import secrets; "
    script += f"print(secrets.decrypt({token!r}))"
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=clean_environment(var),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def files_under(path: Path) -> str:
    return " ".join(p.read_text() for p in path.rglob("*") if p.is_file())


def key_file_named_in(env_file: Path) -> Path:
    (line,) = [
        line
        for line in env_file.read_text().splitlines()
        if line.startswith("PARTDASH_ENCRYPTION_KEYS")
    ]
    name, _, value = line.partition("=")
    assert name == "PARTDASH_ENCRYPTION_KEYS_FILE"
    return Path(value)


def test_a_first_run_keeps_the_encryption_key_outside_var_in_a_private_file(tmp_path):
    var, config = tmp_path / "install" / "var", tmp_path / "config"
    var.mkdir(parents=True)
    said = run_keys(var, config)

    key_file = key_file_named_in(var / "partdash.env")
    assert key_file.parent == config / "partdash"
    assert str(key_file) in said and "outside var/" in said
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    (key,) = [line for line in key_file.read_text().splitlines() if not line.startswith("#")]
    assert key not in files_under(var)  # a copy of var/ holds no key
    token = Fernet(key.encode()).encrypt(PASSWORD.encode()).decode()
    assert decrypted_by_partdash(var, token) == PASSWORD


def test_two_installs_of_one_user_get_a_key_file_each(tmp_path):
    config = tmp_path / "config"
    for install in ("one", "two"):
        (tmp_path / install / "var").mkdir(parents=True)
        run_keys(tmp_path / install / "var", config)
    files = {key_file_named_in(tmp_path / i / "var" / "partdash.env") for i in ("one", "two")}
    assert len(files) == 2 and all(f.exists() for f in files)


def test_an_old_install_s_key_moves_out_of_var_and_its_passwords_still_decrypt(tmp_path):
    var, config = tmp_path / "var", tmp_path / "config"
    var.mkdir()
    key = Fernet.generate_key().decode()
    env_file = var / "partdash.env"
    env_file.write_text(f"SECRET_KEY=s3cret-key\nPARTDASH_ENCRYPTION_KEYS={key}\nDEBUG=0\n")
    env_file.chmod(0o600)
    token = Fernet(key.encode()).encrypt(PASSWORD.encode()).decode()
    assert decrypted_by_partdash(var, token) == PASSWORD  # the old place is still read

    said = run_keys(var, config)

    key_file = key_file_named_in(env_file)
    assert f"moved the encryption key out of {env_file}" in said and str(key_file) in said
    assert key in key_file.read_text() and key not in files_under(var)
    assert "SECRET_KEY=s3cret-key" in env_file.read_text()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert decrypted_by_partdash(var, token) == PASSWORD
    assert run_keys(var, config) == ""  # once


def test_an_old_key_is_not_moved_over_a_file_holding_other_keys(tmp_path):
    var, config = tmp_path / "var", tmp_path / "config"
    var.mkdir()
    key = Fernet.generate_key().decode()
    before = f"SECRET_KEY=s3cret-key\nPARTDASH_ENCRYPTION_KEYS={key}\n"
    (var / "partdash.env").write_text(before)
    elsewhere = tmp_path / "elsewhere.keys"
    elsewhere.write_text(Fernet.generate_key().decode() + "\n")

    said = run_keys(var, config, PARTDASH_ENCRYPTION_KEYS_FILE=str(elsewhere))

    assert "the encryption key stays in" in said and "holds other keys" in said
    assert (var / "partdash.env").read_text() == before
    assert key not in elsewhere.read_text()


def deploy_check(var: Path) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--tag", "security"],
        cwd=ROOT,
        env=clean_environment(var) | {"SECRET_KEY": "x" * 60},
        capture_output=True,
        text=True,
    )
    return result.stdout + result.stderr


def test_check_deploy_warns_of_a_key_beside_the_database_until_it_is_moved(tmp_path):
    var, config = tmp_path / "var", tmp_path / "config"
    var.mkdir()
    key = Fernet.generate_key().decode()
    (var / "partdash.env").write_text(f"PARTDASH_ENCRYPTION_KEYS={key}\nDEBUG=0\n")
    assert "partdash.W001" in deploy_check(var)
    run_keys(var, config)
    assert "partdash.W001" not in deploy_check(var)
