"""Files only partdash's own user may read.

`var/` holds the metadata store (API tokens, session keys, encrypted server passwords),
the keys `make up` generates and the logs; the encryption keys may also live in a file
of their own outside `var/`, so that a backup of `var/` cannot decrypt anything.
"""

import os
import stat
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

# Whatever a partdash process creates (the SQLite file and its -wal/-shm companions, logs,
# the beat schedule) is readable by its owner alone.
PRIVATE_UMASK = 0o077


def private_directory(path: Path) -> None:
    """Create `path` with mode 0700, or take group and other access away from it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    tighten(path)


def tighten(*paths: Path) -> None:
    """Take group and other access away from each existing path this user owns (installs
    from before partdash enforced this had a world-readable var/ and database)."""
    for path in paths:
        try:
            status = path.stat()
        except FileNotFoundError:
            continue
        if status.st_uid == os.geteuid() and status.st_mode & 0o077:
            path.chmod(stat.S_IMODE(status.st_mode) & 0o700)


def read_keys_file(path: str) -> list[str]:
    """The Fernet keys in `path`: one per line or comma-separated; blank lines and lines
    starting with # are skipped. A file other users can read or write is refused, as ssh
    refuses such a private key."""
    name = "PARTDASH_ENCRYPTION_KEYS_FILE"
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ImproperlyConfigured(f"{name}: cannot read {path}: {reason}") from None
    if mode & 0o007:
        raise ImproperlyConfigured(
            f"{name}: {path} is open to other users (mode {mode:04o}); "
            f"run `chmod 600 {path}` (or 640 with a group only partdash's user is in)"
        )
    keys = [
        key.strip()
        for line in text.splitlines()
        if not line.lstrip().startswith("#")
        for key in line.split(",")
        if key.strip()
    ]
    if not keys:
        raise ImproperlyConfigured(f"{name}: {path} holds no key")
    return keys
