"""Silences are matched in two places: in SQL, for the API's `silenced`, the alerts page
and the admin (`partdash.alerts.silences`), and in Python, when an evaluation decides what
to hold back (`SilenceScope.holds`). Every silence and alert here is judged the same by
both."""

from itertools import product

import pytest
from django.db.models import Exists
from django.utils import timezone

from partdash.alerts.models import Alert
from partdash.alerts.silences import active_silences, matching
from partdash.health.alert_rules import SilenceScope
from partdash.health.alerting import Key
from tests import builders

pytestmark = pytest.mark.django_db


def test_sql_and_evaluation_match_the_same_alerts():
    db1, db2 = builders.server("db1"), builders.server("db2")
    orders, events = builders.table(db1, "shop", "orders"), builders.table(db1, "log", "events")
    alerts = [
        builders.alert(db1, "runway", of=orders),
        builders.alert(db1, "skew", of=orders),
        builders.alert(db1, "skew", of=events),
        builders.alert(db1, "unreachable"),
        builders.alert(db2, "unreachable"),
    ]
    scopes = product(
        (None, db1.pk), (None, "shop", ""), (None, "orders"), (None, "skew", "unreachable")
    )
    for server, schema, table, rule in scopes:
        silence = builders.silence(server_id=server, schema=schema, table=table, rule=rule)
        scope = SilenceScope(silence.starts_at, silence.ends_at, server, schema, table, rule)
        in_sql = {a.pk for a in alerts if _sql_matches(a, silence.pk)}
        now = timezone.now()
        in_python = {
            a.pk
            for a in alerts
            if scope.holds(a.server_id, Key(a.rule, a.schema, a.table, a.partition), now)
        }
        assert in_sql == in_python, (server, schema, table, rule)
        silence.delete()


def _sql_matches(alert: Alert, silence_id: int) -> bool:
    silences = active_silences().filter(pk=silence_id)
    return Alert.objects.filter(pk=alert.pk).filter(Exists(matching(silences))).exists()
