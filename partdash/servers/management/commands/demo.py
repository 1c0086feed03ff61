"""`manage.py demo [--dsn DSN] [--register NAME]`: (re)create the demo schema."""

import os

from partdash.lib.commands import PartdashCommand
from partdash.mysql.connection import ConnectionFailure, Target
from partdash.mysql.demo import DEMO_SCHEMA, create_demo_schema, demo_schema_exists
from partdash.mysql.dsn import DsnError, parse_dsn
from partdash.servers.models import DemoRegistration, Server

DEFAULT_DSN = "mysql://root@127.0.0.1:3306/"


class Command(PartdashCommand):
    help = f"(Re)create the `{DEMO_SCHEMA}` schema of partitioned tables on a server."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--dsn",
            default=os.environ.get("PARTDASH_DEMO_DSN", DEFAULT_DSN),
            help="mysql://user:password@host:port/ (default: $PARTDASH_DEMO_DSN or "
            "%(default)s; prefer the variable for a DSN with a password: every user of the "
            "machine can read a command's arguments)",
        )
        parser.add_argument("--register", metavar="NAME", help="also register it as server NAME")
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="keep the schema if it exists already, and do not register again a demo "
            "server this install registered before (one the user has since deleted)",
        )

    def handle(self, *args, **options) -> None:
        try:
            target = parse_dsn(options["dsn"])
            if options["if_missing"] and demo_schema_exists(target):
                self.stdout.write(f"{DEMO_SCHEMA} exists on {target.host}:{target.port}: kept")
            else:
                tables = create_demo_schema(target)
                self.stdout.write(
                    f"created {DEMO_SCHEMA} on {target.host}:{target.port}: {', '.join(tables)}"
                )
        except (DsnError, ConnectionFailure) as exc:
            self.fail(str(exc), code=1)
        if options["register"]:
            self.register(options["register"], target, once=options["if_missing"])

    def register(self, name: str, target: Target, once: bool) -> None:
        """Register (or update) server `name`. With `once` (`make up`), a demo this
        install registered before and the user deleted (or renamed) stays deleted."""
        server = Server.objects.filter(name=name).first()
        if server is None and once and DemoRegistration.objects.exists():
            self.stdout.write(
                "the demo server was registered before and has been deleted or renamed since: "
                f"not registered again (`manage.py demo --register {name}` does)"
            )
            return
        if server is not None and once and points_at(server, target):
            # A second `make up` said "registered as server demo (id 1)": it registered
            # nothing.
            DemoRegistration.objects.get_or_create(name=name)
            self.stdout.write(f"server {name} (id {server.pk}) is registered already: kept")
            return
        said = "registered as server" if server is None else "updated server"
        server = server or Server(name=name)
        server.host, server.port, server.user = target.host, target.port, target.user
        server.set_password(target.password)
        server.save()
        DemoRegistration.objects.get_or_create(name=name)
        self.stdout.write(f"{said} {server.name} (id {server.pk})")


def points_at(server: Server, target: Target) -> bool:
    """Whether `server` is registered with the address and account of `target`."""
    where = (server.host, server.port, server.user)
    return where == (target.host, target.port, target.user) and (
        server.get_password() == target.password
    )
