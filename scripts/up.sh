#!/usr/bin/env bash
# `make up`: set up everything, then run Redis (if none answers), a Celery worker,
# Celery beat and the web server in the foreground (scripts/supervise.py). Ctrl-C stops
# what it started.
source "$(dirname "$0")/lib.sh"

PORT=${PARTDASH_PORT:-8000}
BROKER=${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0}
DEMO_DSN=${PARTDASH_DEMO_DSN:-mysql://root@127.0.0.1:3306/}
VAR=${PARTDASH_VAR_DIR:-$ROOT/var}
export PARTDASH_VAR_DIR=$VAR CELERY_BROKER_URL=$BROKER

ensure_venv requirements.txt
ensure_frontend

# var/ holds the database (API tokens, encrypted passwords), the keys and the logs: what
# is created from here on is the owner's alone, and a var/ from before this is tightened.
umask 077
mkdir -p "$VAR/log"
chmod -R go-rwx "$VAR" || say "warning: some files in $VAR could not be made private"

if [ ! -f "$VAR/partdash.env" ]; then
  "$PY" - > "$VAR/partdash.env.new" <<'PYEOF'
# A random SECRET_KEY, and a Fernet key in var/partdash.env itself unless the environment
# gives keys, or names a key file (written here when it does not exist yet).
import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet

env_file = Path(os.environ["PARTDASH_VAR_DIR"]) / "partdash.env"


def say(message):
    os.write(2, f"\033[1m==> {message}\033[0m\n".encode())


print(f"SECRET_KEY={secrets.token_urlsafe(50)}")
keys_file = os.environ.get("PARTDASH_ENCRYPTION_KEYS_FILE")
if os.environ.get("PARTDASH_ENCRYPTION_KEYS"):
    say(f"generating keys: SECRET_KEY in {env_file}; encryption keys from the environment")
elif keys_file:
    path = Path(keys_file)
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(Fernet.generate_key().decode() + "\n")
    print(f"PARTDASH_ENCRYPTION_KEYS_FILE={path}")
    say(f"generating keys: SECRET_KEY in {env_file}; the encryption key in {path}")
else:
    print(f"PARTDASH_ENCRYPTION_KEYS={Fernet.generate_key().decode()}")
    say(f"generating keys in {env_file} (keep it: it decrypts the stored passwords; "
        "README, Secrets: keeping the key out of backups)")
print("DEBUG=0")
print("PARTDASH_HTTPS=0")
PYEOF
  mv "$VAR/partdash.env.new" "$VAR/partdash.env"
fi

manage() { "$PY" manage.py "$@"; }
say "migrating the metadata store"
manage migrate --no-input -v0
manage collectstatic --no-input -v0
manage ensureadmin

redis_answers "$BROKER" || ensure_packages redis-server redis-server
exec "$PY" scripts/supervise.py --var "$VAR" --port "$PORT" --broker "$BROKER" \
  --demo-dsn "$DEMO_DSN" --workers "${PARTDASH_WORKERS:-4}"
