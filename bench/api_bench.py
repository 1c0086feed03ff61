"""The API and page side of `make bench`: response times on the metadata store the poll
benchmark filled (64,000 partitions), served by gunicorn as `make up` runs it, under a
concurrent client, and /metrics's size and render time. Prints one JSON object: per
endpoint, median and p95 in ms; under "exposition", /metrics's figures.

Usage: api_bench.py VAR_DIR
"""

import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLIENTS = 8  # concurrent requests in flight
REQUESTS = 200  # per endpoint


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def production_env(var_dir: Path) -> dict:
    from cryptography.fernet import Fernet

    return {
        **os.environ,
        "DEBUG": "0",
        "PARTDASH_HTTPS": "0",  # plain HTTP on 127.0.0.1, as `make up` serves it
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PARTDASH_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "PARTDASH_VAR_DIR": str(var_dir),
        "DJANGO_SETTINGS_MODULE": "partdash.settings",
        # The benchmark's clients ask far more than the API's throttle lets one token.
        "PARTDASH_API_RATE_USER": "1000000/min",
        "PARTDASH_API_RATE_TOKEN": "1000000/min",
    }


def fresh_store(var_dir: Path) -> None:
    """A migrated metadata store under `var_dir` with the static files a DEBUG=0 page
    needs; this process's environment set to serve it, and Django set up."""
    env = production_env(var_dir)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT)
    subprocess.run(
        [*manage, "collectstatic", "--noinput", "-v", "0"], env=env, check=True, cwd=ROOT
    )
    os.environ.update(env)
    import django

    django.setup()


def uncached(token: str, server_id: int, table_id: int) -> dict:
    """The per-poll lists as the first request after a poll sees them: the cache
    emptied before each request, one client, in this process (Django's test client)."""
    from django.core.cache import cache
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    results = {}
    for label, path in {
        "list (uncached, first after a poll): GET /api/v1/servers/{id}/tables/": (
            f"/api/v1/servers/{server_id}/tables/"
        ),
        "list (uncached, first after a poll): GET /api/v1/tables/{id}/partitions/": (
            f"/api/v1/tables/{table_id}/partitions/"
        ),
    }.items():
        times = []
        for _ in range(40):
            cache.clear()
            started = time.monotonic()
            response = client.get(path, headers={"Host": "127.0.0.1"})
            times.append((time.monotonic() - started) * 1000)
            assert response.status_code == 200, response.status_code
        results[label] = summary(times)
    return results


def exposition_figures(repeats: int = 20) -> dict:
    """/metrics on this store as a scrape renders it, in this process: its size in bytes,
    its series (sample lines), its queries, and the render time in ms (median, p95)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from partdash.prometheus.exposition import exposition

    times = []
    for _ in range(repeats):
        started = time.monotonic()
        body = exposition()
        times.append((time.monotonic() - started) * 1000)
    with CaptureQueriesContext(connection) as queries:
        exposition()
    lines = body.decode().splitlines()
    return {
        "bytes": len(body),
        "series": sum(1 for line in lines if line and not line.startswith("#")),
        "families": sum(1 for line in lines if line.startswith("# TYPE")),
        "queries": len(queries),
        **summary(times),
    }


def credentials(env: dict) -> tuple[str, str, int, int]:
    """A staff user's API token and session cookie, and the server and a table to ask for."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("collectstatic", "--noinput", verbosity=0)  # DEBUG=0 serves the manifest
    from partdash.metrics.models import PartitionedTable
    from partdash.servers.models import Server

    key, session = issue_credentials()
    server = Server.objects.get(name="bench")
    table = PartitionedTable.objects.filter(server=server).order_by("name").first()
    return key, session, server.pk, table.pk


def issue_credentials() -> tuple[str, str]:
    """A staff user's new API token and a logged-in session cookie (Django is set up)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from partdash.accounts.models import ApiToken

    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    _, key = ApiToken.issue(user, name="bench")
    client = Client()
    client.force_login(user)
    return key, client.cookies["sessionid"].value


def timed_get(url: str, headers: dict) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as r:
        r.read()
        if r.status != 200:
            raise RuntimeError(f"{url}: HTTP {r.status}")
    return (time.monotonic() - started) * 1000


def measure(url: str, headers: dict) -> dict:
    timed_get(url, headers)  # warm: the first request loads code and fills caches
    with ThreadPoolExecutor(CLIENTS) as pool:
        return summary(list(pool.map(lambda _: timed_get(url, headers), range(REQUESTS))))


def timed_status(url: str, headers: dict) -> tuple[float, int]:
    """(ms, HTTP status) of one GET; status 0 when no response came at all."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as failure:
        status = failure.code
    except OSError:
        status = 0
    return (time.monotonic() - started) * 1000, status


