"""The Redis every partdash process shares (PARTDASH_REDIS_URL): the poll locks, Poll
now's windows, the slots of failing servers and the connection tests' counts."""

from functools import cache

import redis
from django.conf import settings


@cache
def _redis(url: str, timeout: float = 5) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def redis_client(timeout: float = 5) -> redis.Redis:
    """The Redis of the poll locks and other counts shared by every process: one client
    (and connection pool) per process and timeout, which reconnects after a fork or a
    Redis restart."""
    return _redis(settings.PARTDASH_REDIS_URL, timeout)
