"""A management-command base whose usage errors are one line and exit 2, and whose
metadata-store outages are one line and exit 1."""

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import OperationalError


class OneLineParser(CommandParser):
    def error(self, message: str):
        if self.called_from_command_line:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            sys.exit(2)
        raise CommandError(f"Error: {message}")


class PartdashCommand(BaseCommand):
    """Bad input exits 2 with `prog: error: reason` instead of a usage dump; a metadata
    store that is down or locked exits 1 with one line saying so, not a traceback."""

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except OperationalError as exc:
            raise CommandError(store_unavailable(exc), returncode=1) from exc

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = OneLineParser  # Django builds a CommandParser; only error() differs
        return parser

    def fail(self, message: str, code: int = 2):
        raise CommandError(message, returncode=code)


def store_unavailable(exc: Exception) -> str:
    """One line for a metadata store that could not be used (down, locked, refusing)."""
    return "metadata store unavailable: " + " ".join(str(exc).split())[:500]
