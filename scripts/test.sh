#!/usr/bin/env bash
# `make test`: install what the tests need, then run at the same time the checks (lint,
# types, import layers, the docs, docker/), every test on SQLite, and the store-facing tests
# (those using the Django test database, see tests/pgstore.py) on PostgreSQL:
# $PARTDASH_TEST_POSTGRES, else the one at 127.0.0.1:5432, else a private one started here
# and stopped at the end. Each pass runs on pytest-xdist workers (6 for SQLite, 3 for
# PostgreSQL; PARTDASH_TEST_WORKERS sets both, 0 runs each pass in one process). Extra
# arguments go to both pytest runs (scripts/test.sh -k api); PARTDASH_TEST_STORES=sqlite (or
# postgres) runs one pass only. Ends by printing the checks' output if they failed, the 25
# slowest tests, then the tests that failed (test-artifacts/output-STORE.log holds each
# pass's output); exits with the first failing pass's status (the checks' included), 0 when
# all pass.
source "$(dirname "$0")/lib.sh"
# Each step says when it started, in seconds since `make test` did.
started_at=$(date +%s)
say() { printf '\033[1m==> [%4ss] %s\033[0m\n' "$(($(date +%s) - started_at))" "$*"; }

ensure_packages /usr/sbin/mariadbd mariadb-server /usr/bin/mariadb-install-db mariadb-server \
  /usr/bin/redis-server redis-server /usr/bin/chromium chromium docker-compose docker-compose \
  /usr/bin/promtool prometheus /usr/bin/prometheus-alertmanager prometheus-alertmanager \
  /usr/sbin/slapd slapd /usr/bin/ldapsearch ldap-utils \
  /usr/bin/prometheus-mysqld-exporter prometheus-mysqld-exporter node nodejs npm npm
ensure_postgres_packages  # the PostgreSQL pass, and the tests that start a PostgreSQL of their own
# The front end (npm ci, the bundles: 5 s) is built beside the virtualenv (uv: 6-12 s), and
# waited for before the checks (ESLint) and the tests (the pages) start. Node and npm are
# in the list above so that its own ensure_packages finds them: two apt-gets at once
# would fight over apt's lock.
ensure_frontend &
frontend_pid=$!
ensure_venv requirements-dev.txt uv

