"""`manage.py sendtestalert [CHANNEL]`: send a test alert now and say to whom."""

from partdash.accounts import audit
from partdash.alerts.delivery import one_line
from partdash.alerts.testalert import TestAlertRefused, send_test_alert
from partdash.alerts.transports import DeliveryError
from partdash.lib.commands import PartdashCommand


class Command(PartdashCommand):
    help = (
        "Send a test alert now: with no CHANNEL (or `email`), one email to ALERT_EMAILS "
        "and every enabled alert rule's recipients; with a channel's name, one message "
        "through it. Exit 1 when it could not be sent."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("channel", nargs="?", help="`email` (the default) or a channel's name")

    @audit.from_command
    def handle(self, *args, **options) -> None:
        try:
            recipients = send_test_alert(options["channel"], requested_by="manage.py")
        except (TestAlertRefused, DeliveryError) as refused:
            self.fail(
                str(refused)
                if isinstance(refused, TestAlertRefused)
                else f"test alert not sent: {refused}",
                code=1,
            )
        except Exception as error:  # noqa: BLE001 SMTP, network, TLS: one line, exit 1
            self.fail(f"test alert not sent: {one_line(error)}", code=1)
        self.stdout.write(f"test alert sent to {', '.join(recipients)}")
