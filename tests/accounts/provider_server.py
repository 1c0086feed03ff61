"""A real OpenID provider for the sign-on tests: the small django-oauth-toolkit project in
`tests/accounts/oidc_provider/`, migrated into its own SQLite file and served by gunicorn
on 127.0.0.1 and a free port, with one client (partdash) and the people of
`people.json`, which a test rewrites to change someone's groups."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import wait_until
from tests.services import LOCALHOST, free_port

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "partdash-tests"
CLIENT_SECRET = "partdash-tests-client-secret"
# Where the tests' Django client says partdash is (the redirect URI the provider allows).
REDIRECT_URIS = "http://testserver/oidc/callback/"


@dataclass
class Provider:
    issuer: str
    directory: Path
    process: subprocess.Popen

    def set_people(self, people: dict[str, tuple[str, list[str]]]) -> None:
        """name -> (password, groups)."""
        rows = {name: {"password": pw, "groups": groups} for name, (pw, groups) in people.items()}
        (self.directory / "people.json").write_text(json.dumps(rows))

    def environment(self) -> dict[str, str]:
        """partdash's settings for this provider, as a site would set them."""
        return {
            "PARTDASH_OIDC_ISSUER": self.issuer,
            "PARTDASH_OIDC_CLIENT_ID": CLIENT_ID,
            "PARTDASH_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "PARTDASH_OIDC_VIEWER_GROUP": "dba-readers",
            "PARTDASH_OIDC_OPERATOR_GROUP": "dba",
            "PARTDASH_OIDC_ADMIN_GROUP": "dba-leads",
        }


def start_provider(directory: Path, redirect_uris: str = REDIRECT_URIS) -> Provider:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (directory / "signing.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (directory / "people.json").write_text("{}")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.accounts.oidc_provider.settings",
        "OIDC_PROVIDER_DIR": str(directory),
        "PYTHONPATH": str(ROOT),
    }
    setup = [sys.executable, "-m", "tests.accounts.oidc_provider.setup"]
    subprocess.run([*setup, CLIENT_ID, CLIENT_SECRET, redirect_uris], env=env, cwd=ROOT, check=True)
    port = free_port()
    log = (directory / "gunicorn.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "tests.accounts.oidc_provider.wsgi"]
        + ["--bind", f"{LOCALHOST}:{port}", "--workers", "1", "--threads", "4"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    provider = Provider(issuer=f"http://{LOCALHOST}:{port}/o", directory=directory, process=process)
    wait_until(
        lambda: _answers(provider),
        60,
        "the OpenID provider answers",
        logs=lambda: (directory / "gunicorn.log").read_text()[-3000:],
    )
    return provider


def _answers(provider: Provider) -> bool:
    if provider.process.poll() is not None:
        raise AssertionError("the OpenID provider exited")
    try:
        url = f"{provider.issuer}/.well-known/openid-configuration"
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:  # not listening yet, or its worker still booting
        return False
