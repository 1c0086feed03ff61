"""A server's `explain_statements` (opting it in to EXPLAIN of sampled statements): set
and cleared by `addserver`, written through the API by operators and not by viewers, off
by default."""

import pytest

from partdash.servers.models import Server
from tests import builders
from tests.conftest import token_client
from tests.servers.test_management_commands import broker, here  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def test_addserver_turns_explain_statements_on_and_off(here):  # noqa: F811
    made = here.run("addserver", "ex1", "--host", "h", "--user", "u", "--no-check")
    assert made.returncode == 0, made.stderr
    assert Server.objects.get(name="ex1").explain_statements is False

    here.run("addserver", "ex1", "--host", "h", "--user", "u", "--no-check", "--explain-statements")
    assert Server.objects.get(name="ex1").explain_statements is True
    here.run("addserver", "ex1", "--host", "h", "--user", "u", "--no-check")  # kept
    assert Server.objects.get(name="ex1").explain_statements is True
    here.run(
        "addserver", "ex1", "--host", "h", "--user", "u", "--no-check", "--no-explain-statements"
    )
    assert Server.objects.get(name="ex1").explain_statements is False


def test_operators_opt_a_server_in_through_the_api_and_viewers_cannot(operator, viewer_api):
    server = builders.server()
    url = f"/api/v1/servers/{server.pk}/"
    assert viewer_api.get(url).json()["explain_statements"] is False

    assert viewer_api.patch(url, {"explain_statements": True}, format="json").status_code == 403
    answer = token_client(operator).patch(url, {"explain_statements": True}, format="json")

    assert answer.status_code == 200 and answer.json()["explain_statements"] is True
    server.refresh_from_db()
    assert server.explain_statements is True
