"""`make bench`'s fleet pages at a thousand servers (issue 41, point 2): a store of 1,000
servers with two tables each, every table with a finding and one server in five with a
firing alert (tests/builders.py `fleet_of`, in bulk), served by gunicorn as `make up`
serves it, asked by 8 clients at a time for:

- the fleet page as a browser loads it: the HTML, then the three API reads its script
  makes (a page of 50 servers worst first, the worst findings, the alert counts), timed
  one after the other (the browser makes the three at once: this is an upper bound),
  then at once as fleet.js makes them, and one after the other with 1 and 4 clients;
- the server list's first page (`?limit=50&ordering=worst`), the whole server list as
  unpaged clients read it, `/api/v1/findings/` (its default and its first page), and
  `/metrics` (the whole fleet, and one server's `?server=NAME` as a federating
  Prometheus asks for it), with the scrape's series and bytes.

Prints one JSON object and a line per figure with its target (the fleet page's p95 at
most 1 s, /metrics's at most 500 ms); exits 1 when one is missed.

Or, with `--database URL`, the pages of a store a polled fleet left (`fleet_sim.py
--keep-store`: its servers, tables and findings as the real processes stored them).

Usage: fleet_pages_bench.py [VAR_DIR] [--servers N]   (a fresh temporary one by default)
       fleet_pages_bench.py [VAR_DIR] --database postgres://...
"""

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from api_bench import (  # noqa: E402
    exposition_figures,
    fresh_store,
    issue_credentials,
    start_web,
    summary,
    timed_get,
)

CLIENTS = 8
REQUESTS = 80  # per figure
TARGET_FLEET_PAGE_MS = 1000
TARGET_METRICS_MS = 500  # "well under 1 s" under 8 clients at once on 2 cores
FLEET_PAGE_READS = (
    "/api/v1/servers/?limit=50&offset=0&ordering=worst",
    "/api/v1/findings/?limit=150",
    "/api/v1/alerts/counts/",
)


def fleet_page(base: str, page: dict) -> float:
    """The fleet page's HTML, then the reads its script makes, one after the other: ms."""
    started = time.monotonic()
    timed_get(f"{base}/", page)
    for path in FLEET_PAGE_READS:
        timed_get(base + path, page)
    return (time.monotonic() - started) * 1000


def fleet_page_at_once(base: str, page: dict, pool: ThreadPoolExecutor) -> float:
    """The fleet page as its script loads it: the HTML, then its three reads at once
    (`Promise.all` in fleet.js): ms until the last answers."""
    started = time.monotonic()
    timed_get(f"{base}/", page)
    list(pool.map(lambda path: timed_get(base + path, page), FLEET_PAGE_READS))
    return (time.monotonic() - started) * 1000


def p95_of(read, requests: int = REQUESTS, clients: int = CLIENTS) -> dict:
    read()  # warm: the first request loads code and fills caches
    with ThreadPoolExecutor(clients) as pool:
        return summary(list(pool.map(lambda _: read(), range(requests))))


def prepare(var_dir: Path, servers: int, database: str | None) -> tuple[str, str]:
    """A fresh store of `servers` servers, or the store at `database` as it is: a staff
    user's token and session cookie."""
    if database:
        os.environ["DATABASE_URL"] = database
    fresh_store(var_dir)
    if not database:
        from tests import builders

        builders.fleet_of(servers)
    return issue_credentials()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("var_dir", nargs="?", type=Path)
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--database", help="an existing store's URL (fleet_sim --keep-store)")
    options = parser.parse_args()
    var_dir = options.var_dir or Path(tempfile.mkdtemp(prefix="fleet-pages-"))
    token, session = prepare(var_dir, options.servers, options.database)
    from partdash.servers.models import Server

    options.servers = Server.objects.count()
    one = Server.objects.order_by("name").values_list("name", flat=True)[options.servers // 2]
    rendered = exposition_figures(repeats=10)  # in this process, one at a time
    api = {"Authorization": f"Token {token}"}
    page = {"Cookie": f"sessionid={session}"}
    web, base = start_web(os.environ.copy(), api)
    try:
        figures = {
            "page: GET / (fleet) and its three API reads": p95_of(lambda: fleet_page(base, page)),
        }
        with ThreadPoolExecutor(len(FLEET_PAGE_READS) * CLIENTS) as reads:
            figures["page: GET / (fleet), then its three reads at once (as fleet.js)"] = p95_of(
                lambda: fleet_page_at_once(base, page, reads)
            )
        for fewer in (1, 4):  # the same page with fewer browsers loading it at once
            figures[f"page: the same, {fewer} client{'s' * (fewer > 1)} at a time"] = p95_of(
                lambda: fleet_page(base, page), REQUESTS // 2, fewer
            )
        for label, path in {
            "list: GET /api/v1/servers/?limit=50&ordering=worst": FLEET_PAGE_READS[0],
            "list: GET /api/v1/servers/ (unpaged, every server)": "/api/v1/servers/",
            "list: GET /api/v1/findings/": "/api/v1/findings/",
            "list: GET /api/v1/findings/?limit=50&offset=0": "/api/v1/findings/?limit=50&offset=0",
            "metrics: GET /metrics": "/metrics",
            f"metrics: GET /metrics?server={one} (one server, federation)": (
                f"/metrics?server={one}"
            ),
        }.items():
            figures[label] = p95_of(lambda path=path: timed_get(base + path, api))
        figures["metrics: one scrape"] = scrape_size(base, api)
    finally:
        web.terminate()
        web.wait(timeout=30)
    print(json.dumps({"servers": options.servers, **figures, "metrics: in process": rendered}))
    print(f"fleet pages at {options.servers:,} servers, {CLIENTS} clients at a time:")
    size = figures.pop("metrics: one scrape")
    for label, figure in figures.items():
        print(f"  {label}: p95 {figure['p95_ms']:.0f} ms (median {figure['median_ms']:.0f} ms)")
    print(
        f"  /metrics: {size['series']:,} series, {size['bytes']:,} bytes; rendered in process "
        f"one at a time in {rendered['median_ms']:.0f} ms median ({rendered['queries']} queries)"
    )
    met = [
        target(
            "fleet page",
            figures["page: GET / (fleet) and its three API reads"]["p95_ms"],
            TARGET_FLEET_PAGE_MS,
        ),
        target("/metrics", figures["metrics: GET /metrics"]["p95_ms"], TARGET_METRICS_MS),
    ]
    return 0 if all(met) else 1


def target(label: str, p95_ms: float, limit_ms: float) -> bool:
    passed = p95_ms <= limit_ms
    print(
        f"  {label} p95 {p95_ms:.0f} ms [target <= {limit_ms} ms: {'met' if passed else 'MISSED'}]"
    )
    return passed


def scrape_size(base: str, api: dict) -> dict:
    """One whole scrape's series (sample lines) and bytes."""
    request = urllib.request.Request(f"{base}/metrics", headers=api)
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    lines = body.decode().splitlines()
    return {
        "series": sum(1 for line in lines if line and not line.startswith("#")),
        "bytes": len(body),
    }


if __name__ == "__main__":
    sys.exit(main())
