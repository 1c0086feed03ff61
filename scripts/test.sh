#!/usr/bin/env bash
# `make test`: install what the tests need, lint, build the docs, validate docker/, then
# run every test on SQLite and, at the same time, the store-facing tests (those using the
# Django test database, see tests/pgstore.py) on PostgreSQL: $PARTDASH_TEST_POSTGRES, else
# the one at 127.0.0.1:5432, else a private one started here and stopped at the end. Each
# pass runs on pytest-xdist workers (6 for SQLite, 3 for PostgreSQL; PARTDASH_TEST_WORKERS
# sets both, 0 runs each pass in one process). Extra arguments go to both pytest runs (scripts/test.sh -k api);
# PARTDASH_TEST_STORES=sqlite (or postgres) runs one pass only. Ends by printing the 25
# slowest tests, then the tests that failed (test-artifacts/output-STORE.log holds each
# pass's output); exits with the first failing pass's pytest status, 0 when both pass.
source "$(dirname "$0")/lib.sh"

ensure_packages /usr/sbin/mariadbd mariadb-server /usr/bin/mariadb-install-db mariadb-server \
  /usr/bin/redis-server redis-server /usr/bin/chromium chromium docker-compose docker-compose \
  /usr/bin/promtool prometheus /usr/bin/prometheus-alertmanager prometheus-alertmanager \
  /usr/sbin/slapd slapd /usr/bin/ldapsearch ldap-utils
ensure_postgres_packages  # the PostgreSQL pass, and the tests that start a PostgreSQL of their own
ensure_venv requirements-dev.txt
ensure_frontend

say "ruff lint and format check; mypy; import layers (lint-imports); front-end lint (ESLint, Prettier); bash -n scripts/*.sh"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
"$VENV/bin/mypy"  # the packages and the cache (var/) are in pyproject.toml
"$VENV/bin/lint-imports" --no-cache --no-logo
(cd frontend && npm run --silent lint)
for script in scripts/*.sh; do bash -n "$script"; done

# Not -q: it hides the warnings that --strict turns into a failure (a broken link or
# anchor, a page missing from the nav).
say "building the docs (mkdocs build --strict)"
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict

say "validating docker/compose.yml (docker-compose config; no engine runs here)"
SECRET_KEY=ci PARTDASH_ENCRYPTION_KEYS=ci POSTGRES_PASSWORD=ci docker-compose -f docker/compose.yml config -q

# Compiled bytecode, kept: a PYTHONDONTWRITEBYTECODE=1 environment (Docker images set it)
# has each of the 9 pytest workers rewrite and compile every test module again (9 s of CPU
# each against 3 s, measured) and every manage.py and Celery process compile partdash
# again. The caches go to var/pycache, so the tree stays free of __pycache__ folders.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$ROOT/var/pycache"
# What the tests' own temporary trees compiled (the make-up test's fresh clone and its
# virtualenv: about 190 MB a run) is of no use to the next run.
rm -rf "$PYTHONPYCACHEPREFIX/tmp"

# The two passes share nothing (each has its own test databases, MariaDB, Redis and Celery
# processes), so they run at the same time, each on pytest-xdist workers that take the
# longest tests first (tests/timing.py). Their output is prefixed with the pass's name.
stores=${PARTDASH_TEST_STORES:-sqlite postgres}
# Workers per pass. The SQLite pass has more: two of its workers spend minutes on the
# xdist groups (make up from a fresh clone, the timed fault tests), which mostly wait.
declare -A workers=([sqlite]=${PARTDASH_TEST_WORKERS:-6} [postgres]=${PARTDASH_TEST_WORKERS:-3})
artifacts="$ROOT/test-artifacts"
mkdir -p "$artifacts"
rm -f "$artifacts"/times-*.json "$artifacts"/cpu-*.json
if [[ " $stores " == *" postgres "* ]]; then
  ensure_postgres_for_tests
  trap stop_private_postgres EXIT
fi

# run_pass STORE [PYTEST ARGS]: one pass; exits with pytest's status.
run_pass() {
  local store=$1
  shift
  set +e
  PARTDASH_TEST_STORE=$store PARTDASH_TEST_TIMES="$artifacts/times-$store.json" \
    "$VENV/bin/python" -m pytest -p tests.pgstore -p tests.timing -n "${workers[$store]}" --dist loadgroup \
    "$@" 2>&1 | sed -u "s/^/[$store] /" | tee "$artifacts/output-$store.log"
  local pytest_status=${PIPESTATUS[0]}
  # 5 on PostgreSQL: the arguments selected no store-facing test; the SQLite pass said
  # whether any ran.
  [ "$store" = postgres ] && [ "$pytest_status" = 5 ] && [[ " $stores " == *" sqlite "* ]] &&
    pytest_status=0
  return "$pytest_status"
}

declare -A pids
for store in $stores; do
  case $store in
    sqlite) say "running the test suite (metadata store: SQLite), ${workers[sqlite]} workers" ;;
    postgres) say "running the store-facing tests (metadata store: PostgreSQL at ${PARTDASH_TEST_POSTGRES#*@}), ${workers[postgres]} workers" ;;
    *) die "PARTDASH_TEST_STORES: unknown store '$store' (sqlite, postgres)" ;;
  esac
  run_pass "$store" "$@" &
  pids[$store]=$!
done

status=0
for store in $stores; do
  set +e
  wait "${pids[$store]}"
  pass_status=$?
  set -e
  say "the $store pass ended with status $pass_status"
  [ "$status" = 0 ] && status=$pass_status
done
"$PY" scripts/slowest.py "$artifacts"/times-*.json || true
# Last, where a CI log's tail shows it: each pass's status and the tests that failed or
# erred (pytest's short summary), so a red run says why without the whole log.
for store in $stores; do
  grep -E "^\[$store\] (FAILED|ERROR) " "$artifacts/output-$store.log" || true
done
say "make test: exit status $status"
exit $status
