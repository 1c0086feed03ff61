"""Times as partdash shows them: ISO 8601 in UTC with a `Z`, as DRF's DateTimeField does."""

from datetime import datetime


def iso(moment: datetime | None) -> str | None:
    """`2026-11-28T07:20:00Z`; None for no time."""
    return moment.isoformat().replace("+00:00", "Z") if moment else None
