#!/usr/bin/env bash
# `make up`: set up everything, then run Redis (if none answers), a Celery worker,
# Celery beat and the web server in the foreground (scripts/supervise.py). Ctrl-C stops
# what it started.
source "$(dirname "$0")/lib.sh"

PORT=${PARTDASH_PORT:-8000}
BROKER=${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0}
DEMO_DSN=${PARTDASH_DEMO_DSN:-mysql://root@127.0.0.1:3306/}
VAR=${PARTDASH_VAR_DIR:-$ROOT/var}
# Credentials (the broker URL, the demo DSN) go to the processes by their environment,
# never their command line, which every user of the machine can read (`ps -ef`).
export PARTDASH_VAR_DIR=$VAR CELERY_BROKER_URL=$BROKER PARTDASH_DEMO_DSN=$DEMO_DSN
default_base_url "$PORT" "$VAR"

ensure_venv requirements.txt
ensure_frontend

# var/ holds the database (API tokens, encrypted passwords), the keys and the logs: what
# is created from here on is the owner's alone, and a var/ from before this is tightened.
umask 077
mkdir -p "$VAR/log"
chmod -R go-rwx "$VAR" || say "warning: some files in $VAR could not be made private"

# SECRET_KEY in var/partdash.env; the encryption key in a private file outside var/, so a
# copy of var/ cannot decrypt the stored passwords (an older var/partdash.env's key is
# moved there, with a message saying where).
"$PY" scripts/keys.py "$VAR"

say "migrating the metadata store"
"$PY" scripts/prepare.py # migrate, collectstatic and ensureadmin, in one process

redis_answers || ensure_packages redis-server redis-server
exec "$PY" scripts/supervise.py --var "$VAR" --port "$PORT" --workers "${PARTDASH_WORKERS:-4}"
