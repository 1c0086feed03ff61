"""What makes a rule override valid: one set of checks for the API and the admin.

Pure: values in, problems by field out.
"""

import math

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from partdash.alerts.models import rule_names
from partdash.alerts.rules import fires_below
from partdash.health.alert_rules import addresses

MAX_FOR_POLLS = 1000  # a thousand one-minute polls is most of a day: more is a typo


def recipient_list(text: str) -> list[str]:
    """The addresses of a comma, semicolon or whitespace separated list, in order,
    without repeats: as evaluation reads them (`partdash.health.alert_rules`)."""
    return addresses(text)


def recipient_problems(listed: list[str]) -> list[str]:
    """One line per address that is not a valid email address."""
    problems = []
    for address in listed:
        try:
            validate_email(address)
        except ValidationError:
            problems.append(f"{address!r} is not a valid email address")
    return problems


def override_problems(
    rule: str,
    threshold: float | None,
    clear_threshold: float | None,
    for_polls: int | None,
) -> dict[str, str]:
    """What is wrong with an override's figures, by field."""
    problems: dict[str, str] = {}
    if rule not in rule_names():
        problems["rule"] = f"unknown rule; one of {', '.join(rule_names())}"
    for name, value in (("threshold", threshold), ("clear_threshold", clear_threshold)):
        if value is not None and not math.isfinite(value):
            problems[name] = "must be a finite number"
    if for_polls is not None and not 1 <= for_polls <= MAX_FOR_POLLS:
        problems["for_polls"] = f"must be between 1 and {MAX_FOR_POLLS}"
    if problems or threshold is None or clear_threshold is None:
        return problems
    below = fires_below(rule)  # the rule catalogue says which way each rule fires
    if below is False and not clear_threshold < threshold:
        problems["clear_threshold"] = (
            f"must be below the threshold ({threshold:g}): {rule} fires above it"
        )
    elif below is True and not clear_threshold > threshold:
        problems["clear_threshold"] = (
            f"must be above the threshold ({threshold:g}): {rule} fires below it"
        )
    return problems
