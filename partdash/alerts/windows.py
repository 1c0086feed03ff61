"""Maintenance windows: recurring silences ("every Sunday 02:00-04:00 Europe/Paris on
db1"), with RRULE semantics (RFC 5545, python-dateutil) in the window's time zone, so a
window at 02:00 stays at 02:00 local time across daylight saving changes.

Each occurrence is made a silence ahead of time (`plan`: those starting within
PLAN_AHEAD, made again whenever a window is saved, and by beat every hour), so every
silence rule holds for it as it is: a transition held back while it lasts, and an alert
still firing when it ends announced once, at the next evaluation.
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil import rrule as rrules
from django.db import transaction
from django.utils import timezone

from partdash.alerts.models import MaintenanceWindow, Silence
from partdash.alerts.silences import MAX_SILENCE

PLAN_AHEAD = timedelta(days=8)  # occurrences made silences this far ahead
NEXT_SHOWN = 5  # next occurrences listed
MAX_YEARLY = 400  # occurrences in a year, at most: a window every minute is an error


class WindowProblem(ValueError):
    """A window that cannot be: a field and one line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def zone(name: str) -> ZoneInfo:
    try:  # (ZoneInfo checks the name itself, from its cache after the first time)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise WindowProblem(
            "timezone", f"unknown time zone {name!r} (e.g. Europe/Paris, UTC)"
        ) from None


def recurrence(text: str, tz_name: str, anchor: datetime) -> rrules.rrule | rrules.rruleset:
    """The window's rule: `text` is an RRULE (`FREQ=WEEKLY;BYDAY=SU;BYHOUR=2`, with or
    without `RRULE:`), optionally after a `DTSTART`; without one, it starts at midnight
    of `anchor`'s day in the window's zone (so BYHOUR and BYMINUTE say the time)."""
    tz = zone(tz_name)
    text = text.strip()
    if not text:
        raise WindowProblem("rrule", "an RRULE is required, e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2")
    if "DTSTART" not in text.upper() and not text.upper().startswith("RRULE:"):
        text = f"RRULE:{text}"
    start = anchor.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        rule = rrules.rrulestr(text, dtstart=start, forceset=False)
    except (ValueError, TypeError, KeyError) as error:
        detail = " ".join(str(error).split())
        raise WindowProblem(
            "rrule", f"not an RRULE such as FREQ=WEEKLY;BYDAY=SU;BYHOUR=2 ({detail})"
        ) from None
    if not isinstance(rule, rrules.rrule):
        raise WindowProblem("rrule", "one RRULE (and its DTSTART), not a set")
    first = rule._dtstart
    if first.tzinfo is None:  # (a floating DTSTART: in the window's zone)
        rule = rule.replace(dtstart=first.replace(tzinfo=tz))
    try:
        yearly = rule.between(start, start + timedelta(days=366), inc=True)
    except TypeError as error:
        raise WindowProblem("rrule", f"not an RRULE: {error}") from None
    if len(yearly) > MAX_YEARLY:
        raise WindowProblem("rrule", f"more than {MAX_YEARLY} occurrences a year: too often")
    return rule


def problems(window: MaintenanceWindow) -> dict[str, str]:
    """What is wrong with a window, by field."""
    if window.server_id is not None and window.group_id is not None:
        return {"group": "give a server or a server group, not both"}
    try:
        recurrence(window.rrule, window.timezone, window.created_at or timezone.now())
    except WindowProblem as problem:
        return {problem.field: str(problem)}
    minutes = window.duration_minutes or 0
    if not 1 <= minutes <= MAX_SILENCE.total_seconds() // 60:
        return {"duration_minutes": f"from 1 minute to {MAX_SILENCE.days} days"}
    return {}


def occurrences(window: MaintenanceWindow, after: datetime, before: datetime) -> list[datetime]:
    """The starts (UTC) of the occurrences that overlap [after, before)."""
    rule = recurrence(window.rrule, window.timezone, window.created_at or timezone.now())
    span = timedelta(minutes=window.duration_minutes)
    starts = rule.between(after - span, before, inc=True)
    return [s.astimezone(UTC) for s in starts if s + span > after]


def next_occurrences(window: MaintenanceWindow, now: datetime | None = None) -> list[datetime]:
    """The next NEXT_SHOWN starts (UTC), the one under way first if it is."""
    now = now or timezone.now()
    rule = recurrence(window.rrule, window.timezone, window.created_at or now)
    span = timedelta(minutes=window.duration_minutes)
    found, moment = [], now - span
    while len(found) < NEXT_SHOWN:
        start = rule.after(moment, inc=False)
        if start is None:
            break
        if start + span > now:
            found.append(start.astimezone(UTC))
        moment = start
    return found


def in_force(window: MaintenanceWindow, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    return bool(occurrences(window, now, now + timedelta(microseconds=1)))


def plan(window: MaintenanceWindow, now: datetime | None = None) -> int:
    """Make the window's occurrences that overlap [now, now + PLAN_AHEAD) silences, and
    drop those it no longer has (an edited rule) that have not ended; returns how many
    it made."""
    now = now or timezone.now()
    span = timedelta(minutes=window.duration_minutes)
    wanted = occurrences(window, now, now + PLAN_AHEAD)
    made = 0
    with transaction.atomic():
        ahead = Silence.objects.filter(window=window, ends_at__gt=now)
        ahead.exclude(starts_at__in=wanted).delete()
        have = {s.starts_at: s for s in Silence.objects.filter(window=window, starts_at__in=wanted)}
        for start in wanted:
            fields = {
                "server": window.server,
                "group": window.group,
                "schema": window.schema,
                "table": window.table,
                "rule": window.rule,
                "ends_at": start + span,
                "comment": f"maintenance window {window.name}"
                + (f" (server group {window.group.name})" if window.group else "")
                + (f": {window.comment}" if window.comment else ""),
                "created_by": window.created_by,
            }
            silence = have.get(start)
            if silence is None:
                Silence.objects.create(window=window, starts_at=start, **fields)
                made += 1
            else:
                Silence.objects.filter(pk=silence.pk).update(**fields)
    return made


def plan_all(now: datetime | None = None) -> int:
    """Beat, every hour: every window's next occurrences made silences."""
    return sum(
        plan(window, now) for window in MaintenanceWindow.objects.select_related("server", "group")
    )
