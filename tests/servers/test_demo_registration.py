"""`make up` registers the demo server once per install (`manage.py demo --register demo
--if-missing`, as scripts/supervise.py runs it): a user who deleted or renamed it does
not get it back on the next start, nor the alerts they had silenced on it."""

import io
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from partdash.servers.models import DemoRegistration, Server
from tests.services import MariaDB

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo_target() -> Iterator[MariaDB]:
    with MariaDB() as instance:
        yield instance


def make_up_registers_the_demo(target: MariaDB) -> str:
    """What each `make up` runs before starting the services."""
    out = io.StringIO()
    call_command("demo", "--dsn", target.dsn, "--register", "demo", "--if-missing", stdout=out)
    return out.getvalue()


def test_the_first_make_up_registers_the_demo_and_the_next_ones_keep_it(demo_target):
    assert "registered as server demo" in make_up_registers_the_demo(demo_target)
    first = Server.objects.get(name="demo")

    again = make_up_registers_the_demo(demo_target)

    # It registered nothing, and says so.
    assert "registered as" not in again
    assert f"server demo (id {first.pk}) is registered already: kept" in again
    assert list(Server.objects.values_list("pk", flat=True)) == [first.pk]
    assert list(DemoRegistration.objects.values_list("name", flat=True)) == ["demo"]


def test_a_demo_the_user_deleted_is_not_registered_again(demo_target, staff_api):
    make_up_registers_the_demo(demo_target)
    demo = Server.objects.get(name="demo")
    assert staff_api.delete(f"/api/v1/servers/{demo.pk}/").status_code == 204

    said = make_up_registers_the_demo(demo_target)

    assert not Server.objects.exists()
    assert "deleted or renamed since: not registered again" in said
    # The schema is still there for whoever wants it back, explicitly.
    call_command("demo", "--dsn", demo_target.dsn, "--register", "demo", stdout=io.StringIO())
    assert Server.objects.filter(name="demo").count() == 1


def test_a_renamed_demo_is_not_joined_by_a_second_one(demo_target):
    make_up_registers_the_demo(demo_target)
    Server.objects.filter(name="demo").update(name="staging-demo")

    make_up_registers_the_demo(demo_target)

    assert list(Server.objects.values_list("name", flat=True)) == ["staging-demo"]
