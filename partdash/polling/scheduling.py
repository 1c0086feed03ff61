"""Deciding when a server is polled, and making sure its polls never overlap.

`next_poll_at` is claimed with a conditional UPDATE, so beat, an admin edit and the API
can all ask for a poll at once and exactly one is queued. A Redis lock that expires
with the task's hard time limit stops two polls of one server running together, even
if a worker dies mid-poll.

A server whose polls keep failing backs off (`record_outcome`), and its polls run only
in the worker's share of slots for failing servers (`failing_server_slot`): a partition
that takes half the fleet away costs the healthy servers nothing.
"""

import enum
import logging
import threading
import uuid
from contextlib import contextmanager
from datetime import timedelta

import redis
from celery import current_app
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from partdash.lib.shared_redis import redis_client
from partdash.servers.models import Server, backoff_delay

log = logging.getLogger(__name__)


# The poll task (`partdash.polling.tasks`), queued here by its name: that module runs
# polls and asks this one when and whether to, so this one cannot import it. The name
# is the one queued messages have carried since before polling/ left collector/.
POLL_TASK = "partdash.polling.tasks.poll_server"
SOFT_LIMIT_MARGIN = 2  # seconds past the connect timeout before the soft limit fires


def time_limits(poll_interval: int) -> tuple[int, int]:
    """(soft, hard) seconds for one poll. The hard limit is 90% of the interval (at most
    PARTDASH_POLL_TIME_LIMIT, at least 5 s), so polls cannot pile up. The soft limit is
    5 s before it, but never below the connect timeout plus a margin while the hard limit
    leaves room (then one second before the hard limit): an unreachable server fails with
    the connect timeout's own message, not as a poll that ran out of time."""
    hard = max(5, min(settings.PARTDASH_POLL_TIME_LIMIT, int(poll_interval * 0.9)))
    soft = max(hard - 5, settings.PARTDASH_CONNECT_TIMEOUT + SOFT_LIMIT_MARGIN)
    return max(1, min(soft, hard - 1)), hard


class PollRequest(enum.Enum):
    """What asking for a poll now came to."""

    QUEUED = "queued"
    ALREADY_QUEUED = "already queued"  # another request's poll is queued or running
    NOT_QUEUED = "not queued"  # disabled, unknown, or the broker is down


def claim(server_id: int, *, force: bool = False) -> Server | None:
    """Move the server's next poll ahead (`next_due`) if it is due (or `force`);
    return the server when this caller won the claim."""
    server = Server.objects.filter(pk=server_id, enabled=True).first()
    if server is None:
        return None
    now = timezone.now()
    due = Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now)
    if force:  # (Poll now, and a new or edited server's first poll)
        due = Q()
        following = next_due(None, now, server.poll_interval, server.pk)
    else:
        following = next_due(server.next_poll_at, now, server.poll_interval, server.pk)
    won = Server.objects.filter(due, pk=server_id, enabled=True).update(next_poll_at=following)
    return server if won == 1 else None


# A server's polls fall at its own offset into the interval (of the epoch's seconds): its
# id times the golden ratio's fraction, which spreads consecutive ids evenly. Prometheus
# spreads its scrapes the same way, by a hash of the target.
_SPREAD = 0.6180339887498949


def next_due(due_at, now, interval: int, server_id: int = 0):
    """One interval after the time the poll was due, not after the dispatcher noticed:
    otherwise every poll starts up to one dispatch tick late and the delays add up, a
    30 s interval becoming 35 s. So too when it was noticed late, up to half an interval
    (the dispatch itself waited behind busy workers): counted from then, the servers
    claimed by one late dispatch would all fall due together again, interval after
    interval (the simulated fleet's 1,000 servers, spread at first, came back in two
    bursts of 500 and 400 every ten minutes). A server's first poll (`due_at` None, or a
    forced one) and one noticed half an interval late or more (a broker that was down)
    at the server's own offset into the interval, half an interval to one and a half
    from now: two polls are never due closer than half an interval, and servers added
    together, or all overdue after an outage, are polled spread over the interval rather
    than all at once (1,000 servers added at once were all due within 3 minutes of
    every 10)."""
    step = timedelta(seconds=interval)
    if due_at is not None and now - due_at < step / 2:
        return due_at + step
    earliest = now + step / 2
    offset = (server_id * _SPREAD) % 1 * interval
    return earliest + timedelta(seconds=(offset - earliest.timestamp()) % interval)


