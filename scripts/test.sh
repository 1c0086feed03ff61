#!/usr/bin/env bash
# `make test`: install what the tests need, lint, validate docker/, run every test on
# SQLite, then the store-facing tests (those using the Django test database, see
# tests/pgstore.py) on PostgreSQL: $PARTDASH_TEST_POSTGRES, else the one at
# 127.0.0.1:5432, else a private one started here and stopped at the end. Extra
# arguments go to both pytest runs (scripts/test.sh -k api); PARTDASH_TEST_STORES=sqlite
# (or postgres) runs one pass only. Exits with the first failing pass's pytest status,
# 0 when both pass.
source "$(dirname "$0")/lib.sh"

ensure_packages /usr/sbin/mariadbd mariadb-server /usr/bin/mariadb-install-db mariadb-server \
  /usr/bin/redis-server redis-server /usr/bin/chromium chromium docker-compose docker-compose
ensure_postgres_packages  # the PostgreSQL pass, and the tests that start a PostgreSQL of their own
ensure_venv requirements-dev.txt
ensure_frontend

say "ruff lint and format check; front-end lint (ESLint, Prettier); bash -n scripts/*.sh"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
(cd frontend && npm run --silent lint)
for script in scripts/*.sh; do bash -n "$script"; done

# Not -q: it hides the warnings that --strict turns into a failure (a broken link or
# anchor, a page missing from the nav).
say "building the docs (mkdocs build --strict)"
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict

say "validating docker/compose.yml (docker-compose config; no engine runs here)"
SECRET_KEY=ci PARTDASH_ENCRYPTION_KEYS=ci POSTGRES_PASSWORD=ci docker-compose -f docker/compose.yml config -q

stores=${PARTDASH_TEST_STORES:-sqlite postgres}
status=0
if [[ " $stores " == *" sqlite "* ]]; then
  say "running the test suite (metadata store: SQLite)"
  set +e
  "$VENV/bin/python" -m pytest -p tests.pgstore "$@"
  status=$?
  set -e
fi
if [[ " $stores " == *" postgres "* ]]; then
  ensure_postgres_for_tests
  trap stop_private_postgres EXIT
  say "running the store-facing tests (metadata store: PostgreSQL at ${PARTDASH_TEST_POSTGRES#*@})"
  set +e
  PARTDASH_TEST_STORE=postgres "$VENV/bin/python" -m pytest -p tests.pgstore "$@"
  pg_status=$?
  set -e
  # 5: the arguments selected no store-facing test; the SQLite pass said whether any ran.
  [ "$pg_status" = 5 ] && [[ " $stores " == *" sqlite "* ]] && pg_status=0
  [ "$status" = 0 ] && status=$pg_status
fi
exit $status
