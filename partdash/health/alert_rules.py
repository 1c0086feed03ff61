"""Which rule is in force for an alert, and which silences hold it. Pure: plain records
of the stored overrides and silences in, decisions out.

An override matches an alert when each of its scope fields (server, tag, schema, table)
is unset or equal to the alert's; of those that match, the most specific decides:
table over schema over tag over server over none (ties: the older override). Each
figure left unset on it (threshold, clear threshold, for_polls, severity, recipients,
channels) falls back to the next less specific match, then to the built-in rule; so a
table-level override with `enabled` off and nothing else switches the rule off for that
table alone. Recipients fall back to the default addresses (`ALERT_EMAILS`), channels to
the default route (each channel's own rules).
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from partdash.health.alerting import Key, Rule


@dataclass(frozen=True, slots=True)
class Override:
    """An `AlertRule` row: None scope fields match everything."""

    rule: str
    enabled: bool = True
    threshold: float | None = None
    clear_threshold: float | None = None
    for_polls: int | None = None
    severity: str = ""
    recipients: str = ""
    channels: tuple[int, ...] = ()
    server: int | None = None
    tag: str | None = None
    schema: str | None = None
    table: str | None = None
    id: int = 0

    def matches(self, server: int, tags: Iterable[str], key: Key) -> bool:
        return (
            self.rule == key.rule
            and (self.server is None or self.server == server)
            and (self.tag is None or self.tag in tags)
            and (self.schema is None or self.schema == key.schema)
            and (self.table is None or self.table == key.table)
        )

    def specificity(self) -> tuple:
        """Sorts the most specific first (the older first among equals)."""
        scope = (self.table, self.schema, self.tag, self.server)
        return (*(field is None for field in scope), self.id)


@dataclass(frozen=True, slots=True)
class SilenceScope:
    """A `Silence` row: None fields match everything; it holds from `starts_at` until
    `ends_at` (excluded)."""

    starts_at: datetime
    ends_at: datetime
    server: int | None = None
    schema: str | None = None
    table: str | None = None
    rule: str | None = None

    def holds(self, server: int, key: Key, now: datetime) -> bool:
        return (
            self.starts_at <= now < self.ends_at
            and (self.server is None or self.server == server)
            and (self.schema is None or self.schema == key.schema)
            and (self.table is None or self.table == key.table)
            and (self.rule is None or self.rule == key.rule)
        )


def addresses(text: str) -> list[str]:
    """The addresses of a comma, semicolon or whitespace separated list, without repeats."""
    return list(dict.fromkeys(a for a in re.split(r"[,;\s]+", text or "") if a))


def recipients_text(text: str) -> str:
    """A list of addresses in one spelling (sorted, comma-separated, as delivery groups
    them), so one set of recipients gets one email whatever order it was typed in."""
    return ",".join(sorted(addresses(text), key=str.lower))


def _first(values: Iterable, default=None):
    return next((v for v in values if v is not None and v != ""), default)


def rule_in_force(
    builtin: Rule,
    overrides: Sequence[Override],
    server: int,
    tags: Iterable[str],
    key: Key,
    default_recipients: str = "",
) -> Rule:
    """The built-in rule with the matching overrides applied, most specific first; its
    `recipients` resolved (the default addresses when no override names any)."""
    tags = set(tags)
    matching = sorted(
        (o for o in overrides if o.matches(server, tags, key)), key=Override.specificity
    )
    return replace(
        builtin,
        enabled=matching[0].enabled if matching else builtin.enabled,
        threshold=_first((o.threshold for o in matching), builtin.threshold),
        clear_threshold=_first((o.clear_threshold for o in matching), builtin.clear_threshold),
        for_polls=_first((o.for_polls for o in matching), builtin.for_polls),
        severity=_first((o.severity for o in matching), builtin.severity),
        recipients=recipients_text(
            _first((o.recipients for o in matching), builtin.recipients or default_recipients)
        ),
        channels=_first((o.channels for o in matching), builtin.channels),
    )


def silenced_keys(
    silences: Sequence[SilenceScope], server: int, keys: Iterable[Key], now: datetime
) -> frozenset[Key]:
    """The keys a silence holds at `now`."""
    live = [s for s in silences if s.starts_at <= now < s.ends_at]
    if not live:
        return frozenset()
    return frozenset(k for k in keys if any(s.holds(server, k, now) for s in live))
