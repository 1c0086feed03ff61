"""A real Prometheus (Debian's `prometheus`, which `make test` installs) for the tests that
scrape partdash with it: `running` starts one on a free port with a config of the test's,
and `api` reads its HTTP API."""

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.services import free_port, spawn, terminate

BINARY = "/usr/bin/prometheus"


@contextmanager
def running(directory: Path, config: str) -> Iterator[tuple[str, Path]]:
    """Prometheus with `config`, its data and log in `directory`: its URL and its log."""
    if not Path(BINARY).exists():
        pytest.fail(f"{BINARY} is missing: `make test` installs prometheus")
    (directory / "prometheus.yml").write_text(config)
    port, log = free_port(), directory / "prometheus.log"
    argv = [
        BINARY,
        f"--config.file={directory / 'prometheus.yml'}",
        f"--storage.tsdb.path={directory / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    process = spawn(argv, log)
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:
        terminate(process, timeout=10)


def api(url: str, path: str, **query) -> dict:
    """The `data` of Prometheus's answer to GET /api/v1/PATH?QUERY."""
    address = f"{url}/api/v1/{path}?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(address, timeout=5) as answer:
        return json.load(answer)["data"]
