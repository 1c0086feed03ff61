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
# command is missing (as root on Debian), or say what to install.
ensure_packages() {
  local missing=()
  while [ $# -gt 0 ]; do
    command -v "$1" >/dev/null 2>&1 || [ -x "$1" ] || missing+=("$2")
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

# ensure_venv REQUIREMENTS: create .venv and install pinned requirements when they changed.
ensure_venv() {
  local requirements=$1 stamp="$VENV/.installed-$(basename "$1")"
  ensure_python
  [ -x "$PY" ] || { say "creating virtualenv .venv"; python3 -m venv "$VENV"; }
  if [ ! -f "$stamp" ] || [ -n "$(find requirements*.txt -newer "$stamp")" ]; then
    say "installing $requirements"
    "$PY" -m pip install -q --disable-pip-version-check -r "$requirements"
    touch "$stamp"
  fi
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

# redis_answers URL: does a Redis answer PING at URL?
redis_answers() {
  "$PY" - "$1" <<'PYEOF'
import sys, redis
try:
    redis.Redis.from_url(sys.argv[1], socket_connect_timeout=2).ping()
except Exception:
    sys.exit(1)
PYEOF
}
