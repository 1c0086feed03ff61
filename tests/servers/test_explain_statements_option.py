"""A server's `explain_statements` (opting it in to EXPLAIN of sampled statements) and
`export_tables` (every table in /metrics): set and cleared by `addserver`, written through
the API by operators and not by viewers, off by default."""

import pytest

from partdash.servers.models import Server
from tests import builders
from tests.conftest import token_client
from tests.servers.test_management_commands import broker, here  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


OPTIONS = pytest.mark.parametrize("field", ["explain_statements", "export_tables"])


@OPTIONS
def test_addserver_turns_the_option_on_and_off(here, field):  # noqa: F811
    args = ["addserver", "ex1", "--host", "h", "--user", "u", "--no-check"]
    flag = "--" + field.replace("_", "-")
    made = here.run(*args)
    assert made.returncode == 0, made.stderr
    assert getattr(Server.objects.get(name="ex1"), field) is False

    here.run(*args, flag)
    assert getattr(Server.objects.get(name="ex1"), field) is True
    here.run(*args)  # kept
    assert getattr(Server.objects.get(name="ex1"), field) is True
    here.run(*args, flag.replace("--", "--no-"))
    assert getattr(Server.objects.get(name="ex1"), field) is False


@OPTIONS
def test_operators_opt_a_server_in_through_the_api_and_viewers_cannot(operator, viewer_api, field):
    server = builders.server()
    url = f"/api/v1/servers/{server.pk}/"
    assert viewer_api.get(url).json()[field] is False

    assert viewer_api.patch(url, {field: True}, format="json").status_code == 403
    answer = token_client(operator).patch(url, {field: True}, format="json")

    assert answer.status_code == 200 and answer.json()[field] is True
    server.refresh_from_db()
    assert getattr(server, field) is True
