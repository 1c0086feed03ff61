"""`manage.py poll NAME` / `--all`: poll now, in this process, like the Celery task
(the same poll service, so the server's alerts are evaluated after the poll and their
emails queued for the worker).

Prints `PollReport.summary`: one line, then one line per distinct warning (grouped by
fix, so a server with hundreds of hidden tables prints a few lines, not hundreds)."""

from partdash.collector.service import poll_server
from partdash.lib.commands import PartdashCommand
from partdash.servers.models import Server


class Command(PartdashCommand):
    help = (
        "Poll one server (or --all enabled servers) now, then evaluate its alerts and queue "
        "their emails; print a summary line per server, then one line per distinct warning."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", nargs="?")
        parser.add_argument("--all", action="store_true", help="every enabled server")

    def _servers(self, options) -> list[Server]:
        if options["all"] == bool(options["name"]):
            self.fail("give a server NAME or --all (not both)")
        if options["all"]:
            return list(Server.objects.filter(enabled=True))
        server = Server.objects.filter(name=options["name"]).first()
        if server is None:
            self.fail(f"no server named {options['name']!r}")
        return [server]

    def handle(self, *args, **options) -> None:
        failed = 0
        for server in self._servers(options):
            report = poll_server(server)
            if report.ok:
                self.stdout.write(report.summary)
            else:
                failed += 1
                self.stderr.write(report.summary)
        if failed:
            self.fail(f"{failed} server(s) could not be polled", code=1)
