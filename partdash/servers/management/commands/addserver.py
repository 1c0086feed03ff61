"""`manage.py addserver NAME --host H --user U ...`: create or update a server.

Stdout carries the server's id only (scripts capture it); the connection check's outcome
and any warning go to stderr. An unreachable server is still registered (exit 0): it may
be down for now, and its status says so until it answers.
"""

import argparse
import os

from django.conf import settings
from django.core.exceptions import ValidationError

from partdash.accounts import audit
from partdash.lib.commands import PartdashCommand
from partdash.lib.secrets import SecretError
from partdash.mysql.choices import TlsMode
from partdash.mysql.connection import parse_fingerprint, target_for
from partdash.mysql.probe import probe
from partdash.servers.models import Server


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a number, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range 1-65535")
    return port


def fingerprint(text: str) -> str:
    try:
        return parse_fingerprint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def readable_file(path: str) -> str:
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read file {path!r}")
    return path


class Command(PartdashCommand):
    help = "Create or update a monitored server and print its id."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--host", required=True)
        parser.add_argument("--port", type=port_number, default=3306)
        parser.add_argument("--user", required=True)
        secret = parser.add_mutually_exclusive_group()
        secret.add_argument("--password-env", metavar="VAR", help="read the password from $VAR")
        secret.add_argument("--password-file", metavar="FILE", type=readable_file)
        parser.add_argument("--interval", type=int, metavar="SECONDS", help="poll interval")
        parser.add_argument("--ssl-ca", metavar="FILE", type=readable_file)
        parser.add_argument("--tls-mode", choices=TlsMode.values)
        parser.add_argument(
            "--approve-certificate",
            metavar="SHA256:HEX",
            type=fingerprint,
            help="trust the server's TLS certificate with this fingerprint (as the check or "
            "Test connection shows it) for authentication that sends the password; '' clears",
        )
        parser.add_argument("--tags", help="comma-separated labels")
        parser.add_argument("--disabled", action="store_true", help="register without polling")
        parser.add_argument(
            "--explain-statements",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="EXPLAIN sampled statements for exact partition counts (needs SELECT on "
            "the tables); --no-explain-statements turns it off",
        )
        parser.add_argument(
            "--export-tables",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="show every table of the server in /metrics, not only those with a finding; "
            "--no-export-tables turns it off",
        )
        parser.add_argument(
            "--no-check", action="store_true", help="do not try the connection after saving"
        )

    def _password(self, options) -> str | None:
        if options["password_env"]:
            if options["password_env"] not in os.environ:
                self.fail(f"environment variable {options['password_env']} is not set")
            return os.environ[options["password_env"]]
        if options["password_file"]:
            with open(options["password_file"]) as handle:
                return handle.read().rstrip("\r\n")
        return None

    @audit.from_command
    def handle(self, *args, **options) -> None:
        server = Server.objects.filter(name=options["name"]).first() or Server(name=options["name"])
        server.host, server.port, server.user = options["host"], options["port"], options["user"]
        if options["interval"] is not None:
            server.poll_interval = options["interval"]
        if options["ssl_ca"]:
            server.ssl_ca = options["ssl_ca"]
            server.tls_mode = TlsMode.VERIFY_CA
        if options["tls_mode"]:
            server.tls_mode = options["tls_mode"]
        if options["approve_certificate"] is not None:
            server.tls_approved_fingerprint = options["approve_certificate"]
        if options["tags"] is not None:
            server.tags = options["tags"]
        server.enabled = not options["disabled"]
        for option in ("explain_statements", "export_tables"):  # kept unless given
            if options[option] is not None:
                setattr(server, option, options[option])
        password = self._password(options)
        if password is not None:
            server.set_password(password)
        try:
            server.full_clean()
        except ValidationError as exc:
            reasons = "; ".join(
                f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()
            )
            if server.password_reuse():
                reasons += " (give it with --password-env or --password-file)"
            self.fail(reasons)
        server.save()
        self.stdout.write(str(server.pk))
        warning = server.same_address_warning()
        if warning:
            self.stderr.write(f"warning: {warning}", style_func=self.style.WARNING)
        if not options["no_check"]:
            self.stderr.write(f"check: {self._check(server)}", style_func=str)

    def _check(self, server: Server) -> str:
        try:
            # The same check and deadline as the admin's Test connection.
            result = probe(target_for(server), settings.PARTDASH_TEST_CONNECTION_SECONDS)
        except SecretError as exc:
            return f"unreachable: {exc}"
        server.record_tls(result.tls_offered, result.tls_fingerprint)
        return result.summary