def enqueue(server: Server, *, forced: bool = False, task_id: str | None = None) -> bool:
    """Queue a poll of a claimed server; on a broker failure, make it due again. A
    `forced` poll (Poll now) is not held back by the slots kept for failing servers."""
    soft, hard = time_limits(server.poll_interval)
    try:
        current_app.send_task(
            POLL_TASK,
            args=[server.pk],
            kwargs={"forced": True} if forced else None,
            soft_time_limit=soft,
            time_limit=hard,
            expires=server.poll_interval,
            task_id=task_id,
            ignore_result=True,  # as the task declares: the message says so, as before
        )
    except Exception as exc:  # the broker being down must not break an admin save
        log.error("cannot queue a poll of %s: %s", server.name, exc)
        Server.objects.filter(pk=server.pk).update(next_poll_at=None)
        return False
    return True


def request_poll(server_id: int, *, force: bool = False) -> bool:
    """Queue a poll now if one is due (or always, with `force`, unless one was queued
    within the debounce window: then that one stands, and this is True too)."""
    if force:
        return poll_now(server_id) is not PollRequest.NOT_QUEUED
    server = claim(server_id)
    return enqueue(server) if server else False


def poll_now(server_id: int) -> PollRequest:
    """A forced poll ("Poll now"), coalesced: while one requested poll of the server is
    queued or running, other requests find it (20 clicks in a second queue one poll);
    once it ended, the next request queues a new one. The window is a Redis key set only
    if absent (SET NX), shared by every web process and worker, holding the queued task's
    id; the task deletes it when it ends (`close_poll_now_window`), and it lapses on its
    own once the task would have expired or hit its time limit."""
    server = Server.objects.filter(pk=server_id, enabled=True).first()
    if server is None:
        return PollRequest.NOT_QUEUED
    token = uuid.uuid4().hex  # the task's id
    if not _open_poll_now_window(server, token):
        return PollRequest.ALREADY_QUEUED
    server = claim(server_id, force=True)
    if server is not None and enqueue(server, forced=True, task_id=token):
        return PollRequest.QUEUED
    close_poll_now_window(server_id, token)  # nothing was queued: the next click may try
    return PollRequest.NOT_QUEUED


def _poll_now_key(server_id: int) -> str:
    return f"partdash:poll-now:{server_id}"


def _open_poll_now_window(server: Server, token: str) -> bool:
    """True when no other requested poll of the server is queued or running (or there is
    no window: PARTDASH_POLL_NOW_DEBOUNCE_SECONDS is 0, or Redis cannot say, and then
    the broker will tell)."""
    if settings.PARTDASH_POLL_NOW_DEBOUNCE_SECONDS <= 0:
        return True
    # Queued, a poll expires after its interval; running, it ends by its hard limit.
    lapse = server.poll_interval + time_limits(server.poll_interval)[1] + 5
    try:
        client = redis_client()
        return bool(client.set(_poll_now_key(server.pk), token, nx=True, ex=lapse))
    except redis.exceptions.RedisError as exc:
        log.warning("no poll-now coalescing for server %s: %s", server.pk, exc)
        return True


def close_poll_now_window(server_id: int, token: str) -> None:
    """The requested poll `token` ended (or was never queued): the next request queues
    a new one."""
    try:
        _delete_if_held(redis_client(), _poll_now_key(server_id), token)
    except redis.exceptions.RedisError:
        pass  # it lapses on its own


def dispatch_due() -> int:
    """Queue a poll for every enabled server that is due. Returns how many were queued."""
    now = timezone.now()
    due = Server.objects.filter(
        Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now), enabled=True
    ).values_list("pk", flat=True)
    return sum(request_poll(pk) for pk in list(due))


def _lock_key(server_id: int) -> str:
    return f"partdash:poll:{server_id}"


