#!/usr/bin/env bash
# `make bench`: run the benchmarks and print their figures.
source "$(dirname "$0")/lib.sh"
ensure_packages /usr/sbin/mariadbd mariadb-server /usr/bin/mariadb-install-db mariadb-server
ensure_venv requirements-dev.txt
ensure_frontend
"$PY" bench/run.py "$@"
