"""GET /api/v1/alerts/: the contract's fields, filters by state, server, table, rule and
silence, bad filters as 400, and the open counts the badges read."""

import pytest
from rest_framework.test import APIClient

from partdash.alerts.models import Alert
from tests import builders

pytestmark = pytest.mark.django_db

ALERTS = "/api/v1/alerts/"
CONTRACT_FIELDS = [
    "id",
    "rule",
    "severity",
    "server_id",
    "server",
    "table_id",
    "schema",
    "table",
    "partition",
    "state",
    "value",
    "threshold",
    "message",
    "fix",
    "started_at",
    "resolved_at",
    "notified_at",
    "silenced",
    # CONTRACT, "Added with the open issues": acknowledgements
    "acknowledged_by",
    "acknowledged_at",
    "ack_comment",
]


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [alert["id"] for alert in response.json()]


def test_an_alert_has_exactly_the_contract_fields_with_its_fix(viewer_api):
    db1 = builders.server("db1")
    orders = builders.table(db1)
    firing = builders.alert(db1, "runway", of=orders, fix=builders.RUNWAY_FIX, partition="p_max")

    (shown,) = viewer_api.get(ALERTS).json()

    assert list(shown) == CONTRACT_FIELDS
    assert shown["id"] == firing.pk
    assert shown["rule"] == "runway" and shown["state"] == "firing"
    assert (shown["server_id"], shown["server"]) == (db1.pk, "db1")
    assert (shown["table_id"], shown["schema"], shown["table"]) == (orders.pk, "shop", "orders")
    assert shown["partition"] == "p_max"
    assert (shown["value"], shown["threshold"]) == (3.0, 14.0)
    assert shown["fix"] == builders.RUNWAY_FIX
    assert shown["notified_at"] is not None and shown["resolved_at"] is None
    assert shown["silenced"] is False


def test_a_servers_own_alert_has_no_table_schema_or_partition(viewer_api):
    db1 = builders.server("db1")
    builders.alert(db1, "unreachable", fix=None)

    (shown,) = viewer_api.get(ALERTS).json()

    assert shown["table_id"] is None and shown["schema"] is None
    assert shown["table"] is None and shown["partition"] is None
    assert shown["fix"] is None


def test_a_fix_without_sql_shows_sql_null(viewer_api):
    db1 = builders.server()
    builders.alert(db1, "skew", of=builders.table(db1), fix={"advice": "Choose another key."})

    (shown,) = viewer_api.get(ALERTS).json()

    assert shown["fix"] == {
        "advice": "Choose another key.",
        "sql": None,
        "safety": None,
        "rows": None,
        "bytes": None,
    }


def test_state_filters_firing_pending_and_resolved(viewer_api):
    db1 = builders.server()
    firing = builders.alert(db1, "skew", of=builders.table(db1, name="a"))
    pending = builders.alert(db1, "skew", "pending", of=builders.table(db1, name="b"))
    resolved = builders.alert(db1, "skew", "resolved", of=builders.table(db1, name="c"))

    assert ids(viewer_api.get(ALERTS, {"state": "firing"})) == [firing.pk]
    assert ids(viewer_api.get(ALERTS, {"state": "pending"})) == [pending.pk]
    assert ids(viewer_api.get(ALERTS, {"state": "resolved"})) == [resolved.pk]
    assert set(ids(viewer_api.get(ALERTS))) == {firing.pk, pending.pk, resolved.pk}


def test_server_table_and_rule_filters(viewer_api):
    db1, db2 = builders.server("db1"), builders.server("db2")
    orders, events = builders.table(db1), builders.table(db1, name="events")
    on_orders = builders.alert(db1, "runway", of=orders)
    on_events = builders.alert(db1, "skew", of=events)
    on_db2 = builders.alert(db2, "unreachable")

    assert set(ids(viewer_api.get(ALERTS, {"server": db1.pk}))) == {on_orders.pk, on_events.pk}
    assert ids(viewer_api.get(ALERTS, {"server": db2.pk})) == [on_db2.pk]
    assert ids(viewer_api.get(ALERTS, {"table": orders.pk})) == [on_orders.pk]
    assert ids(viewer_api.get(ALERTS, {"rule": "skew"})) == [on_events.pk]
    assert ids(viewer_api.get(ALERTS, {"server": db1.pk, "rule": "unreachable"})) == []


