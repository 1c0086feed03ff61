"""`manage.py retention`: apply retention and downsampling now (beat does it hourly)."""

from partdash.lib.commands import PartdashCommand
from partdash.metrics.retention import apply_retention


class Command(PartdashCommand):
    help = "Thin polls older than the raw/hourly windows and delete the oldest."

    def handle(self, *args, **options) -> None:
        self.stdout.write(str(apply_retention()))
