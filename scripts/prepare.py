"""`make up`'s set-up of the metadata store (migrate), the static files (collectstatic) and
the admin account (ensureadmin), in one Django process: as three `manage.py` runs, each
started Django again (about 1 s of CPU each, measured), which every `make up` paid.

A command's CommandError is said as manage.py says it, `CommandError: ...` on stderr, and
exits with its status; scripts/up.sh runs this with the virtualenv's Python.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partdash.settings")

import django  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.management.base import CommandError  # noqa: E402


def main() -> int:
    django.setup()
    try:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("ensureadmin")
    except CommandError as failed:
        print(f"CommandError: {failed}", file=sys.stderr)
        return failed.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
