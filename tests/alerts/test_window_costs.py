"""Maintenance windows cost a bounded amount (issue 37, finding 5): a hostile rule is
refused at save with one line after a bounded walk (counted here, not timed), the
400-a-year limit counts from the rule's first occurrence, a plan makes a bounded number
of silences, and a list of windows never expands a rule."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from partdash.alerts import windows
from partdash.alerts.models import MaintenanceWindow, Silence
from partdash.servers.models import ServerGroup
from tests import builders
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

WINDOWS = "/admin/alerts/maintenancewindow/"

NEXT_YEAR_AND_MORE = timezone.now() + timedelta(days=400)
HOSTILE = {
    "secondly": "FREQ=SECONDLY",
    "minutely": "FREQ=MINUTELY;INTERVAL=30",
    "hourly": "FREQ=HOURLY",
    "hourly, interval 21": "FREQ=HOURLY;INTERVAL=21",
    "february 31st": "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31",
    "february 31st, hourly": "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=31;BYHOUR=3",
    "february 30th, yearly": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
    "leap day every 4 years from a year after one": (
        "DTSTART:20250101T000000\nRRULE:FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29"
    ),
    "count exhausted": "DTSTART:20200101T020000\nRRULE:FREQ=DAILY;COUNT=3",
    "until before dtstart": "DTSTART:20300101T000000\nRRULE:FREQ=DAILY;UNTIL=20290101T000000",
    "until passed": "DTSTART:20200101T000000\nRRULE:FREQ=WEEKLY;UNTIL=20210101T000000",
    "dtstart next year, frequent": (
        f"DTSTART:{NEXT_YEAR_AND_MORE:%Y%m%d}T000000\nRRULE:FREQ=DAILY;BYHOUR=0,6,12,18"
    ),
    "dtstart a thousand years back": "DTSTART:10000101T000000\nRRULE:FREQ=DAILY",
    "interval 0": "FREQ=DAILY;INTERVAL=0",
}


class CountedWalks(list):
    """Every `Walk` an expansion made, to count what it walked."""

    def total(self, what: str) -> int:
        return sum(getattr(walk, what) for walk in self)


@pytest.fixture
def walks(monkeypatch) -> CountedWalks:
    made = CountedWalks()

    class Counted(windows.Walk):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(windows, "Walk", Counted)
    return made


@pytest.mark.parametrize("rule", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_rule_is_refused_in_one_line_after_a_bounded_walk(operator, walks, rule):
    group = ServerGroup.objects.create(name="shards")  # (group windows: the same code)
    for scope in ({"server": builders.server("db1").pk}, {"group": group.pk}):
        walks.clear()
        body = {"name": "hostile", "rrule": rule, "duration_minutes": 60, **scope}
        refused = token_client(operator).post("/api/v1/maintenance-windows/", body, format="json")
        assert refused.status_code == 400, refused.content
        [line] = refused.json()["rrule"]
        assert "\n" not in line and len(line) < 160, line
        # Three walks at most (the first occurrence, its year, the next one), each
        # stopped at its limits: WALK_OCCURRENCES (8,000) and WALK_MONTHS (20 years).
        assert len(walks) <= 3
        assert all(walk.occurrences <= windows.WALK_OCCURRENCES + 1 for walk in walks)
        assert all(walk.months <= walk.allowed_months + 1 for walk in walks)
        assert walks.total("months") <= 3 * (windows.WALK_MONTHS + 1)
    assert not MaintenanceWindow.objects.exists() and not Silence.objects.exists()


def test_sub_hourly_rules_are_refused_before_any_expansion(walks):
    for rule in (HOSTILE["secondly"], HOSTILE["minutely"], HOSTILE["hourly"]):
        window = MaintenanceWindow(name="w", rrule=rule, duration_minutes=5)
        assert "FREQ=" in windows.problems(window)["rrule"]
    assert walks == []


def test_a_rule_that_never_occurs_is_stopped_between_occurrences():
    """dateutil loops to year 9999 without yielding (3 s for this rule, measured): the
    walk stops it within WALK_MONTHS months, with nothing found."""
    rule = windows.recurrence(HOSTILE["february 31st"], "UTC", timezone.now())
    walk = windows.Walk()
    with pytest.raises(windows.WalkEnded) as ended:
        next(windows.starts(rule, walk))
    assert ended.value.spent == "months"
    assert (walk.months, walk.occurrences) == (windows.WALK_MONTHS + 1, 0)


def test_the_time_budget_stops_a_walk(settings, walks):
    settings.PARTDASH_WINDOW_EXPANSION_MS = 0
    window = MaintenanceWindow(name="w", rrule="FREQ=WEEKLY;BYDAY=SU", duration_minutes=60)
    assert windows.problems(window) == {
        "rrule": "too costly to expand (over 0 ms): a simpler rule or a later DTSTART"
    }
    assert walks.total("occurrences") <= 1


def test_the_yearly_limit_counts_from_the_first_occurrence(walks):
    """Four a day from a DTSTART more than a year ahead: nothing in the year from now,
    1,460 in the year from its first occurrence; the count stops at the limit."""
    window = MaintenanceWindow(
        name="w", rrule=HOSTILE["dtstart next year, frequent"], duration_minutes=60
    )
    problem = windows.problems(window)["rrule"]
    assert problem.startswith("more than 400 occurrences in the year from its first (")
    assert walks.total("occurrences") <= windows.MAX_YEARLY + 3
    # As often as allowed, just: accepted.
    window.rrule = window.rrule.replace("BYHOUR=0,6,12,18", "BYHOUR=0").replace(
        "FREQ=DAILY", "FREQ=HOURLY;INTERVAL=22"
    )
    assert windows.problems(window) == {}


def test_a_rare_rule_that_does_occur_is_accepted():
    """Feb 29th on a Monday: once in 28 years (2044 next), within the walk."""
    window = MaintenanceWindow(
        name="w", rrule="FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", duration_minutes=60
    )
    assert windows.problems(window) == {}


def test_a_plan_makes_a_bounded_number_of_silences():
    """384 hourly occurrences in 16 days (fewer than 400 a year): a plan makes the first
    MAX_PLANNED, and later plans the next ones as those pass."""
    db1 = builders.server("db1")
    hours = ",".join(str(h) for h in range(24))
    window = MaintenanceWindow.objects.create(
        name="bunched",
        rrule=f"DTSTART:20270101T000000\nRRULE:FREQ=DAILY;BYHOUR={hours};COUNT=384",
        duration_minutes=30,
        timezone="UTC",
        server=db1,
    )
    start = datetime(2027, 1, 1, tzinfo=UTC)
    assert windows.problems(window, start) == {}
    assert windows.plan(window, start) == windows.MAX_PLANNED
    assert windows.plan(window, start) == 0  # (again: nothing new)
    later = start + timedelta(hours=5, minutes=15)  # (05:00 under way)
    windows.plan(window, later)
    ahead = Silence.objects.filter(window=window, ends_at__gt=later)
    assert ahead.count() == windows.MAX_PLANNED
    assert min(ahead.values_list("starts_at", flat=True)) == start + timedelta(hours=5)


def test_a_group_windows_plan_is_bounded_too():
    group = ServerGroup.objects.create(name="shards")
    window = MaintenanceWindow.objects.create(
        name="g",
        rrule="DTSTART:20270101T000000\nRRULE:FREQ=DAILY;BYHOUR=0,1,2,3,4,5,6,7;COUNT=200",
        duration_minutes=10,
        group=group,
    )
    made = windows.plan(window, datetime(2027, 1, 1, tzinfo=UTC))
    assert made == windows.MAX_PLANNED == Silence.objects.filter(group=group).count()


def test_listing_windows_never_expands_a_rule(viewer_api, walks, django_assert_max_num_queries):
    """Thirty windows, planned (their next starts stored): the list shows them, in
    force or not, without one expansion and in a fixed number of queries."""
    db1 = builders.server("db1")
    now = timezone.now()
    # The others daily half a day away: a bare FREQ=DAILY starts at midnight, in force
    # when the test runs in the half hour after it.
    later = f"FREQ=DAILY;BYHOUR={(now.hour + 12) % 24};BYMINUTE=0"
    for n in range(30):
        window = MaintenanceWindow.objects.create(
            name=f"w{n:02}",
            rrule=f"FREQ=DAILY;BYHOUR={now.hour};BYMINUTE={now.minute}" if n == 0 else later,
            duration_minutes=30,
            server=db1,
        )
        windows.plan(window)
    expected = [
        s.isoformat().replace("+00:00", "Z")
        for s in windows.next_occurrences(MaintenanceWindow.objects.get(name="w00"))
    ]
    walks.clear()
    with django_assert_max_num_queries(8):
        listed = viewer_api.get("/api/v1/maintenance-windows/")
    assert listed.status_code == 200
    assert walks == []
    shown = {w["name"]: w for w in listed.json()}
    assert shown["w00"]["in_force"] and shown["w00"]["next_occurrences"] == expected
    assert not shown["w01"]["in_force"] and len(shown["w01"]["next_occurrences"]) == 5


def test_the_admin_refuses_a_hostile_rule_and_lists_without_expanding(admin_client, walks):
    form = {"name": "w", "duration_minutes": "60", "timezone": "UTC", "comment": ""}
    for rule in (HOSTILE["secondly"], HOSTILE["february 31st"], HOSTILE["count exhausted"]):
        page = admin_client.post(WINDOWS + "add/", {**form, "rrule": rule})
        assert page.status_code == 200 and b"errorlist" in page.content, rule
    assert not MaintenanceWindow.objects.exists()
    saved = admin_client.post(WINDOWS + "add/", {**form, "rrule": "FREQ=DAILY;BYHOUR=3"})
    assert saved.status_code == 302 and MaintenanceWindow.objects.get().upcoming_starts
    walks.clear()
    listed = admin_client.get(WINDOWS)
    assert listed.status_code == 200 and b"03:00" in listed.content and walks == []
