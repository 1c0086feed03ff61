"""A real SMTP server for tests (aiosmtpd, on a free port of 127.0.0.1) that keeps what
it accepts, and a builder for outbox rows (transitions) written straight to the database."""

import email
import email.policy
import threading
from dataclasses import dataclass
from email.message import EmailMessage

from aiosmtpd.controller import Controller
from django.utils import timezone

from partdash.alerts.models import Alert, Transition
from tests.services import free_port


@dataclass(frozen=True)
class Received:
    """One email as the SMTP server accepted it."""

    sender: str
    recipients: list[str]
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def message_id(self) -> str:
        return str(self.message["Message-ID"])

    @property
    def text(self) -> str:
        return self.message.get_body(preferencelist=("plain",)).get_content()

    @property
    def html(self) -> str:
        return self.message.get_body(preferencelist=("html",)).get_content()

    def lines(self, *starts: str) -> list[str]:
        """The text part's lines that begin with one of `starts` (FIRING, RESOLVED)."""
        return [line for line in self.text.splitlines() if line.startswith(starts or ("",))]


class _Keep:
    def __init__(self, mailbox: "Mailbox"):
        self.mailbox = mailbox

    async def handle_DATA(self, server, session, envelope) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.mailbox.lock:
            self.mailbox.received.append(
                Received(envelope.mail_from, list(envelope.rcpt_tos), parsed)
            )
        return "250 Message accepted for delivery"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        if address.lower() in self.mailbox.unknown:
            return "550 5.1.1 no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"


class Mailbox:
    """An SMTP server that can be stopped and started again on the same port (a mail
    server that goes down and comes back)."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.received: list[Received] = []
        self.unknown: set[str] = set()  # addresses it refuses (550), lower-cased
        self.lock = threading.Lock()
        self.controller: Controller | None = None

    def start(self) -> "Mailbox":
        self.controller = Controller(_Keep(self), hostname="127.0.0.1", port=self.port)
        self.controller.start()
        return self

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def emails(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def count(self) -> int:
        with self.lock:
            return len(self.received)

    def clear(self) -> None:
        """Forget what was received (a mailbox shared by a module's tests)."""
        with self.lock:
            self.received.clear()


def transition(
    alert: Alert,
    kind: str = Transition.Kind.FIRING,
    evaluation: str = "eval-1",
    recipients: str = "",
    **fields,
) -> Transition:
    """A transition of `alert` waiting in the outbox, with the alert's figures."""
    fields = {
        "value": alert.value,
        "threshold": alert.threshold,
        "message": alert.message,
        "created_at": timezone.now(),
        **fields,
    }
    return Transition.objects.create(
        alert=alert,
        server=alert.server,
        kind=kind,
        evaluation=evaluation,
        recipients=recipients,
        **fields,
    )
