"""The Redis every partdash process shares (PARTDASH_REDIS_URL): the poll locks, Poll
now's windows, the slots of failing servers and the connection tests' counts."""

from functools import cache

import redis
from django.conf import settings


@cache
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def redis_client() -> redis.Redis:
    """The Redis of the poll locks and other counts shared by every process."""
    return _redis(settings.PARTDASH_REDIS_URL)
