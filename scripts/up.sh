#!/usr/bin/env bash
# `make up`: set up everything, then run Redis (if none answers), a Celery worker,
# Celery beat and the web server in the foreground. Ctrl-C stops what it started.
source "$(dirname "$0")/lib.sh"

PORT=${PARTDASH_PORT:-8000}
BROKER=${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0}
DEMO_DSN=${PARTDASH_DEMO_DSN:-mysql://root@127.0.0.1:3306/}
VAR=${PARTDASH_VAR_DIR:-$ROOT/var}
export PARTDASH_VAR_DIR=$VAR
mkdir -p "$VAR/log"

ensure_venv requirements.txt
ensure_frontend

if [ ! -f "$VAR/partdash.env" ]; then
  say "generating keys in $VAR/partdash.env (keep it: it decrypts stored passwords)"
  "$PY" - > "$VAR/partdash.env" <<'PYEOF'
import secrets
from cryptography.fernet import Fernet
print(f"SECRET_KEY={secrets.token_urlsafe(50)}")
print(f"PARTDASH_ENCRYPTION_KEYS={Fernet.generate_key().decode()}")
print("DEBUG=0")
print("PARTDASH_HTTPS=0")
PYEOF
  chmod 600 "$VAR/partdash.env"
fi

manage() { "$PY" manage.py "$@"; }
say "migrating the metadata store"
manage migrate --no-input -v0
manage collectstatic --no-input -v0
manage ensureadmin

pids=()
stop_all() {
  trap - INT TERM HUP EXIT
  say "stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all INT TERM HUP EXIT

if ! redis_answers "$BROKER"; then
  redis_port=$("$PY" -c 'import sys; from urllib.parse import urlsplit; print(urlsplit(sys.argv[1]).port or 6379)' "$BROKER")
  ensure_packages redis-server redis-server
  say "no Redis answers at $BROKER: starting one on port $redis_port"
  mkdir -p "$VAR/redis"
  redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$VAR/redis" --save "" \
    --appendonly no --daemonize no --logfile "$VAR/log/redis.log" &
  pids+=($!)
  for _ in $(seq 50); do redis_answers "$BROKER" && break; sleep 0.1; done
  redis_answers "$BROKER" || die "Redis did not start; see $VAR/log/redis.log"
fi
export CELERY_BROKER_URL=$BROKER

if manage demo --dsn "$DEMO_DSN" --register demo --if-missing; then
  :
else
  say "no MySQL/MariaDB at $DEMO_DSN: no demo server (set PARTDASH_DEMO_DSN to use one)"
fi

say "starting the Celery worker and beat (logs in $VAR/log/)"
"$VENV/bin/celery" -A partdash worker --loglevel=INFO --concurrency="${PARTDASH_WORKERS:-4}" \
  --logfile="$VAR/log/worker.log" &
pids+=($!)
"$VENV/bin/celery" -A partdash beat --loglevel=INFO --schedule="$VAR/celerybeat-schedule" \
  --logfile="$VAR/log/beat.log" &
pids+=($!)

say "partdash is at http://127.0.0.1:$PORT/ (admin: http://127.0.0.1:$PORT/admin/); Ctrl-C stops"
"$VENV/bin/gunicorn" partdash.wsgi --bind "127.0.0.1:$PORT" --workers 2 --threads 4 \
  --access-logfile - --error-logfile - &
pids+=($!)

# Run until Ctrl-C, or until any of the processes exits.
wait -n "${pids[@]}" || true
die "a partdash process exited; see $VAR/log/"
