"""How many connection tests one user may run: at once, and in a minute
(`partdash.lib.user_limits`, counted in Redis across web processes).

A test connection runs inside a web request and may last up to its deadline
(PARTDASH_TEST_CONNECTION_SECONDS).
"""

import math
from contextlib import AbstractContextManager

from django.conf import settings

from partdash.lib.user_limits import TooMany, UserLimit, user_slot

TooManyTests = TooMany  # (the name callers and tests know)


def probe_limit() -> UserLimit:
    """Connection tests' limits, read from settings at each test."""
    deadline = math.ceil(settings.PARTDASH_TEST_CONNECTION_SECONDS)
    return UserLimit(
        kind="probe",
        things="connection tests",
        at_once=settings.PARTDASH_TEST_CONNECTION_PER_USER,
        per_minute=settings.PARTDASH_TEST_CONNECTION_PER_MINUTE,
        lapse=deadline + 10,  # a crashed request's claim lapses once its test cannot run
        deadline=deadline,
    )


def probe_slot(user_id: int) -> AbstractContextManager[None]:
    """Run one connection test as `user_id`, or raise `TooManyTests`."""
    return user_slot(probe_limit(), user_id)
