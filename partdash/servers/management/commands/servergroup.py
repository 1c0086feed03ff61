"""`manage.py servergroup`: list, create, change or delete server groups.

    manage.py servergroup                              # every group, one per line
    manage.py servergroup NAME --servers db1,db2 [--kind shards] [--reference db1]
    manage.py servergroup NAME --add db3 | --remove db2 | --reference '' | --delete
    manage.py servergroup NAME --exclude-schemas 'partdash_demo,sys,scratch_*'  # '': none

Each member's drift is judged after its next poll. Unknown servers, a reference that is
not a member, or a bad name are one line on stderr, exit 2, and change nothing.
"""

from django.core.exceptions import ValidationError
from django.db import transaction

from partdash.accounts import audit
from partdash.lib.commands import PartdashCommand
from partdash.servers.models import (
    DEFAULT_EXCLUDED_SCHEMAS,
    Server,
    ServerGroup,
    schema_patterns,
)


def names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


class Command(PartdashCommand):
    help = "List, create, change or delete a server group (replicas or shards)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", nargs="?", help="the group; none: list every group")
        parser.add_argument("--kind", choices=ServerGroup.Kind.values)
        parser.add_argument("--servers", type=names, help="its members, comma-separated")
        parser.add_argument("--add", type=names, default=[], help="members to add")
        parser.add_argument("--remove", type=names, default=[], help="members to remove")
        parser.add_argument("--reference", help="the member the others are held to ('': none)")
        parser.add_argument(
            "--exclude-schemas",
            help="schema patterns left out of the comparison, comma-separated, with * ? "
            "wildcards ('': compare every schema; default: partdash_demo, sys, mysql, "
            "performance_schema, information_schema)",
        )
        parser.add_argument("--delete", action="store_true", help="delete the group")

    @audit.from_command
    def handle(self, *args, **options) -> None:
        if not options["name"]:
            self._list()
            return
        if options["delete"]:
            deleted, _ = ServerGroup.objects.filter(name=options["name"]).delete()
            if not deleted:
                self.fail(f"no server group named {options['name']!r}")
            self.stdout.write(f"deleted server group {options['name']}")
            return
        with transaction.atomic():
            self._save(options)

    def _servers(self, wanted: list[str]) -> list[Server]:
        found = {s.name: s for s in Server.objects.filter(name__in=wanted)}
        unknown = [name for name in wanted if name not in found]
        if unknown:
            self.fail(f"unknown server(s): {', '.join(unknown)}")
        return [found[name] for name in wanted]

    def _save(self, options) -> None:
        group = ServerGroup.objects.filter(name=options["name"]).first()
        created = group is None
        group = group or ServerGroup(name=options["name"])
        if options["kind"]:
            group.kind = options["kind"]
        members = list(group.servers.all()) if group.pk else []
        if options["servers"] is not None:
            members = self._servers(options["servers"])
        added, removed = self._servers(options["add"]), set(options["remove"])
        self._servers(options["remove"])
        members = [s for s in members + added if s.name not in removed]
        members = list({s.pk: s for s in members}.values())
        if options["exclude_schemas"] is not None:
            group.excluded_schemas = ", ".join(schema_patterns(options["exclude_schemas"]))
        if options["reference"] is not None:
            reference = options["reference"]
            group.reference = self._servers([reference])[0] if reference else None
        problem = group.reference_problem(members)
        if problem:
            self.fail(problem)
        try:
            group.full_clean(exclude=["servers"])
        except ValidationError as error:
            self.fail("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items()))
        group.save()
        group.servers.set(members)
        verb = "created" if created else "updated"
        self.stdout.write(f"{verb} server group {self._line(group)}")

    def _line(self, group: ServerGroup) -> str:
        members = ", ".join(s.name for s in group.servers.order_by("name")) or "no members"
        reference = f", reference {group.reference.name}" if group.reference else ""
        return f"{group.name} ({group.kind}): {members}{reference}{self._left_out(group)}"

    @staticmethod
    def _left_out(group: ServerGroup) -> str:
        """The schemas it leaves out where they are not the default ones."""
        patterns = group.excluded_schema_patterns
        if patterns == schema_patterns(DEFAULT_EXCLUDED_SCHEMAS):
            return ""
        return f"; leaves out schemas {', '.join(patterns)}" if patterns else "; every schema"

    def _list(self) -> None:
        groups = ServerGroup.objects.prefetch_related("servers").select_related("reference")
        if not groups:
            self.stdout.write("no server groups (create one: servergroup NAME --servers a,b)")
        for group in groups:
            self.stdout.write(self._line(group))
