"""`manage.py poll NAME` / `--all`: poll now, in this process, like the Celery task
(the same poll service, so the server's alerts are evaluated after the poll and their
emails queued for the worker).

Like the task, it holds the server's poll lock while polling, so it never overlaps a
worker's poll of the same server: when one is running, it says so on stderr and waits
for it to end (at most the lock's own expiry); its own hold is renewed while it polls,
which no Celery time limit bounds (its sessions with the server end at the poll's time
limit all the same, as the worker's do: `service.PollDeadline`). Should Redis, which
holds the lock, fail to give it (unreachable, say), it says so and polls without the lock
(the command is also how a server is tried out before the worker runs).

Prints `PollReport.summary`: one line, then one line per distinct warning (grouped by
fix, so a server with hundreds of hidden tables prints a few lines, not hundreds). A
failure is said once: the poll service's own log line of it (for the worker's log) is
held back, as the summary says the same; a traceback (a bug) is still shown."""

import logging
import sys
import uuid
from contextlib import ExitStack

import redis

from partdash.lib.commands import PartdashCommand
from partdash.polling import scheduling
from partdash.polling.service import CHANGED, PollReport, poll_server
from partdash.servers.models import Server


class ReportedInSummary(logging.Filter):
    """Drops the poll service's one-line records of a failure, which the summary repeats;
    keeps those with a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is not None or record.levelno < logging.WARNING


class Command(PartdashCommand):
    help = (
        "Poll one server (or --all enabled servers) now, then evaluate its alerts and queue "
        "their emails; print a summary line per server, then one line per distinct warning. "
        f"In the summary, a partition 'changed' when its {CHANGED}, and is 'stored' when "
        "its rows or sizes moved, so a point of its history was written."
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

    def _locked(self, stack: ExitStack, server: Server) -> bool:
        """Take the server's poll lock into `stack` (renewed while this poll runs, which
        has no time limit), waiting for a running poll to end; False when it is still
        held after the lock's expiry. Without Redis: True, said."""
        _, hard = scheduling.time_limits(server.poll_interval)
        expiry, token = hard + 5, f"manage.py-{uuid.uuid4().hex}"
        try:
            if stack.enter_context(scheduling.poll_lock(server.pk, expiry, token, keep=True)):
                return True
            self.stderr.write(
                f"{server.name}: another poll is running; waiting for it to end "
                f"(at most {expiry} s)"
            )
            return stack.enter_context(
                scheduling.poll_lock(server.pk, expiry, token, wait=expiry, keep=True)
            )
        except redis.exceptions.RedisError as exc:
            self.stderr.write(
                f"{server.name}: polling without the poll lock, which Redis did not give "
                f"({type(exc).__name__}: {exc})"
            )
            return True

    def _poll(self, server: Server) -> PollReport:
        with ExitStack() as stack:
            if not self._locked(stack, server):
                return PollReport(
                    server=server.name, ok=False, error="another poll is still running"
                )
            return poll_server(server)

    def handle(self, *args, **options) -> None:
        servers = self._servers(options)
        service_log, quiet = logging.getLogger("partdash.polling.service"), ReportedInSummary()
        service_log.addFilter(quiet)
        try:
            failed = sum(not self._report(self._poll(server)) for server in servers)
        finally:
            service_log.removeFilter(quiet)
        if not failed:
            return
        if len(servers) == 1 and getattr(self, "_called_from_command_line", False):
            sys.exit(1)  # its one line said why
        self.fail(f"{failed} of {len(servers)} servers could not be polled", code=1)

    def _report(self, report: PollReport) -> bool:
        (self.stdout if report.ok else self.stderr).write(report.summary)
        return report.ok
