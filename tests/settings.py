"""Test settings: partdash's own settings with a private var/ directory and a file-backed
SQLite test database, so a real Celery worker in another process sees the same data.
With PARTDASH_TEST_STORE=postgres, the PostgreSQL at PARTDASH_TEST_POSTGRES instead
(`scripts/test.sh` runs the store-facing tests on both; see tests/pgstore.py)."""

import os
from pathlib import Path

TEST_VAR = Path(__file__).resolve().parent.parent / "var" / "test"
TEST_VAR.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("DEBUG", "1")
os.environ["PARTDASH_VAR_DIR"] = str(TEST_VAR)
if os.environ.get("PARTDASH_TEST_STORE", "sqlite") == "postgres":
    default_store = os.environ.get(
        "PARTDASH_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres"
    )
else:
    default_store = f"sqlite:///{TEST_VAR / 'partdash.sqlite3'}"
os.environ.setdefault("DATABASE_URL", default_store)
# Fuzzing and the matrix send thousands of requests as one user; the throttling tests set
# their own rates (tests/accounts/test_throttling.py).
for scope in ("ANON", "USER", "TOKEN"):
    os.environ.setdefault(f"PARTDASH_API_RATE_{scope}", "100000/min")

from partdash.settings import *  # noqa: E402,F403
from partdash.settings import DATABASES  # noqa: E402

# One database per test process, so concurrent test runs never share one.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(TEST_VAR / f"test-{os.getpid()}.sqlite3")}
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_partdash_{os.getpid()}"}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests press Test connection dozens of times a minute as the same user (ids repeat from
# one test to the next); tests/servers/test_test_connection_limits.py sets the limits.
PARTDASH_TEST_CONNECTION_PER_USER = 1000
PARTDASH_TEST_CONNECTION_PER_MINUTE = 100000
# Likewise test alerts (tests/alerts/test_test_alert_limits.py sets the limits).
PARTDASH_TEST_ALERT_PER_USER = 1000
PARTDASH_TEST_ALERT_PER_MINUTE = 100000
# A test alert's answer waits for the sender's process (Python and Apprise starting): 10 s
# by default, which a two-core machine running the whole suite can exceed. The deadline's
# own tests set theirs (tests/alerts/test_test_alert_limits.py).
PARTDASH_TEST_ALERT_SECONDS = 30
# Tests reuse server ids within seconds of each other: no "Poll now" debounce, except
# where a test turns it on (tests/api/test_poll_now.py).
PARTDASH_POLL_NOW_DEBOUNCE_SECONDS = 0
