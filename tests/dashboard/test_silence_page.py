"""The silence page every alert email links to (/alerts/silence/?server=&schema=&table=&rule=):
filled from the link, it shows what it would hold back, and a staff user's choice of 1 h,
4 h, 24 h or 7 d makes a silence of theirs starting now. Viewers see why they cannot."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.alerts.models import Silence
from tests import builders

pytestmark = pytest.mark.django_db

SILENCE = "/alerts/silence/"


@pytest.fixture
def viewer_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("viewer", password="viewer-pw"))
    return client


def test_the_page_needs_a_login(client):
    response = client.get(f"{SILENCE}?rule=skew")

    assert response.status_code == 302 and "login" in response["Location"]


def test_the_link_fills_the_form_and_lists_the_alerts_it_would_hold_back(admin_client):
    db1 = builders.server("db1")
    orders = builders.table(db1)
    firing = builders.alert(db1, "runway", of=orders)
    other_table = builders.alert(db1, "runway", of=builders.table(db1, name="events"))
    link = f"{SILENCE}?server={db1.pk}&schema=shop&table=orders&rule=runway"

    response = admin_client.get(link)

    form = response.context["form"]
    assert form.initial == {
        "server": db1,
        "schema": "shop",
        "table": "orders",
        "rule": "runway",
        "duration": "4h",
    }
    assert [alert.pk for alert in response.context["matched"]] == [firing.pk]
    page = response.content.decode()
    assert f'data-id="{firing.pk}"' in page and f'data-id="{other_table.pk}"' not in page
    assert "It matches 1 open alert now" in page
    for label in ("1 hour", "4 hours", "24 hours", "7 days"):
        assert label in page


@pytest.mark.parametrize("duration, length", [("1h", 1), ("4h", 4), ("24h", 24), ("7d", 168)])
def test_a_staff_user_silences_for_the_chosen_duration(admin_client, admin_user, duration, length):
    db1 = builders.server("db1")
    before = timezone.now()

    response = admin_client.post(
        SILENCE,
        {
            "server": db1.pk,
            "schema": "shop",
            "table": "orders",
            "rule": "runway",
            "duration": duration,
            "comment": "moving the catch-all tonight",
        },
    )

    assert response.status_code == 302
    assert response["Location"] == f"/alerts/?server={db1.pk}"
    silence = Silence.objects.get()
    assert (silence.server, silence.schema, silence.table, silence.rule) == (
        db1,
        "shop",
        "orders",
        "runway",
    )
    assert silence.created_by == admin_user and silence.comment == "moving the catch-all tonight"
    assert before <= silence.starts_at <= timezone.now()
    assert silence.ends_at - silence.starts_at == timedelta(hours=length)


def test_blank_fields_match_everything(admin_client):
    response = admin_client.post(SILENCE, {"server": "", "rule": "", "duration": "1h"})

    assert response.status_code == 302 and response["Location"] == "/alerts/"
    silence = Silence.objects.get()
    assert (silence.server, silence.schema, silence.table, silence.rule) == (None,) * 4


def test_a_page_that_would_silence_everything_says_so(admin_client):
    assert "This silences every alert of every server" in admin_client.get(SILENCE).content.decode()


def test_an_unknown_duration_or_rule_is_a_form_error_not_a_silence(admin_client):
    response = admin_client.post(SILENCE, {"rule": "nonsense", "duration": "1y"})

    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"rule", "duration"}
    assert not Silence.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        "server=abc&rule=nonsense",
        "server=999999999999999999999999",
        "server=%C2%B2&table=" + "t" * 200,
        "duration=forever",
    ],
)
def test_a_malformed_link_still_shows_the_form(admin_client, query):
    response = admin_client.get(f"{SILENCE}?{query}")

    assert response.status_code == 200
    assert response.context["form"].initial.get("server") is None


def test_a_viewer_sees_why_they_cannot_silence_and_cannot_post(viewer_client):
    db1 = builders.server("db1")

    page = viewer_client.get(f"{SILENCE}?server={db1.pk}").content.decode()
    refused = viewer_client.post(SILENCE, {"server": db1.pk, "duration": "1h"})

    assert "Only operators and administrators can silence alerts" in page
    assert 'id="silence-submit" disabled' in page
    assert refused.status_code == 403
    assert not Silence.objects.exists()
