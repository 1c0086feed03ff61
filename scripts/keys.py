"""`make up`'s keys: a random SECRET_KEY in var/partdash.env, and the Fernet key that
encrypts the monitored servers' passwords in a private file OUTSIDE var/, so that a copy of
var/ (a backup, a stolen disk) holds the encrypted passwords but not what decrypts them.

The key file is `$XDG_CONFIG_HOME/partdash/NAME-HASH.keys` (`~/.config/partdash/...`),
one per var/ directory (HASH is of its path), mode 0600 in a 0700 directory; or the file
PARTDASH_ENCRYPTION_KEYS_FILE names; or none when PARTDASH_ENCRYPTION_KEYS is set.
var/partdash.env names the file (PARTDASH_ENCRYPTION_KEYS_FILE=...), never the key.

An install from before this kept the key in var/partdash.env itself: it keeps working, and
this moves the key into the file and says so (settings read either place).

Usage: python scripts/keys.py VAR_DIR (scripts/up.sh runs it with the virtualenv's Python).
"""

import hashlib
import os
import secrets
import sys
from pathlib import Path

from cryptography.fernet import Fernet

KEYS = "PARTDASH_ENCRYPTION_KEYS"
KEYS_FILE = "PARTDASH_ENCRYPTION_KEYS_FILE"


def say(message: str) -> None:
    os.write(2, f"\033[1m==> {message}\033[0m\n".encode())


def default_keys_file(var: Path, environ: dict[str, str]) -> Path:
    """Where this var/'s key is kept by default: under the user's configuration directory,
    named after the install, so that two clones of one user never share a key file."""
    config = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    resolved = var.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
    install = resolved.parent.name or "partdash"
    return Path(config) / "partdash" / f"{install}-{digest}.keys"


def write_private(path: Path, text: str) -> None:
    """Write `path` (mode 0600, its directory 0700 when created) whole or not at all."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".new")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.replace(partial, path)


def key_text(var: Path, keys: list[str]) -> str:
    return (
        f"# partdash's encryption keys for {var.resolve()} (the first encrypts; all decrypt).\n"
        "# Keep this file, apart from var/ and its backups: without it the stored server\n"
        "# passwords cannot be decrypted.\n" + "".join(f"{key}\n" for key in keys)
    )


def keys_in(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [
        key.strip()
        for line in lines
        if not line.lstrip().startswith("#")
        for key in line.split(",")
        if key.strip()
    ]


def ensure_key_file(var: Path, path: Path) -> bool:
    """Create `path` with a new key unless it exists; True when it was created."""
    if path.exists():
        return False
    write_private(path, key_text(var, [Fernet.generate_key().decode()]))
    return True


def first_run(var: Path, env_file: Path, environ: dict[str, str]) -> None:
    lines = [f"SECRET_KEY={secrets.token_urlsafe(50)}"]
    if environ.get("PARTDASH_ENCRYPTION_KEYS"):
        say(f"generating keys: SECRET_KEY in {env_file}; encryption keys from the environment")
    else:
        path = Path(environ.get("PARTDASH_ENCRYPTION_KEYS_FILE") or default_keys_file(var, environ))
        created = ensure_key_file(var, path)
        lines.append(f"{KEYS_FILE}={path}")
        say(
            f"generating keys: SECRET_KEY in {env_file}; the encryption key in {path} "
            f"({'new, ' if created else ''}mode 0600, outside var/: keep it, and keep it out "
            "of var/'s backups; without it the stored passwords cannot be decrypted)"
        )
    lines += ["DEBUG=0", "PARTDASH_HTTPS=0"]
    write_private(env_file, "".join(f"{line}\n" for line in lines))


def move_old_key(var: Path, env_file: Path, environ: dict[str, str]) -> None:
    """An install from before: the key in var/partdash.env moves to its own file."""
    lines = env_file.read_text().splitlines()
    old = [line for line in lines if line.startswith(f"{KEYS}=")]
    if not old or environ.get("PARTDASH_ENCRYPTION_KEYS"):
        return
    keys = [key.strip() for key in old[-1].partition("=")[2].split(",") if key.strip()]
    path = Path(environ.get("PARTDASH_ENCRYPTION_KEYS_FILE") or default_keys_file(var, environ))
    if path.exists() and keys_in(path) != keys:
        say(
            f"warning: the encryption key stays in {env_file}, beside the database: {path} "
            f"exists and holds other keys (set {KEYS_FILE} to a new path to move it there)"
        )
        return
    if not path.exists():
        write_private(path, key_text(var, keys))
    kept = [line for line in lines if not line.startswith((f"{KEYS}=", f"{KEYS_FILE}="))]
    write_private(env_file, "".join(f"{line}\n" for line in [*kept, f"{KEYS_FILE}={path}"]))
    say(
        f"moved the encryption key out of {env_file} (beside the database) to {path} "
        "(mode 0600): keep that file, and keep it out of var/'s backups"
    )


def main(var: Path, environ: dict[str, str]) -> None:
    env_file = var / "partdash.env"
    if env_file.exists():
        move_old_key(var, env_file, environ)
    else:
        first_run(var, env_file, environ)


if __name__ == "__main__":
    os.umask(0o077)
    main(Path(sys.argv[1]), dict(os.environ))
