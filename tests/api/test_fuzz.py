"""Every operation of the OpenAPI document, fuzzed with schemathesis as a viewer and as
an operator: no answer is a 5xx, and every answer the document describes matches it.

Servers the fuzzer registers point at 127.0.0.1 on a closed port, and their polls go
to the private broker (no worker here): nothing is polled."""

import json
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from partdash.metrics.models import Partition
from partdash.wsgi import application
from tests import builders
from tests.conftest import token_client
from tests.pgstore import STORE

pytestmark = pytest.mark.django_db

# Per operation and role: 10, and 5 in the PostgreSQL pass, where what differs is the
# store's answer to odd values (a NUL, a huge integer, a long text). 25 and 10 cost 100 s
# of CPU together, a twelfth of `make test` on two cores. PARTDASH_FUZZ_EXAMPLES sets a
# longer hunt (docs/settings.md).
EXAMPLES = int(os.environ.get("PARTDASH_FUZZ_EXAMPLES", "5" if STORE == "postgres" else "10"))


def api_schema() -> "schemathesis.BaseSchema":
    document = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(json.loads(OpenApiJsonRenderer().render(document)))
    loaded.app = application
    return loaded


@pytest.fixture
def fleet() -> None:
    """A server with a table, its partitions, an alert and a silence, for the ids the
    fuzzer hits (1, and small numbers) to find something."""
    server = builders.server("db1", port=9)
    table = builders.table(server, health={"skew": {"max_mean_ratio": 1.5}})
    for ordinal in range(3):
        Partition.objects.create(
            table=table, key=f"p{ordinal}", name=f"p{ordinal}", ordinal=ordinal, rows=ordinal
        )
    builders.alert(server, of=table)
    builders.silence(server=server, comment="maintenance")


@pytest.fixture
def no_throttling(monkeypatch):
    monkeypatch.setattr("rest_framework.views.APIView.check_throttles", lambda self, r: None)


@pytest.fixture
def wsgi_in_the_test_transaction():
    """Keep the test's database connection open across WSGI requests, as Django's test
    client does (the handler would close it when each request ends)."""
    signals = (request_started, request_finished)
    for signal in signals:
        signal.disconnect(close_old_connections)
    yield
    for signal in signals:
        signal.connect(close_old_connections)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_no_operation_answers_a_5xx_or_breaks_the_schema(
    role, request, fleet, no_throttling, wsgi_in_the_test_transaction
):
    user = request.getfixturevalue(role)
    headers = {"Authorization": token_client(user)._credentials["HTTP_AUTHORIZATION"]}
    failures = []
    for result in api_schema().get_all_operations():
        operation = result.ok()

        @hypothesis_settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def fuzz(case):
            case.call_and_validate(
                headers=headers, checks=[not_a_server_error, response_schema_conformance]
            )

        try:
            fuzz()
        except BaseException as exc:  # noqa: BLE001 schemathesis raises a BaseExceptionGroup
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:3000])
    assert not failures, "\n\n".join(failures)
