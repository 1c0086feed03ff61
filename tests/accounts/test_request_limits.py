"""Failed authentications and oversize bodies cannot wear the site down: wrong tokens are
counted per address like wrong passwords, and a body over PARTDASH_MAX_BODY_BYTES (a
multipart file included) is refused with 413 before it is read, by the real server."""

import http.client
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.cache import cache
from rest_framework.test import APIClient

from partdash.accounts.models import ApiToken
from tests.services import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clean_counts():
    cache.clear()
    yield
    cache.clear()


def with_key(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_wrong_tokens_from_one_address_are_cut_off_at_the_limit(viewer, settings):
    settings.PARTDASH_TOKEN_FAILURE_LIMIT = 3
    statuses = [with_key(f"guess-{i}").get("/api/v1/servers/").status_code for i in range(6)]
    assert statuses == [401, 401, 401, 429, 429, 429]

    _, key = ApiToken.issue(viewer)
    refused = with_key(key).get("/api/v1/servers/")
    assert refused.status_code == 429  # a right key too: guessing teaches nothing
    assert int(refused["Retry-After"]) > 0


def test_a_right_token_before_the_limit_starts_the_count_again(viewer, settings):
    settings.PARTDASH_TOKEN_FAILURE_LIMIT = 2
    _, key = ApiToken.issue(viewer)
    for _ in range(3):
        assert with_key("guess").get("/api/v1/servers/").status_code == 401
        assert with_key(key).get("/api/v1/servers/").status_code == 200


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    """partdash under gunicorn as `make up` serves it (the refusal needs no database)."""
    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "0",
        "PARTDASH_HTTPS": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PARTDASH_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "PARTDASH_VAR_DIR": str(tmp_path_factory.mktemp("var")),
        "DJANGO_SETTINGS_MODULE": "partdash.settings",
    }
    gunicorn_bin = Path(sys.executable).parent / "gunicorn"
    command = [str(gunicorn_bin), "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    process = subprocess.Popen(
        [*command, "partdash.wsgi"], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # up, its worker's application loaded
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/login/")
            connection.getresponse().read()
            break
        except OSError:
            time.sleep(0.1)
    yield port
    process.terminate()
    process.wait(10)


def post_announcing(port: int, path: str, length: int, content_type: str) -> tuple[int, bytes]:
    """Announce a body of `length` bytes, send 64 KiB of it, and read the answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest("POST", path)
    connection.putheader("Content-Type", content_type)
    connection.putheader("Content-Length", str(length))
    connection.endheaders()
    try:
        connection.send(b"x" * 65536)
    except OSError:
        pass  # the server may close before reading it: that is the point
    response = connection.getresponse()
    return response.status, response.read()


BOUNDARY = "partdashboundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def test_a_60_mb_multipart_login_is_refused_before_it_is_read(gunicorn):
    started = time.monotonic()
    status, body = post_announcing(gunicorn, "/login/", 60 * 1024 * 1024, MULTIPART)
    assert time.monotonic() - started < 2
    assert status == 413
    assert b"larger than 1048576 bytes" in body


def test_an_oversize_api_body_is_a_json_413(gunicorn):
    status, body = post_announcing(gunicorn, "/api/v1/servers/", 2 * 1024 * 1024, MULTIPART)
    assert status == 413
    assert body.startswith(b'{"detail"')


def test_a_file_part_over_the_cap_is_refused_and_a_small_form_passes(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    big = client.post("/login/", {"username": "x", "attachment": _file(8192)})
    assert big.status_code == 413
    small = client.post("/login/", {"username": "x", "password": "y"})
    assert small.status_code == 200  # the form again, with its error


def _file(size: int):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("blob.bin", b"\0" * size)
