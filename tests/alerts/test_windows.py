"""Maintenance windows: recurring silences with RRULE semantics in their time zone
(daylight saving included), listed with their next occurrences, made silences ahead of
time; a transition during an occurrence is held back, and an alert still firing when it
ends is announced once."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from partdash.alerts import windows
from partdash.alerts.models import Alert, MaintenanceWindow, Silence, Transition
from partdash.alerts.service import Evaluation
from partdash.health.alerting import Condition, Key
from partdash.servers.models import ServerGroup
from tests import builders
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

SUNDAYS = "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=0"


def test_sunday_nights_in_paris_across_daylight_saving():
    window = MaintenanceWindow(
        name="sundays",
        rrule=SUNDAYS,
        duration_minutes=120,
        timezone="Europe/Paris",
        created_at=datetime(2026, 10, 1, tzinfo=UTC),
    )
    starts = windows.next_occurrences(window, datetime(2026, 10, 19, tzinfo=UTC))
    assert starts[:3] == [  # 02:00 in Paris: CEST (UTC+2), then CET (UTC+1) from Oct 25
        datetime(2026, 10, 25, 0, 0, tzinfo=UTC),  # (that night 02:00 comes twice: the first)
        datetime(2026, 11, 1, 1, 0, tzinfo=UTC),
        datetime(2026, 11, 8, 1, 0, tzinfo=UTC),
    ]
    starts = windows.next_occurrences(window, datetime(2026, 10, 11, tzinfo=UTC))
    assert starts[0] == datetime(2026, 10, 11, 0, 0, tzinfo=UTC)  # CEST
    assert windows.in_force(window, datetime(2026, 11, 1, 2, 59, tzinfo=UTC))
    assert not windows.in_force(window, datetime(2026, 11, 1, 3, 0, tzinfo=UTC))
    # The one under way is listed first.
    assert windows.next_occurrences(window, datetime(2026, 11, 1, 2, tzinfo=UTC))[0] == (
        datetime(2026, 11, 1, 1, 0, tzinfo=UTC)
    )


def test_windows_through_the_api(operator, viewer_api):
    db1 = builders.server("db1")
    api = token_client(operator)
    body = {
        "name": "sunday maintenance",
        "rrule": SUNDAYS,
        "duration_minutes": 120,
        "timezone": "Europe/Paris",
        "server": db1.pk,
        "rule": "runway",
    }
    made = api.post("/api/v1/maintenance-windows/", body, format="json")
    assert made.status_code == 201, made.content
    shown = made.json()
    assert (
        shown["group"] is None and shown["schema"] is None and len(shown["next_occurrences"]) == 5
    )
    first = datetime.fromisoformat(shown["next_occurrences"][0].replace("Z", "+00:00"))
    assert first.astimezone(windows.zone("Europe/Paris")).hour in (2, 3)  # (3: a DST night)
    # Its occurrences of the next days are silences, in the window's scope.
    window = MaintenanceWindow.objects.get()
    planned = list(Silence.objects.filter(window=window))
    assert 1 <= len(planned) <= 2
    assert all(s.server_id == db1.pk and s.rule == "runway" for s in planned)
    assert all(s.ends_at - s.starts_at == timedelta(minutes=120) for s in planned)
    assert "maintenance window sunday maintenance" in planned[0].comment
    # Edited to Saturdays: the Sunday silences ahead are gone, Saturday's made.
    edited = api.patch(
        f"/api/v1/maintenance-windows/{window.pk}/",
        {"rrule": "FREQ=WEEKLY;BYDAY=SA;BYHOUR=2"},
        format="json",
    )
    assert edited.status_code == 200, edited.content
    days = {
        s.starts_at.astimezone(windows.zone("Europe/Paris")).weekday()
        for s in Silence.objects.filter(window=window)
    }
    assert days == {5}
    for bad, field in (
        ({"rrule": "FREQ=MINUTELY"}, "rrule"),
        ({"rrule": "every sunday"}, "rrule"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"duration_minutes": 0}, "duration_minutes"),
        ({"group": 3}, "group"),
    ):
        refused = api.post(
            "/api/v1/maintenance-windows/", {**body, "name": "x", **bad}, format="json"
        )
        assert refused.status_code == 400 and field in refused.json(), (bad, refused.content)
    assert viewer_api.get("/api/v1/maintenance-windows/").status_code == 200
    assert viewer_api.post("/api/v1/maintenance-windows/", body, format="json").status_code == 403
    assert api.delete(f"/api/v1/maintenance-windows/{window.pk}/").status_code == 204
    assert not Silence.objects.filter(comment__startswith="maintenance window").exists()


def test_a_window_holds_a_transition_and_releases_it_once(settings):
    """An occurrence under way now: the alert fires silenced (nothing to send); once the
    occurrence has ended, the next evaluation announces it, once."""
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    db1 = builders.server("db1")
    builders.table(db1, "a", "b")
    window = builders.window_now(db1)
    assert windows.in_force(window)
    key = Key("skew", "a", "b")

    def evaluate() -> list[Transition]:
        before = set(Transition.objects.values_list("pk", flat=True))
        evaluation = Evaluation(db1, timezone.now(), list(Alert.objects.exclude(state="resolved")))
        evaluation.conditions[key] = Condition(value=3.0, limit=2.0, severity="warning")
        evaluation.run()
        return list(Transition.objects.exclude(pk__in=before))

    held = evaluate()
    assert [(t.kind, t.silenced) for t in held] == [("firing", True)]
    assert evaluate() == []
    Silence.objects.filter(window=window).update(ends_at=timezone.now() - timedelta(seconds=1))
    released = evaluate()
    assert [(t.kind, t.silenced) for t in released] == [("firing", False)]
    assert evaluate() == []


def test_a_group_window_holds_its_members_alerts_and_no_one_elses(admin_client, settings):
    """A window on a server group silences every member's transitions, as members are at
    each evaluation, and nothing of a server outside it; the API says which are held."""
    settings.PARTDASH_ALERT_FOR_POLLS = 1
    db1, db2, other = builders.server("db1"), builders.server("db2"), builders.server("db3")
    group = ServerGroup.objects.create(name="shards")
    group.servers.set([db1])
    now = timezone.now()
    made = admin_client.post(
        "/api/v1/maintenance-windows/",
        {
            "name": "shard-maintenance",
            "rrule": f"FREQ=DAILY;BYHOUR={now.hour};BYMINUTE={now.minute}",
            "duration_minutes": 30,
            "group": group.pk,
        },
        content_type="application/json",
    )
    assert made.status_code == 201 and made.json()["group"] == group.pk, made.content
    both = admin_client.post(
        "/api/v1/maintenance-windows/",
        {
            "name": "x",
            "rrule": "FREQ=DAILY",
            "duration_minutes": 5,
            "group": group.pk,
            "server": db1.pk,
        },
        content_type="application/json",
    )
    assert both.json() == {"group": ["give a server or a server group, not both"]}
    group.servers.add(db2)  # joins after the window was made: held all the same

    def fires(server) -> list[bool]:
        evaluation = Evaluation(server, timezone.now(), [])
        evaluation.conditions[Key("skew", "a", "b")] = Condition(3.0, limit=2.0)
        evaluation.run()
        return [t.silenced for t in Transition.objects.filter(alert__server=server)]

    assert fires(db1) == [True] and fires(db2) == [True] and fires(other) == [False]
    comments = set(Silence.objects.filter(window__name="shard-maintenance").values_list("comment"))
    assert comments == {("maintenance window shard-maintenance (server group shards)",)}
    shown = {a["server"]: a["silenced"] for a in admin_client.get("/api/v1/alerts/").json()}
    assert shown == {"db1": True, "db2": True, "db3": False}
