"""How many connection tests one user may run: at once, and in a minute.

A test connection runs inside a web request and may last up to its deadline
(PARTDASH_TEST_CONNECTION_SECONDS): without a limit, a few clicks on servers that answer
slowly would hold every web thread (`make up` serves with 8). The counts live in Redis,
shared by every web process; where Redis cannot say, the test runs (its deadline still
bounds it) and a warning is logged.
"""

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.conf import settings

from partdash.lib.shared_redis import redis_client

log = logging.getLogger(__name__)


class TooManyTests(Exception):
    """The user runs as many tests as allowed: the message says when to try again."""


def _keys(user_id: int) -> tuple[str, str]:
    return f"partdash:probe:running:{user_id}", f"partdash:probe:minute:{user_id}"


def _claim(client: redis.Redis, user_id: int) -> None:
    running, minute = _keys(user_id)
    # A crashed request's claim lapses once its test could not be running any more.
    lapse = math.ceil(settings.PARTDASH_TEST_CONNECTION_SECONDS) + 10
    pipe = client.pipeline()
    pipe.incr(running)
    pipe.expire(running, lapse)
    pipe.set(minute, 0, ex=60, nx=True)  # the minute starts at the first test
    pipe.incr(minute)
    pipe.ttl(minute)
    at_once, _, _, this_minute, ttl = pipe.execute()
    per_user = settings.PARTDASH_TEST_CONNECTION_PER_USER
    per_minute = settings.PARTDASH_TEST_CONNECTION_PER_MINUTE
    if at_once > per_user:  # refused: counts in neither
        client.pipeline().decr(running).decr(minute).execute()
        raise TooManyTests(
            f"You are running {at_once - 1} connection tests already (at most {per_user} "
            "at once): wait for one to finish."
        )
    if this_minute > per_minute:
        client.decr(running)
        raise TooManyTests(
            f"At most {per_minute} connection tests a minute: try again in {max(ttl, 1)} s."
        )


@contextmanager
def probe_slot(user_id: int) -> Iterator[None]:
    """Run one connection test as `user_id`, or raise `TooManyTests`."""
    client = redis_client()
    try:
        _claim(client, user_id)
    except redis.exceptions.RedisError as exc:
        log.warning("connection tests run without a per-user limit: %s", exc)
        yield
        return
    try:
        yield
    finally:
        try:
            client.decr(_keys(user_id)[0])
        except redis.exceptions.RedisError:
            pass  # the claim lapses on its own
