"""Maintenance windows: recurring silences ("every Sunday 02:00-04:00 Europe/Paris on
db1"), with RRULE semantics (RFC 5545, python-dateutil) in the window's time zone, so a
window at 02:00 stays at 02:00 local time across daylight saving changes.

Each occurrence is made a silence ahead of time (`plan`: those starting within
PLAN_AHEAD, made again whenever a window is saved, and by beat every hour), so every
silence rule holds for it as it is: a transition held back while it lasts, and an alert
still firing when it ends announced once, at the next evaluation.

A rule is an attacker's program: every expansion walks it under a `Walk` (calendar
months, occurrences, seconds: whichever runs out first), a rule that is too frequent or
never occurs is refused at save, and the next starts are stored on the window by each
plan, so reading windows (the API's list, the admin) never expands a rule.
"""

import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil import rrule as rrules
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from partdash.alerts.models import MaintenanceWindow, Silence
from partdash.alerts.silences import MAX_SILENCE

log = logging.getLogger(__name__)

PLAN_AHEAD = timedelta(days=8)  # occurrences made silences this far ahead
NEXT_SHOWN = 5  # next occurrences listed
MAX_YEARLY = 400  # occurrences in a year from the first, at most: every minute is an error
# Silences one plan keeps ahead for one window. 400 a year spread evenly is 9 in
# PLAN_AHEAD; a rule that bunches them gets its first 32, the rest made by the hourly
# plans as those pass (the finding: 54,720 silences per plan of a minutely rule).
MAX_PLANNED = 32
# Calendar one expansion may walk: a rule with no occurrence in that span never occurs
# (February 31st), and a DTSTART further back costs the walk from it at every plan.
WALK_MONTHS = 20 * 12
WALK_OCCURRENCES = 20 * MAX_YEARLY  # occurrences one expansion may step through
MAX_RRULE_CHARS = 1000  # a DTSTART line and a rule with long BY lists fit in a few hundred
HOURS_A_YEAR = 366 * 24


class WindowProblem(ValueError):
    """A window that cannot be: a field and one line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class WalkEnded(Exception):
    """An expansion used up its `Walk`: `spent` says what ran out."""

    def __init__(self, spent: str) -> None:
        super().__init__(spent)
        self.spent = spent


class Walk:
    """What one expansion of a rule may cost: `months` of calendar (WALK_MONTHS),
    WALK_OCCURRENCES, and PARTDASH_WINDOW_EXPANSION_MS, whichever runs out first (then
    `WalkEnded`).
    `months` and `occurrences` say what it walked (the tests count them)."""

    def __init__(self, months: int = WALK_MONTHS) -> None:
        budget = settings.PARTDASH_WINDOW_EXPANSION_MS / 1000
        self.deadline = time.monotonic() + budget
        self.allowed_months = months
        self.months = self.occurrences = 0

    def month(self) -> None:
        self.months += 1
        if self.months > self.allowed_months:
            raise WalkEnded("months")
        self._in_time()

    def occurrence(self) -> None:
        self.occurrences += 1
        if self.occurrences > WALK_OCCURRENCES:
            raise WalkEnded("occurrences")
        self._in_time()

    def _in_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise WalkEnded("time")


class WalkedRule(rrules.rrule):
    """An rrule whose expansion answers to a `Walk`, also between occurrences.

    dateutil's iterator hands control back only at an occurrence: a rule that never
    occurs (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31) loops inside it to year 9999, 3.0 s
    daily and 5.2 s hourly, measured (the finding: 27 s per list GET). Its calendar
    (`_iterinfo.rebuild`) reads `_byeaster` once per month it moves into (once per
    period for a yearly rule), so that read is where the walk is charged.
    tests/alerts/test_window_costs.py fails if a dateutil upgrade moves it."""

    walk: Walk | None = None

    @property  # type: ignore[override]
    def _byeaster(self):  # noqa: ANN202 (dateutil's own attribute: a tuple or None)
        if self.walk is not None:
            self.walk.month()
        return self.__dict__["_easter"]

    @_byeaster.setter
    def _byeaster(self, value) -> None:  # noqa: ANN001
        self.__dict__["_easter"] = value


def zone(name: str) -> ZoneInfo:
    try:  # (ZoneInfo checks the name itself, from its cache after the first time)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise WindowProblem(
            "timezone", f"unknown time zone {name!r} (e.g. Europe/Paris, UTC)"
        ) from None


def recurrence(text: str, tz_name: str, anchor: datetime) -> WalkedRule:
    """The window's rule: `text` is an RRULE (`FREQ=WEEKLY;BYDAY=SU;BYHOUR=2`, with or
    without `RRULE:`), optionally after a `DTSTART`; without one, it starts at midnight
    of `anchor`'s day in the window's zone (so BYHOUR and BYMINUTE say the time). Only
    its parts are checked here (no expansion): see `rule_problem` for its occurrences."""
    tz = zone(tz_name)
    text = text.strip()
    if not text:
        raise WindowProblem("rrule", "an RRULE is required, e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2")
    if len(text) > MAX_RRULE_CHARS:
        raise WindowProblem("rrule", f"an RRULE of at most {MAX_RRULE_CHARS} characters")
    if "DTSTART" not in text.upper() and not text.upper().startswith("RRULE:"):
        text = f"RRULE:{text}"
    start = anchor.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        rule = rrules.rrulestr(text, dtstart=start, forceset=False)
        if not isinstance(rule, rrules.rrule):
            raise WindowProblem("rrule", "one RRULE (and its DTSTART), not a set")
        rule = _walked(rule, tz)
    except (ValueError, TypeError, KeyError, OverflowError) as error:
        if isinstance(error, WindowProblem):
            raise
        detail = " ".join(str(error).split())
        raise WindowProblem(
            "rrule", f"not an RRULE such as FREQ=WEEKLY;BYDAY=SU;BYHOUR=2 ({detail})"
        ) from None
    _check_parts(rule)
    return rule


def _walked(rule: rrules.rrule, tz: ZoneInfo) -> WalkedRule:
    """`rule` as a WalkedRule (what `rrule.replace` does, whose result is a plain
    rrule), a floating DTSTART or UNTIL read in the window's zone `tz`."""

    def zoned(moment: datetime | None) -> datetime | None:
        return moment.replace(tzinfo=tz) if moment and moment.tzinfo is None else moment

    return WalkedRule(
        freq=rule._freq,
        dtstart=zoned(rule._dtstart),
        interval=rule._interval,
        wkst=rule._wkst,
        count=rule._count,
        until=zoned(rule._until),
        **rule._original_rule,
    )


