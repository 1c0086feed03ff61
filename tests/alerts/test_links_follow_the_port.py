"""Links follow the address served (issue 38, point 4): `make up` sets PARTDASH_BASE_URL,
where emails and webhooks link to (Page, Silence, Acknowledge), from PARTDASH_PORT unless
PARTDASH_BASE_URL is set, in the environment or var/partdash.env. Before,
`PARTDASH_PORT=8091 make up` sent every link to port 8000."""

import os
import subprocess
import sys

import pytest

from partdash.alerts import delivery
from tests import builders
from tests.alerts.mailbox import transition
from tests.conftest import ROOT

PORT = "8091"


def base_url_of_make_up(var, **environment: str) -> str:
    """PARTDASH_BASE_URL as scripts/up.sh exports it to the processes it starts (its
    `default_base_url` step, run by bash), "" when it leaves it unset."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARTDASH_")}
    step = f'source scripts/lib.sh; default_base_url "$PARTDASH_PORT" {var}; '
    step += 'printf %s "${PARTDASH_BASE_URL:-}"'
    done = subprocess.run(
        ["bash", "-c", step],
        cwd=ROOT,
        env=env | {"PARTDASH_PORT": PORT, **environment},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_the_base_url_follows_the_port_unless_it_is_set(tmp_path):
    assert base_url_of_make_up(tmp_path) == f"http://127.0.0.1:{PORT}"
    proxy = "https://partdash.example.com"
    assert base_url_of_make_up(tmp_path, PARTDASH_BASE_URL=proxy) == proxy
    (tmp_path / "partdash.env").write_text(f"SECRET_KEY=x\nPARTDASH_BASE_URL={proxy}\n")
    assert base_url_of_make_up(tmp_path) == ""  # left to var/partdash.env, which settings read


def test_the_settings_of_make_ups_processes_link_to_the_port(tmp_path):
    base = base_url_of_make_up(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PARTDASH_BASE_URL"}
    read = "from django.conf import settings; print(settings.PARTDASH_BASE_URL)"
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {read}"],
        cwd=ROOT,
        env=env | {"PARTDASH_BASE_URL": base, "DJANGO_SETTINGS_MODULE": "partdash.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == f"http://127.0.0.1:{PORT}"


@pytest.mark.django_db
def test_a_real_emails_links_point_at_the_port_served(smtp_settings, mailbox, tmp_path):
    smtp_settings.PARTDASH_BASE_URL = base_url_of_make_up(tmp_path)
    db1 = builders.server("db1")
    alert = builders.alert(db1, rule="skew", of=builders.table(db1, "a", "b"), notified_at=None)
    transition(alert)
    delivery.deliver_evaluation(db1.pk, "eval-1")
    (email,) = mailbox.emails()
    starts = ("Page:", "Silence:", "Acknowledge:")
    rows = [row.strip() for row in email.text.splitlines()]
    links = [row.split(": ", 1)[1] for row in rows if row.startswith(starts)]
    assert len(links) == 3, email.text
    assert all(link.startswith(f"http://127.0.0.1:{PORT}/") for link in links), links
