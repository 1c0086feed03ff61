"""Test settings: partdash's own settings with a private var/ directory and a file-backed
SQLite test database, so a real Celery worker in another process sees the same data."""

import os
from pathlib import Path

TEST_VAR = Path(__file__).resolve().parent.parent / "var" / "test"
TEST_VAR.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("DEBUG", "1")
os.environ["PARTDASH_VAR_DIR"] = str(TEST_VAR)
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TEST_VAR / 'partdash.sqlite3'}")
# Fuzzing and the matrix send thousands of requests as one user; the throttling tests set
# their own rates (tests/accounts/test_throttling.py).
for scope in ("ANON", "USER", "TOKEN"):
    os.environ.setdefault(f"PARTDASH_API_RATE_{scope}", "100000/min")

from partdash.settings import *  # noqa: E402,F403
from partdash.settings import DATABASES  # noqa: E402

# One file per test process, so concurrent test runs never share a database.
DATABASES["default"]["TEST"] = {"NAME": str(TEST_VAR / f"test-{os.getpid()}.sqlite3")}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests reuse server ids within seconds of each other: no "Poll now" debounce, except
# where a test turns it on (tests/api/test_poll_now.py).
PARTDASH_POLL_NOW_DEBOUNCE_SECONDS = 0