def _check_parts(rule: WalkedRule) -> None:
    """Refuse what the parts alone show, before any expansion: sub-hourly frequencies,
    an hourly one more often than MAX_YEARLY with nothing to narrow it, an UNTIL before
    DTSTART."""
    if rule._freq in (rrules.MINUTELY, rrules.SECONDLY):
        name = "MINUTELY" if rule._freq == rrules.MINUTELY else "SECONDLY"
        raise WindowProblem(
            "rrule", f"FREQ={name}: a window recurs at most hourly (FREQ=HOURLY, DAILY...)"
        )
    if rule._interval < 1:
        raise WindowProblem("rrule", "INTERVAL must be 1 or more")
    narrowed = set(rule._original_rule) - {"byminute", "bysecond"}
    yearly = -(-HOURS_A_YEAR // rule._interval)
    if rule._freq == rrules.HOURLY and not narrowed and yearly > MAX_YEARLY:
        least = -(-HOURS_A_YEAR // MAX_YEARLY)
        raise WindowProblem(
            "rrule",
            f"FREQ=HOURLY;INTERVAL={rule._interval} occurs {yearly} times a year, more than "
            f"{MAX_YEARLY}: INTERVAL={least} or more, or narrow it with BYHOUR",
        )
    if rule._until is not None and rule._until < rule._dtstart:
        raise WindowProblem(
            "rrule", f"UNTIL is before DTSTART ({rule._dtstart:%Y-%m-%d %H:%M}): it never occurs"
        )


def starts(rule: WalkedRule, walk: Walk) -> Iterator[datetime]:
    """The rule's starts from its first, each one (and each month walked) charged to
    `walk`."""
    rule.walk = walk
    for start in rule:
        walk.occurrence()
        yield start


def rule_problem(rule: WalkedRule, span: timedelta, now: datetime) -> str | None:
    """What is wrong with the rule's occurrences, in one line, or None: it must occur,
    at most MAX_YEARLY times in the year from its first occurrence (not from now: a
    DTSTART next year counts too), and again after `now`. Each is one bounded walk."""
    to_first = Walk()
    try:
        first = next(starts(rule, to_first), None)
    except WalkEnded as ended:
        never = f"no occurrence in the {WALK_MONTHS // 12} years from its DTSTART: it never occurs"
        return _unwalkable(ended, never)
    if first is None:
        return "it never occurs (its COUNT, UNTIL or BY parts leave no date)"
    # The year from the first: the months walked to it and 13 more (a yearly rule's
    # months are years: more than enough).
    year_walk = Walk(months=to_first.months + 13)
    in_year = 0
    try:
        for start in starts(rule, year_walk):
            if start >= first + _YEAR or in_year > MAX_YEARLY:
                break
            in_year += 1
    except WalkEnded as ended:
        if ended.spent != "months":
            return _unwalkable(ended, "")
    if in_year > MAX_YEARLY:
        return (
            f"more than {MAX_YEARLY} occurrences in the year from its first "
            f"({first:%Y-%m-%d}): too often for a maintenance window"
        )
    try:
        upcoming = next((s for s in starts(rule, Walk()) if s + span > now), None)
    except WalkEnded as ended:
        return _unwalkable(
            ended,
            f"no occurrence from now on found walking from its DTSTART "
            f"({rule._dtstart:%Y-%m-%d}): a later DTSTART, or a rule that occurs again",
        )
    if upcoming is None:
        return "it never occurs again (its COUNT or UNTIL has passed)"
    return None


_YEAR = timedelta(days=366)


def _unwalkable(ended: WalkEnded, calendar: str) -> str:
    """One line for a walk that ran out: `calendar` when its months did."""
    if ended.spent == "months" and calendar:
        return calendar
    if ended.spent == "time":
        budget = settings.PARTDASH_WINDOW_EXPANSION_MS
        return f"too costly to expand (over {budget} ms): a simpler rule or a later DTSTART"
    return f"too costly to expand (over {WALK_OCCURRENCES} occurrences walked): a later DTSTART"


def problems(window: MaintenanceWindow, now: datetime | None = None) -> dict[str, str]:
    """What is wrong with a window, by field (one line each). Bounded: see `Walk`."""
    if window.server_id is not None and window.group_id is not None:
        return {"group": "give a server or a server group, not both"}
    now = now or timezone.now()
    minutes = window.duration_minutes or 0
    if not 1 <= minutes <= MAX_SILENCE.total_seconds() // 60:
        return {"duration_minutes": f"from 1 minute to {MAX_SILENCE.days} days"}
    try:
        rule = recurrence(window.rrule or "", window.timezone, window.created_at or now)
    except WindowProblem as problem:
        return {problem.field: str(problem)}
    problem = rule_problem(rule, timedelta(minutes=minutes), now)
    return {"rrule": problem} if problem else {}


def _rule_of(window: MaintenanceWindow, now: datetime) -> WalkedRule:
    return recurrence(window.rrule, window.timezone, window.created_at or now)


def upcoming_starts(window: MaintenanceWindow, now: datetime | None = None) -> list[datetime]:
    """The starts (UTC) of the occurrences not ended at `now`, through PLAN_AHEAD and
    NEXT_SHOWN beyond, at most MAX_PLANNED + NEXT_SHOWN: one bounded walk (WalkEnded
    when it runs out)."""
    now = now or timezone.now()
    span = timedelta(minutes=window.duration_minutes)
    found: list[datetime] = []
    beyond = 0
    for start in starts(_rule_of(window, now), Walk()):
        if start + span <= now:
            continue
        found.append(start.astimezone(UTC))
        if start >= now + PLAN_AHEAD:
            beyond += 1
        if beyond >= NEXT_SHOWN or len(found) >= MAX_PLANNED + NEXT_SHOWN:
            break
    return found


def occurrences(window: MaintenanceWindow, after: datetime, before: datetime) -> list[datetime]:
    """The starts (UTC) of the occurrences that overlap [after, before), at most
    MAX_PLANNED (one bounded walk)."""
    span = timedelta(minutes=window.duration_minutes)
    found = []
    for start in starts(_rule_of(window, after), Walk()):
        if start >= before or len(found) >= MAX_PLANNED:
            break
        if start + span > after:
            found.append(start.astimezone(UTC))
    return found


def next_occurrences(window: MaintenanceWindow, now: datetime | None = None) -> list[datetime]:
    """The next NEXT_SHOWN starts (UTC), the one under way first if it is (expanded)."""
    return upcoming_starts(window, now)[:NEXT_SHOWN]


def in_force(window: MaintenanceWindow, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    return bool(occurrences(window, now, now + timedelta(microseconds=1)))


def stored_next(window: MaintenanceWindow, now: datetime | None = None) -> list[datetime]:
    """The next NEXT_SHOWN starts as the last plan stored them (no expansion: what the
    API's list and the admin show), the one under way first."""
    now = now or timezone.now()
    span = timedelta(minutes=window.duration_minutes)
    stored = [datetime.fromisoformat(start) for start in window.upcoming_starts or []]
    return [start for start in stored if start + span > now][:NEXT_SHOWN]


def stored_in_force(window: MaintenanceWindow, now: datetime | None = None) -> bool:
    """Whether an occurrence is under way, from the starts the last plan stored."""
    now = now or timezone.now()
    return any(start <= now for start in stored_next(window, now))


def plan(window: MaintenanceWindow, now: datetime | None = None) -> int:
    """Make the window's occurrences that overlap [now, now + PLAN_AHEAD) silences (at
    most MAX_PLANNED), drop those it no longer has (an edited rule) that have not
    ended, and store its next starts on it; returns how many silences it made. A rule
    that can no longer be walked (its DTSTART fell too far back) is logged, its
    silences left as they are."""
    now = now or timezone.now()
    try:
        upcoming = upcoming_starts(window, now)
    except (WalkEnded, WindowProblem) as problem:
        log.warning("maintenance window %s not planned: %s", window.pk, problem)
        return 0
    wanted = [start for start in upcoming if start < now + PLAN_AHEAD][:MAX_PLANNED]
    with transaction.atomic():
        stored = [start.isoformat() for start in upcoming]
        MaintenanceWindow.objects.filter(pk=window.pk).update(upcoming_starts=stored)
        window.upcoming_starts = stored
        return _make_silences(window, wanted, now)


def _make_silences(window: MaintenanceWindow, wanted: list[datetime], now: datetime) -> int:
    span = timedelta(minutes=window.duration_minutes)
    ahead = Silence.objects.filter(window=window, ends_at__gt=now)
    ahead.exclude(starts_at__in=wanted).delete()
    have = {s.starts_at: s for s in Silence.objects.filter(window=window, starts_at__in=wanted)}
    made = 0
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