def test_open_alerts_list_critical_first_and_history_newest_first(viewer_api):
    from datetime import timedelta

    db1 = builders.server()
    warning = builders.alert(db1, "skew", of=builders.table(db1, name="a"), severity="warning")
    critical = builders.alert(db1, "skew", of=builders.table(db1, name="b"), severity="critical")
    older = builders.alert(db1, "skew", "resolved", of=builders.table(db1, name="c"))
    older.resolved_at -= timedelta(hours=2)
    older.save()
    newer = builders.alert(db1, "skew", "resolved", of=builders.table(db1, name="d"))

    assert ids(viewer_api.get(ALERTS, {"state": "firing"})) == [critical.pk, warning.pk]
    assert ids(viewer_api.get(ALERTS, {"state": "resolved"})) == [newer.pk, older.pk]
    assert len(ids(viewer_api.get(ALERTS, {"state": "resolved", "limit": 1}))) == 1


def test_silenced_is_true_while_a_matching_silence_is_in_force(viewer_api):
    db1, db2 = builders.server("db1"), builders.server("db2")
    orders = builders.alert(db1, "runway", of=builders.table(db1))
    events = builders.alert(db1, "skew", of=builders.table(db1, name="events"))
    down = builders.alert(db2, "unreachable")
    builders.silence(server=db1, schema="shop", table="orders")  # orders only, every rule
    builders.silence(schema="shop")  # a schema never matches a server's own alert
    builders.silence(hours=1, starts_ago=2, server=db1)  # ended an hour ago
    builders.silence(hours=1, starts_ago=-1, rule="skew")  # starts in an hour

    silenced = {a["id"]: a["silenced"] for a in viewer_api.get(ALERTS).json()}

    assert silenced == {orders.pk: True, events.pk: True, down.pk: False}
    builders.silence(rule="unreachable")
    assert ids(viewer_api.get(ALERTS, {"silenced": "false"})) == []
    assert set(ids(viewer_api.get(ALERTS, {"silenced": "true"}))) == {
        orders.pk,
        events.pk,
        down.pk,
    }


def test_a_silence_on_another_table_or_rule_does_not_match(viewer_api):
    db1 = builders.server("db1")
    orders = builders.alert(db1, "runway", of=builders.table(db1))
    builders.silence(server=db1, table="events")
    builders.silence(server=db1, rule="skew")
    builders.silence(server=builders.server("db2"))

    assert ids(viewer_api.get(ALERTS, {"silenced": "false"})) == [orders.pk]


@pytest.mark.parametrize(
    "query, field",
    [
        ({"state": "burning"}, "state"),
        ({"server": "db1"}, "server"),
        ({"server": str(10**30)}, "server"),
        ({"table": "1.5"}, "table"),
        ({"rule": "nonsense"}, "rule"),
        ({"silenced": "maybe"}, "silenced"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
    ],
)
def test_a_malformed_filter_is_a_400_naming_it(viewer_api, query, field):
    response = viewer_api.get(ALERTS, query)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert field in response.json()


def test_an_unknown_server_lists_nothing(viewer_api):
    builders.alert(builders.server(), "unreachable")

    assert ids(viewer_api.get(ALERTS, {"server": 999999})) == []


def test_alerts_are_read_only_and_need_a_login(staff_api):
    db1 = builders.server()
    firing = builders.alert(db1, "unreachable")

    assert APIClient().get(ALERTS).status_code in (401, 403)
    assert staff_api.post(ALERTS, {"rule": "skew"}, format="json").status_code == 405
    assert staff_api.delete(f"{ALERTS}{firing.pk}/").status_code == 405
    assert staff_api.get(f"{ALERTS}{firing.pk}/").json()["id"] == firing.pk


def test_counts_give_each_servers_open_alerts_firing_pending_and_silenced(viewer_api):
    db1, db2, quiet = builders.server("db1"), builders.server("db2"), builders.server("quiet")
    builders.alert(db1, "skew", of=builders.table(db1, name="a"))
    builders.alert(db1, "skew", of=builders.table(db1, name="b"))
    builders.alert(db1, "skew", "pending", of=builders.table(db1, name="c"))
    builders.alert(db1, "skew", "resolved", of=builders.table(db1, name="d"))
    builders.alert(db2, "unreachable")
    builders.alert(quiet, "unreachable", "resolved")
    builders.silence(server=db2)

    counts = viewer_api.get(f"{ALERTS}counts/").json()

    assert counts == [
        {"server_id": db1.pk, "server": "db1", "firing": 2, "pending": 1, "silenced": 0},
        {"server_id": db2.pk, "server": "db2", "firing": 0, "pending": 0, "silenced": 1},
    ]
    assert Alert.objects.count() == 6
