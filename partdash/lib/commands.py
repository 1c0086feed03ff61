"""A management-command base whose usage errors are one line and exit 2."""

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser


class OneLineParser(CommandParser):
    def error(self, message: str):
        if self.called_from_command_line:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            sys.exit(2)
        raise CommandError(f"Error: {message}")


class PartdashCommand(BaseCommand):
    """Bad input exits 2 with `prog: error: reason` instead of a usage dump."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = OneLineParser  # Django builds a CommandParser; only error() differs
        return parser

    def fail(self, message: str, code: int = 2):
        raise CommandError(message, returncode=code)
