"""`manage.py retention`: downsample the store's polls now (beat does it hourly). The
command keeps its published name; partdash's other "retention" is partition policies."""

from partdash.lib.commands import PartdashCommand
from partdash.metrics.downsampling import downsample


class Command(PartdashCommand):
    help = "Thin polls older than the raw/hourly windows and delete the oldest."

    def handle(self, *args, **options) -> None:
        self.stdout.write(str(downsample()))
