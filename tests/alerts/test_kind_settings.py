"""A finding kind's own settings (`health.kinds.Setting`): read from the environment by
name, cast to the default's type, overridden by a value settings set, and part of the
rules version, so changing one re-evaluates quiet tables as any PARTDASH_ALERT_* does."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from partdash.alerts import conditions
from partdash.alerts.rules import catalogue
from partdash.alerts.service import rules_version
from tests import builders

SHARE = "PARTDASH_ALERT_PRUNING_SHARE"


def test_a_kind_setting_takes_its_default_then_the_environment_then_an_override(
    monkeypatch, settings
):
    monkeypatch.delenv(SHARE, raising=False)
    assert SHARE in conditions.judging_settings()
    assert conditions.setting_value(SHARE) == 0.1
    monkeypatch.setenv(SHARE, "0.25")
    assert conditions.setting_value(SHARE) == 0.25
    assert isinstance(conditions.setting_value(SHARE), float)
    setattr(settings, SHARE, 0.4)
    assert conditions.setting_value(SHARE) == 0.4


def test_an_undeclared_setting_is_refused_by_name():
    with pytest.raises(ImproperlyConfigured, match="PARTDASH_ALERT_NO_SUCH"):
        conditions.setting_value("PARTDASH_ALERT_NO_SUCH")


@pytest.mark.django_db
def test_changing_a_kind_setting_changes_the_rules_version(monkeypatch):
    server = builders.server()
    monkeypatch.delenv(SHARE, raising=False)
    before = rules_version(server, catalogue(), [])
    monkeypatch.setenv(SHARE, "0.05")
    assert rules_version(server, catalogue(), []) != before
