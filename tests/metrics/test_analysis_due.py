"""Which tables a poll analyses again: those it changed, those never analysed, those
analysed on an earlier day, and those a slot of whose activity left the window since;
told apart from the stored rows without decoding every table's health (issue 14)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.metrics.analysis import _tables_to_analyse
from tests import builders

pytestmark = pytest.mark.django_db


def test_tables_are_due_when_changed_new_from_an_earlier_day_or_their_window_moved():
    now = timezone.now().replace(hour=12)
    server = builders.server()
    stamp = now.timestamp()

    def table(name, **fields):
        return builders.table(server, name=name, **fields).pk

    changed = table("changed", analysed_at=now, health={"window_ends": stamp + 60})
    new = table("new", analysed_at=None, health={})
    yesterday = table("yesterday", analysed_at=now - timedelta(days=1), health={})
    moved = table("moved", analysed_at=now, health={"window_ends": stamp - 1, "score": 3})
    table("quiet", analysed_at=now, health={"window_ends": stamp + 60})
    table("idle", analysed_at=now, health={"window_ends": None})
    table("gone", analysed_at=None, dropped_at=now)

    due = _tables_to_analyse(server, {changed}, now)
    assert {t.pk for t in due} == {changed, new, yesterday, moved}
    assert next(t for t in due if t.pk == moved).health["score"] == 3  # loaded whole
    assert {t.name for t in _tables_to_analyse(server, None, now)} == {
        "changed",
        "new",
        "yesterday",
        "moved",
        "quiet",
        "idle",
    }


def test_a_quiet_poll_analyses_nothing():
    now = timezone.now()
    server = builders.server()
    builders.table(server, analysed_at=now, health={"window_ends": now.timestamp() + 600})
    assert _tables_to_analyse(server, set(), now) == []