def readers(base: str, endpoints: dict, clients: int, seconds: float) -> dict:
    """A bounded load generator: `clients` threads, each asking for `endpoints` (label:
    (path, headers)) in turn, from a different one each, until `seconds` have passed.
    Per endpoint: median and p95 in ms, requests, errors (not 200) and 5xx."""
    labels = list(endpoints)
    deadline = time.monotonic() + seconds
    interrupted = threading.Event()  # a Ctrl-C here stops the clients too

    def client(offset: int) -> list[tuple[str, float, int]]:
        done = []
        while time.monotonic() < deadline and not interrupted.is_set():
            label = labels[(offset + len(done)) % len(labels)]
            path, headers = endpoints[label]
            done.append((label, *timed_status(base + path, headers)))
        return done

    with ThreadPoolExecutor(clients) as pool:
        try:
            done = [one for requests in pool.map(client, range(clients)) for one in requests]
        except BaseException:
            interrupted.set()
            raise
    results = {}
    for label in labels:
        answered = [(ms, status) for name, ms, status in done if name == label]
        if not answered:
            results[label] = {"requests": 0, "errors": 0, "5xx": 0}
            continue
        results[label] = summary([ms for ms, _ in answered]) | {
            "errors": sum(1 for _, status in answered if status != 200),
            "5xx": sum(1 for _, status in answered if status >= 500),
        }
    return results


def summary(times: list[float]) -> dict:
    """Median and p95 of request times in ms."""
    times = sorted(times)
    return {
        "median_ms": statistics.median(times),
        "p95_ms": times[int(len(times) * 0.95) - 1],
        "requests": len(times),
    }


def start_web(env: dict, headers: dict) -> tuple[subprocess.Popen, str]:
    """gunicorn as `make up` runs it (2 workers of 4 threads) on a free port, once it
    answers the API root: (its process, its base URL)."""
    port = free_port()
    web = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "partdash.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            timed_get(f"{base}/api/v1/", headers)
            break
        except OSError:
            time.sleep(0.2)
    return web, base


def main() -> None:
    var_dir = Path(sys.argv[1])
    env = production_env(var_dir)
    token, session, server_id, table_id = credentials(env)
    cold = uncached(token, server_id, table_id)
    rendered = exposition_figures()
    web, base = start_web(env, {"Authorization": f"Token {token}"})
    try:
        api = {"Authorization": f"Token {token}"}
        page = {"Cookie": f"sessionid={session}"}
        endpoints = {
            "list: GET /api/v1/servers/": ("/api/v1/servers/", api),
            "list: GET /api/v1/servers/{id}/tables/ (500 tables)": (
                f"/api/v1/servers/{server_id}/tables/",
                api,
            ),
            "list: GET /api/v1/tables/{id}/partitions/ (128)": (
                f"/api/v1/tables/{table_id}/partitions/",
                api,
            ),
            "list: GET /api/v1/findings/": ("/api/v1/findings/", api),
            "list: GET /api/v1/servers/{id}/health/": (f"/api/v1/servers/{server_id}/health/", api),
            "history: GET /api/v1/tables/{id}/history/ rows": (
                f"/api/v1/tables/{table_id}/history/?metric=rows",
                api,
            ),
            "history: GET /api/v1/tables/{id}/history/ write_bytes_per_s": (
                f"/api/v1/tables/{table_id}/history/?metric=write_bytes_per_s",
                api,
            ),
            "metrics: GET /metrics (500 tables)": ("/metrics", api),
            "page: GET / (fleet)": ("/", page),
            "page: GET /servers/{id}/": (f"/servers/{server_id}/", page),
            "page: GET /tables/{id}/": (f"/tables/{table_id}/", page),
        }
        results = {}
        for label, (path, headers) in endpoints.items():
            try:
                results[label] = measure(base + path, headers)
            except (OSError, RuntimeError) as exc:
                results[label] = {"error": str(exc).splitlines()[0]}
        print(json.dumps(results | cold | {"exposition": rendered}))
    finally:
        web.terminate()
        web.wait(timeout=30)


if __name__ == "__main__":
    main()