@contextmanager
def poll_lock(
    server_id: int, timeout: int, token: str | None = None, wait: float = 0, keep: bool = False
):
    """Yield True if this process holds the server's poll lock, False if another does
    (after waiting up to `wait` seconds for it). The lock expires after `timeout` seconds,
    so a crashed worker cannot hold it forever. Its value is `token` (the poll task's id),
    so `release_lost_lock` frees exactly the lock of a poll whose worker died. `keep`: a
    thread renews the expiry while the lock is held (a poll without a time limit, as
    `manage.py poll`'s: it would otherwise lose the lock to a worker's poll midway)."""
    lock = redis_client().lock(
        _lock_key(server_id),
        timeout=timeout,
        blocking=wait > 0,
        blocking_timeout=wait or None,
        thread_local=False,  # (renewed from another thread)
    )
    acquired = lock.acquire(token=token) if token else lock.acquire()
    held = threading.Event()
    if acquired and keep:
        threading.Thread(
            target=_renew, args=(lock, timeout / 3, held, server_id), daemon=True
        ).start()
    try:
        yield acquired
    finally:
        held.set()
        if acquired:
            try:
                lock.release()
            except redis.exceptions.LockError:
                log.warning("poll lock of server %s expired before the poll ended", server_id)
            except redis.exceptions.RedisError as exc:  # it expires on its own
                log.warning("poll lock of server %s not released: %s", server_id, exc)


def _renew(lock, every: float, released: threading.Event, server_id: int) -> None:
    """Reset the lock's expiry every `every` seconds until it is released."""
    while not released.wait(every):
        try:
            lock.reacquire()
        except redis.exceptions.RedisError as exc:
            log.warning("poll lock of server %s not renewed: %s", server_id, exc)
            return


# Deletes a key only while it still holds the poll's token, in one step.
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


def _delete_if_held(client: redis.Redis, key: str, token: str) -> bool:
    """Delete `key` if its value is `token` (the poll holding it); True if it was."""
    return client.eval(_RELEASE, 1, key, token) == 1


def release_lost_lock(server_id: int, token: str) -> bool:
    """Delete the server's poll lock if the poll holding it is the one `token` names (its
    worker died, so nothing else will). True when it was released."""
    return _delete_if_held(redis_client(), _lock_key(server_id), token)


def record_outcome(server_id: int, ok: bool, started) -> int:
    """Count the server's failed polls in a row (a success resets it) and, from the
    second failure on, push its next poll out to `backoff_delay` after this poll's
    start. Returns the failures in a row."""
    servers = Server.objects.filter(pk=server_id)
    if ok:
        servers.filter(consecutive_failures__gt=0).update(consecutive_failures=0)
        return 0
    servers.update(consecutive_failures=F("consecutive_failures") + 1)
    row = servers.values_list("consecutive_failures", "poll_interval").first()
    if row is None:
        return 0
    failures, interval = row
    if failures > 1:
        later = started + timedelta(seconds=backoff_delay(interval, failures))
        servers.filter(Q(next_poll_at__isnull=True) | Q(next_poll_at__lt=later)).update(
            next_poll_at=later
        )
    return failures


def failing_slots(concurrency: int | None) -> int:
    """How many of a worker's slots may poll failing servers at once."""
    configured = settings.PARTDASH_FAILING_POLL_SLOTS
    return configured if configured > 0 else max(1, (concurrency or 1) // 2)


def _slot_key(node: str, number: int) -> str:
    return f"partdash:failing-slot:{node}:{number}"


@contextmanager
def failing_server_slot(node: str, slots: int, timeout: int, token: str):
    """Yield True if this poll of a failing server got one of the worker's `slots` kept
    for them (keys valued with the poll's task id, expiring with its hard limit), False
    if they are all taken. Should Redis not answer, the poll lock will say so: True."""
    client = redis_client()
    held = None
    try:
        for key in (_slot_key(node, number) for number in range(slots)):
            if client.set(key, token, nx=True, ex=timeout):
                held = key
                break
    except redis.exceptions.RedisError as exc:
        log.warning("no slot count for failing servers: %s", exc)
        yield True
        return
    try:
        yield held is not None
    finally:
        if held:
            release_failing_slot(token, keys=[held])


def release_failing_slot(token: str, keys: list[str] | None = None) -> None:
    """Free the slot `token`'s poll held (all workers' slots are looked at without
    `keys`: the poll's worker died)."""
    client = redis_client()
    try:
        for key in keys or client.scan_iter("partdash:failing-slot:*", count=100):
            _delete_if_held(client, key, token)
    except redis.exceptions.RedisError as exc:
        log.warning("cannot free a failing server's slot: %s", exc)
