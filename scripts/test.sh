#!/usr/bin/env bash
# `make test`: install what the tests need, lint, validate docker/, run every test.
# Extra arguments go to pytest (scripts/test.sh -k api). Exits with pytest's status.
source "$(dirname "$0")/lib.sh"

ensure_packages /usr/sbin/mariadbd mariadb-server /usr/bin/mariadb-install-db mariadb-server \
  /usr/bin/redis-server redis-server /usr/bin/chromium chromium docker-compose docker-compose
ensure_venv requirements-dev.txt
ensure_frontend

say "ruff lint and format check; bash -n scripts/*.sh"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
for script in scripts/*.sh; do bash -n "$script"; done

say "validating docker/compose.yml (docker-compose config; no engine runs here)"
SECRET_KEY=ci PARTDASH_ENCRYPTION_KEYS=ci docker-compose -f docker/compose.yml config -q

say "running the test suite"
set +e
"$VENV/bin/pytest" "$@"
status=$?
set -e
exit $status
