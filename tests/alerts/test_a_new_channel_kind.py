"""docs/development.md's "Add a channel", step 1 and 3, for a throwaway kind (a pigeon
loft, in process): declared once, a channel saved with its URL is of its kind, and the
one outbox delivers through it with every guarantee: each evaluation once, a transient
failure retried after its backoff, a permanent one given up at once, its test message
through its `test`."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts import channels, delivery
from partdash.alerts.models import Channel, Notification
from partdash.alerts.transports import (
    TRANSPORTS,
    PermanentError,
    TransientError,
    Transport,
    register,
    transport_for_channel,
)
from tests import builders
from tests.alerts.mailbox import transition

pytestmark = pytest.mark.django_db


class Loft(Transport):
    """A kind that carries each message to a list; `failing` makes it fail."""

    kind = "pigeon"
    label = "Pigeon post"
    schemes = ("pigeon",)
    carried: list[tuple[str, str]] = []
    failing: type[Exception] | None = None

    def notify(self, notification) -> None:
        if Loft.failing is not None:
            raise Loft.failing("the pigeon came back")
        Loft.carried.append((self.channel.name, notification.subject))

    def test(self, requested_by: str = "") -> str:
        Loft.carried.append((self.channel.name, f"test by {requested_by}"))
        return "loft"


@pytest.fixture(autouse=True)
def loft(smtp_settings):
    register(Loft)
    Loft.carried, Loft.failing = [], None
    yield Loft
    del TRANSPORTS[Loft.kind]


def pigeon_channel() -> Channel:
    url = "pigeon://loft/ops"
    made = Channel(name="loft", kind=channels.kind_of(url))
    made.set_url(url)
    made.save()
    return made


def test_a_declared_kind_is_a_channel_kind_and_receives_each_evaluation_once(loft):
    loft_channel = pigeon_channel()
    assert loft_channel.kind == "pigeon" and loft_channel.get_kind_display() == "Pigeon post"
    db1 = builders.server("db1")
    transition(builders.alert(db1, rule="runway", of=builders.table(db1, "shop", "orders")))

    delivery.deliver_evaluation(db1.pk, "eval-1")
    delivery.deliver_evaluation(db1.pk, "eval-1")

    assert loft.carried == [("loft", "[partdash] db1: FIRING runway shop.orders")]
    assert transport_for_channel(loft_channel).test("ops") == "loft"
    assert loft.carried[-1] == ("loft", "test by ops")


@pytest.mark.parametrize(
    ("error", "given_up"), [(TransientError, False), (PermanentError, True), (OSError, False)]
)
def test_its_failures_are_retried_or_given_up_by_their_class(loft, error, given_up):
    pigeon_channel()
    db1 = builders.server("db1")
    transition(builders.alert(db1, rule="runway", of=builders.table(db1, "shop", "orders")))
    loft.failing = error

    outcomes = dict(delivery.deliver_evaluation(db1.pk, "eval-1"))

    (message,) = Notification.objects.exclude(channel=None)
    assert outcomes[message.pk].failed and outcomes[message.pk].given_up == given_up
    told = "OSError: the pigeon came back" if error is OSError else "the pigeon came back"
    assert message.last_error.endswith(f"attempt 1: {told}")
    Notification.objects.filter(pk=message.pk).update(
        claimed_at=timezone.now() - delivery.lease() - timedelta(seconds=1)
    )
    loft.failing = None
    assert delivery.send_notification(message.pk).sent != given_up
    assert loft.carried == ([] if given_up else [("loft", message.subject)])
