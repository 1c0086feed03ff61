#!/usr/bin/env bash
# `make bench`: run the benchmarks and print their figures.
source "$(dirname "$0")/lib.sh"
# prometheus-mysqld-exporter: the peer `make bench` compares partdash with (issue 41).
ensure_packages /usr/sbin/mariadbd mariadb-server /usr/bin/mariadb-install-db mariadb-server \
  /usr/bin/prometheus-mysqld-exporter prometheus-mysqld-exporter
ensure_venv requirements-dev.txt uv
ensure_frontend
# `make bench ARGS="--fleet-only --fleet-minutes 2"`: make passes ARGS in the environment.
# shellcheck disable=SC2086 # ARGS is split into words on purpose
"$PY" bench/run.py ${ARGS:-} "$@"
