# Shared setup steps for `make up`, `make test` and `make bench`. Each step is safe to
# run again: it does nothing when its work is already done.

set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
cd "$ROOT"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ensure_packages CMD PACKAGE [CMD PACKAGE ...]: apt-get install the packages whose
# command (or file, given by its path: a header) is missing (as root on Debian), or say
# what to install.
ensure_packages() {
  local missing=()
  while [ $# -gt 0 ]; do
    command -v "$1" >/dev/null 2>&1 || [ -e "$1" ] || missing+=("$2")
    shift 2
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    die "missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]}) and run again"
  fi
}

ensure_python() {
  command -v python3 >/dev/null 2>&1 || ensure_packages python3 python3
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "partdash needs Python 3.11 or newer (found $(python3 --version))"
  python3 -c 'import ensurepip, venv' 2>/dev/null || ensure_packages /nonexistent/python3-venv python3-venv
}

# ensure_ldap_build: what pip needs to build python-ldap (LDAP sign-on), which the package
# registry carries as source only: a C compiler, Python's headers, OpenLDAP's and SASL's.
ensure_ldap_build() {
  "$PY" -c 'import ldap' 2>/dev/null && return 0
  ensure_packages gcc gcc /usr/include/ldap.h libldap-dev /usr/include/sasl/sasl.h libsasl2-dev \
    "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" python3-dev
}

# ensure_venv REQUIREMENTS [uv]: create .venv and install pinned requirements when they
# changed (with uv if asked, see install_requirements).
ensure_venv() {
  local requirements=$1 installer=${2:-pip} stamp="$VENV/.installed-$(basename "$1")"
  ensure_python
  [ -x "$PY" ] || { say "creating virtualenv .venv"; python3 -m venv "$VENV"; }
  if [ ! -f "$stamp" ] || [ -n "$(find requirements*.txt -newer "$stamp")" ]; then
    ensure_ldap_build
    say "installing $requirements"
    install_requirements "$requirements" "$installer"
    touch "$stamp"
  fi
}

# The uv that `make test` and `make bench` install with.
UV_VERSION=0.13.9

# install_requirements FILE [uv]: install FILE into .venv with pip, or with a pinned uv
# that pip first installs into .venv (`make test`, `make bench`): uv fetches and unpacks
# in parallel, 6 s against pip's 22 s (on one core) for requirements-dev.txt into a new
# virtualenv. `make up` keeps pip, which reads the machine's pip configuration (an index
# mirror, constraints) that uv does not. If uv cannot be installed or fails, pip does the
# work, and says so.
install_requirements() {
  local requirements=$1 installer=${2:-pip}
  if [ "$installer" = uv ]; then
    if pip_install "uv==$UV_VERSION" &&
      "$VENV/bin/uv" pip install --quiet --python "$PY" -r "$requirements"; then
      return 0
    fi
    say "uv could not install $requirements: installing it with pip"
  fi
  pip_install -r "$requirements"
}

# pip_install ARGS...: pip install into .venv, quietly. --no-compile (uv compiles nothing
# either): Python compiles what is imported, when it is; compiling all of site-packages up
# front was a third of the install's CPU (8 of 22 s for requirements-dev.txt), and `make
# test` keeps its bytecode elsewhere (var/pycache).
pip_install() {
  "$PY" -m pip install -q --disable-pip-version-check --no-compile "$@"
}

ensure_frontend() {
  ensure_packages node nodejs npm npm
  if [ ! -f frontend/node_modules/.stamp ] || [ frontend/package-lock.json -nt frontend/node_modules/.stamp ]; then
    say "installing front-end packages (npm ci)"
    (cd frontend && npm ci --no-audit --no-fund --loglevel=error)
    touch frontend/node_modules/.stamp
  fi
  say "building the front end"
  (cd frontend && npm run --silent build >/dev/null)
}

# default_base_url PORT VAR: export PARTDASH_BASE_URL, where the links in emails and
# webhooks (Page, Silence, Acknowledge) point, as the address served on PORT, unless the
# environment or VAR/partdash.env already says where users reach partdash (a proxy, a
# host name). Without it, `PARTDASH_PORT=8091 make up` sent links to port 8000.
default_base_url() {
  local port=$1 var=$2
  [ -n "${PARTDASH_BASE_URL:-}" ] && return 0
  grep -qs '^PARTDASH_BASE_URL=' "$var/partdash.env" && return 0
  export PARTDASH_BASE_URL="http://127.0.0.1:$port"
}

# redis_answers: does a Redis answer PING at CELERY_BROKER_URL? (The URL may hold a
# password: it is read from the environment, never put on a command line, which every
# user of the machine can read.)
redis_answers() {
  "$PY" - <<'PYEOF'
import os, sys, redis
try:
    redis.Redis.from_url(os.environ["CELERY_BROKER_URL"], socket_connect_timeout=2).ping()
except Exception:
    sys.exit(1)
PYEOF
}

# postgres_bindir: where Debian's PostgreSQL server binaries are (the newest version), if any.
postgres_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

# ensure_postgres_packages: Debian's PostgreSQL server and client (versioned paths).
ensure_postgres_packages() {
  [ -n "$(postgres_bindir)" ] && command -v pg_isready >/dev/null 2>&1 \
    || ensure_packages /nonexistent/postgresql postgresql
}

# ensure_postgres_for_tests: export PARTDASH_TEST_POSTGRES, the PostgreSQL the store-facing
# tests run on: the URL already in PARTDASH_TEST_POSTGRES if one is, else the one at
# 127.0.0.1:5432 when it answers, else (or with PARTDASH_TEST_POSTGRES=private) a private
# one (initdb into a temporary directory, trust authentication, 127.0.0.1 and a free port
# only, as the `postgres` user since initdb refuses root) that stop_private_postgres stops.
PRIVATE_PGDATA=""
ensure_postgres_for_tests() {
  ensure_postgres_packages
  case "${PARTDASH_TEST_POSTGRES:-}" in
    private) ;;
    ?*) return 0 ;;
    *)
      if pg_isready -q -h 127.0.0.1 -p 5432 -t 3; then
        export PARTDASH_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres
        return 0
      fi
      ;;
  esac
  local bin port owner
  bin=$(postgres_bindir)
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  owner=$(id -un)
  [ "$(id -u)" = 0 ] && owner=postgres
  PRIVATE_PGDATA=$(mktemp -d /tmp/partdash-test-pg.XXXXXX)
  chown "$owner" "$PRIVATE_PGDATA"
  say "starting a private PostgreSQL on 127.0.0.1:$port"
  as_user "$owner" "$bin/initdb" -D "$PRIVATE_PGDATA/data" -U postgres -A trust --no-sync >/dev/null
  as_user "$owner" "$bin/pg_ctl" -D "$PRIVATE_PGDATA/data" -l "$PRIVATE_PGDATA/log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $PRIVATE_PGDATA -c fsync=off" start >/dev/null \
    || die "the private PostgreSQL did not start: $(tail -n 20 "$PRIVATE_PGDATA/log")"
  export PARTDASH_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
}

# stop_private_postgres: stop and remove what ensure_postgres_for_tests started, if anything.
stop_private_postgres() {
  [ -n "$PRIVATE_PGDATA" ] || return 0
  as_user "$(stat -c %U "$PRIVATE_PGDATA")" "$(postgres_bindir)/pg_ctl" \
    -D "$PRIVATE_PGDATA/data" -m fast -w stop >/dev/null || true
  rm -rf "$PRIVATE_PGDATA"
  PRIVATE_PGDATA=""
}

# as_user USER CMD...: run CMD as USER (this user: directly; root: through runuser).
as_user() {
  local user=$1
  shift
  if [ "$user" = "$(id -un)" ]; then "$@"; else runuser -u "$user" -- "$@"; fi
}
