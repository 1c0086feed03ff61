"""How many of one costly thing (a connection test, a test alert) one user may run: at
once, and in a minute.

Such a thing runs inside a web request and lasts up to its deadline: without a limit, a
few clicks on targets that answer slowly hold every web thread (`make up` serves with 8;
10 test alerts to a slow webhook held all 8 for 31 s, and another user's login waited
23 s). The counts live in Redis, shared by every web process; where Redis cannot say,
the thing runs (its deadline still bounds it) and a warning is logged.
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from partdash.lib.shared_redis import redis_client

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UserLimit:
    """One kind of costly request and its limits per user."""

    kind: str  # in the Redis keys: `partdash:KIND:running:USER`, `partdash:KIND:minute:USER`
    things: str  # what the messages call them: "connection tests", "test alerts"
    at_once: int
    per_minute: int
    lapse: int  # seconds after which a crashed request's claim lapses
    deadline: int  # seconds one may last: when one running may have finished


class TooMany(Exception):
    """The user runs as many as allowed: the message says when to try again, and
    `retry_after` (seconds) says it to a client."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def _keys(limit: UserLimit, user_id: int) -> tuple[str, str]:
    return f"partdash:{limit.kind}:running:{user_id}", f"partdash:{limit.kind}:minute:{user_id}"


def _claim(client: redis.Redis, limit: UserLimit, user_id: int, weight: int) -> None:
    running, minute = _keys(limit, user_id)
    pipe = client.pipeline()
    pipe.incr(running)
    pipe.expire(running, limit.lapse)
    pipe.set(minute, 0, ex=60, nx=True)  # the minute starts at the first one
    pipe.incrby(minute, weight)
    pipe.ttl(minute)
    at_once, _, _, this_minute, ttl = pipe.execute()
    if at_once > limit.at_once:  # refused: counts in neither
        client.pipeline().decr(running).decrby(minute, weight).execute()
        raise TooMany(
            f"You are running {at_once - 1} {limit.things} already (at most "
            f"{limit.at_once} at once): wait for one to finish.",
            retry_after=max(limit.deadline, 1),
        )
    if this_minute > limit.per_minute:
        client.decr(running)  # (a refusal still counts in the minute: asking again is slowed)
        raise TooMany(
            f"At most {limit.per_minute} {limit.things} a minute: try again in {max(ttl, 1)} s.",
            retry_after=max(ttl, 1),
        )


def release(limit: UserLimit, user_id: int) -> None:
    """Give back a slot `claim` took (the claim lapses on its own if this fails)."""
    try:
        redis_client().decr(_keys(limit, user_id)[0])
    except redis.exceptions.RedisError:
        pass


def claim(limit: UserLimit, user_id: int, weight: int = 1) -> bool:
    """Take one of `user_id`'s slots, counting `weight` things in the minute, or raise
    `TooMany`. False where Redis could not count (nothing to give back)."""
    try:
        _claim(redis_client(), limit, user_id, weight)
    except redis.exceptions.RedisError as exc:
        log.warning("%s run without a per-user limit: %s", limit.things, exc)
        return False
    return True


@contextmanager
def user_slot(limit: UserLimit, user_id: int, weight: int = 1) -> Iterator[None]:
    """Run one of `limit`'s things as `user_id`, or raise `TooMany`."""
    claimed = claim(limit, user_id, weight)
    try:
        yield
    finally:
        if claimed:
            release(limit, user_id)
