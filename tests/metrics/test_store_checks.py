"""`manage.py check --deploy --database default` warns when autovacuum does not run on a
PostgreSQL store (partdash.W002): the server's `autovacuum` or `track_counts` off, or a
store table's `autovacuum_enabled`, against what the store itself says."""

import pytest
from django.core.checks import Tags, run_checks
from django.db import connection

pytestmark = pytest.mark.django_db


def store_warnings() -> list:
    found = run_checks(tags=[Tags.database], include_deployment_checks=True, databases=["default"])
    return [message for message in found if message.id == "partdash.W002"]


def server_settings_off() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM pg_settings WHERE name IN ('autovacuum', 'track_counts')"
            " AND setting = 'off' ORDER BY name"
        )
        return [name for (name,) in cursor.fetchall()]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL store's setting")
def test_the_warning_says_where_autovacuum_is_off_as_the_store_says_it():
    off = server_settings_off()
    before = store_warnings()
    assert len(before) == bool(off)
    for name in off:  # this machine's PostgreSQL may run with it off: then it is named
        assert f"{name} = off" in before[0].msg

    with connection.cursor() as cursor:  # (rolled back with the test's transaction)
        cursor.execute("ALTER TABLE metrics_partitionedtable SET (autovacuum_enabled = off)")
        cursor.execute("ALTER TABLE metrics_serversnapshot SET (autovacuum_enabled = false)")
        cursor.execute("ALTER TABLE metrics_partition SET (autovacuum_enabled = on)")
    (warning,) = store_warnings()

    # Named in the store's order, and only those off (metrics_partition's is on).
    listed = "autovacuum_enabled = off on metrics_partitionedtable, metrics_serversnapshot. "
    assert listed in warning.msg, warning.msg
    assert "track_counts = on" in warning.hint


def test_no_warning_without_a_database_to_check_or_on_sqlite():
    assert not [m for m in run_checks(include_deployment_checks=True) if m.id == "partdash.W002"]
    if connection.vendor == "sqlite":
        assert store_warnings() == []
