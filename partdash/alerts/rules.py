"""The built-in alert rules, declared once: what each judges, on what subject, its default
threshold and direction. All are on by default; `AlertRule` rows override them per
server, tag, schema or table (`partdash.health.alert_rules`).

The finding rules (one per registered finding kind, `partdash.health.kinds`: skew,
hotspot, runway, compression, fragmentation, staleness, pressure, drift, retention) judge
the stored finding of their kind: their condition is that the finding
exists, their value the figure the finding is about, their threshold the analysis's own
limit (README "Health analytics"). An override's threshold can only raise the bar: the
finding must still exist. The other rules judge stored figures against thresholds from
the settings (`PARTDASH_ALERT_*`).
"""

from dataclasses import dataclass
from typing import Literal

from django.conf import settings

from partdash.alerts.models import RuleName, Severity
from partdash.health.alerting import Rule
from partdash.health.finding_kinds import RUNWAY_CLEAR_RATIO
from partdash.health.kinds import registered

Subject = Literal["server", "table", "partition"]


@dataclass(frozen=True, slots=True)
class BuiltinRule:
    """A rule as partdash ships it. `finding`: the finding kind it judges, if any."""

    name: str
    subject: Subject
    judges: str  # what the value is, in words (README, admin)
    unit: str
    defaults: Rule
    finding: str | None = None


def _rule(name: str, **fields) -> Rule:
    fields = {
        "for_polls": settings.PARTDASH_ALERT_FOR_POLLS,
        "clear_ratio": settings.PARTDASH_ALERT_CLEAR_RATIO,
        **fields,
    }
    return Rule(name, **fields)


def finding_rules() -> list[BuiltinRule]:
    """The rule of each registered finding kind (`partdash.health.kinds`), with its
    declared defaults over the settings'."""
    return [
        BuiltinRule(
            kind.name,
            kind.alert.subject,
            kind.alert.judges,
            kind.alert.unit,
            _rule(kind.name, **kind.alert.defaults),
            finding=kind.name,
        )
        for kind in registered()
        if kind.alert is not None
    ]


def catalogue() -> dict[str, BuiltinRule]:
    """Every built-in rule, by name, with the defaults the settings give them now."""
    rules = [
        *finding_rules(),
        BuiltinRule(
            RuleName.WORKING_SET_FORECAST,
            "server",
            "days until the written working set, on its trend, outgrows the buffer pool "
            "(PARTDASH_WORKING_SET_FORECAST_FRACTION of it)",
            "days",
            _rule(
                RuleName.WORKING_SET_FORECAST,
                threshold=settings.PARTDASH_ALERT_WORKING_SET_FORECAST_DAYS,
                worse="below",
                clear_ratio=RUNWAY_CLEAR_RATIO,
            ),
        ),
        BuiltinRule(
            RuleName.PARTITION_SIZE,
            "partition",
            "a partition's data plus index bytes",
            "bytes",
            _rule(RuleName.PARTITION_SIZE, threshold=settings.PARTDASH_ALERT_PARTITION_SIZE_BYTES),
        ),
        BuiltinRule(
            RuleName.TABLE_SIZE,
            "table",
            "a table's data plus index bytes",
            "bytes",
            _rule(RuleName.TABLE_SIZE, threshold=settings.PARTDASH_ALERT_TABLE_SIZE_BYTES),
        ),
        BuiltinRule(
            RuleName.TABLE_GROWTH,
            "table",
            "a table's data plus index bytes added over the last day",
            "bytes/day",
            _rule(
                RuleName.TABLE_GROWTH,
                threshold=settings.PARTDASH_ALERT_TABLE_GROWTH_BYTES_PER_DAY,
            ),
        ),
        BuiltinRule(
            RuleName.UNREACHABLE,
            "server",
            "the poll failed (1) or worked (0)",
            "",
            _rule(RuleName.UNREACHABLE, threshold=1, severity=Severity.CRITICAL),
        ),
        BuiltinRule(
            RuleName.STALE_POLLS,
            "server",
            "poll intervals since the last successful poll",
            "intervals",
            # Time is its hold: it fires on the first check past the threshold.
            _rule(
                RuleName.STALE_POLLS,
                threshold=settings.PARTDASH_ALERT_STALE_POLL_INTERVALS,
                for_polls=1,
                severity=Severity.CRITICAL,
            ),
        ),
    ]
    return {rule.name: rule for rule in rules}


def builtin(name: str) -> Rule:
    return catalogue()[name].defaults


def fires_below(rule: str) -> bool | None:
    """Whether `rule` fires when its value falls below the threshold (runway: days
    left) rather than above it; None for an unknown rule."""
    found = catalogue().get(rule)
    return None if found is None else found.defaults.worse == "below"


def rules_of(subject: Subject) -> list[BuiltinRule]:
    return [rule for rule in catalogue().values() if rule.subject == subject]