# The checks (lint, types, import layers, front-end lint, the docs, docker/) run beside
# the two test passes rather than before them: they cost about 15 s of one core in a fresh
# clone (mypy 7 s, ESLint 3 s, mkdocs 2 s) and would otherwise add their whole time to
# the run's. Their output goes to test-artifacts/checks.log, printed at the end; a failing
# check fails `make test` as a failing test does.
run_checks() {
  set -e
  say "ruff lint and format check"
  "$VENV/bin/ruff" check .
  "$VENV/bin/ruff" format --check .
  say "mypy"
  "$VENV/bin/mypy" # the packages and the cache (var/) are in pyproject.toml
  say "import layers (lint-imports)"
  "$VENV/bin/lint-imports" --no-cache --no-logo
  say "front-end lint (ESLint, Prettier); bash -n scripts/*.sh"
  (cd frontend && npm run --silent lint)
  for script in scripts/*.sh; do bash -n "$script"; done
  # Not -q: it hides the warnings that --strict turns into a failure (a broken link or
  # anchor, a page missing from the nav).
  say "building the docs (mkdocs build --strict)"
  NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict
  say "validating docker/compose.yml (docker-compose config; no engine runs here)"
  SECRET_KEY=ci PARTDASH_ENCRYPTION_KEYS=ci POSTGRES_PASSWORD=ci \
    docker-compose -f docker/compose.yml config -q
  say "checks passed"
}

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
# processes), so they run at the same time, each on pytest-xdist workers that take a
# module at a time, longest first (tests/timing.py). Their output is prefixed with the
# pass's name.
stores=${PARTDASH_TEST_STORES:-sqlite postgres}
# Workers per pass. The SQLite pass has more: some of its workers spend minutes on the
# xdist groups (make up from a fresh clone, the timed fault tests), which mostly wait.
# Most tests wait (a poll's interval, a server frozen, a worker restarting): with 6 and 3
# workers a run used 1.3 of the two cores on average; with 8 and 4, 1.6; 10 and 4 gave
# 629 s on one machine, but on one twice as slow (pytest --collect-only 4.5-5.2 s of CPU
# against 2.2 s) the tests that time a worker, a scrape or a restart were starved (load
# average 20) and ten failed in a run, different ones each time. 6 and 3 leave each test about the
# share of a core it had at 10 and 4 on the faster machine. With the PostgreSQL pass
# narrowed to the store's tests (it ends about half way), 7 and 2 were tried: 629 s in a
# fresh clone against 581 s with 6 and 3 (its pass took 513 s on two workers, 271 s on
# three).
declare -A workers=([sqlite]=${PARTDASH_TEST_WORKERS:-6} [postgres]=${PARTDASH_TEST_WORKERS:-3})
# A test that fails is run once more, after 2 s (pytest-rerunfailures); one that passes
# then is listed as RERUN at the end of the run (and in test-artifacts/output-STORE.log):
# a noisy two-core machine can starve a timed test, while a product error fails both runs.
reruns=(--reruns 1 --reruns-delay 2 -rR)
artifacts="$ROOT/test-artifacts"
mkdir -p "$artifacts"
rm -f "$artifacts"/times-*.json "$artifacts"/cpu-*.json "$artifacts"/reruns-*.json
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
    "${reruns[@]}" "$@" 2>&1 | sed -u "s/^/[$store] /" | tee "$artifacts/output-$store.log"
  local pytest_status=${PIPESTATUS[0]}
  # 5 on PostgreSQL: the arguments selected no store-facing test; the SQLite pass said
  # whether any ran.
  [ "$store" = postgres ] && [ "$pytest_status" = 5 ] && [[ " $stores " == *" sqlite "* ]] &&
    pytest_status=0
  return "$pytest_status"
}

wait "$frontend_pid" || die "the front end did not build (above)"
say "starting the checks (lint, types, docs, docker/) beside the tests: test-artifacts/checks.log"
(run_checks >"$artifacts/checks.log" 2>&1) &
checks_pid=$!

# Every pytest process (two controllers, twelve workers) collects every test module, and
# pytest rewrites each module's asserts before compiling it. Started together on a fresh
# clone, each did that work itself: 9.6 s of CPU each, against 2.2 s with the rewritten
# modules (and partdash's bytecode) already in var/pycache. One collection first fills it.
say "compiling the tests and partdash once (pytest --collect-only), for every worker to reuse"
PARTDASH_TEST_STORE=sqlite "$VENV/bin/python" -m pytest -p tests.pgstore --collect-only -q \
  >"$artifacts/collect.log" 2>&1 || true # a collection error is the passes' to report

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
set +e
wait "$checks_pid"
checks_status=$?
set -e
if [ "$checks_status" = 0 ]; then
  say "the checks passed (test-artifacts/checks.log)"
else
  cat "$artifacts/checks.log"
  say "the checks failed with status $checks_status (above; test-artifacts/checks.log)"
  [ "$status" = 0 ] && status=$checks_status
fi
"$PY" scripts/slowest.py "$artifacts"/times-*.json || true
# Last, where a CI log's tail shows it: each pass's status and the tests that failed or
# erred (pytest's short summary), so a red run says why without the whole log.
for store in $stores; do
  grep -E "^\[$store\] (RERUN|FAILED|ERROR) " "$artifacts/output-$store.log" || true
  if [ -s "$artifacts/reruns-$store.json" ]; then
    say "why each $store RERUN failed first: test-artifacts/reruns-$store.json"
  fi
done
say "make test: exit status $status"
exit $status
