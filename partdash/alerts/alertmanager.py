"""Alerts pushed to an existing Alertmanager (`PARTDASH_ALERTMANAGER_URL`, its v2 API),
for teams that route every alert through it.

Alertmanager keeps an alert firing until its `endsAt`; so every firing alert is pushed
again every PARTDASH_ALERTMANAGER_PUSH_SECONDS (beat, and right after an evaluation
that changed something) with `endsAt` a few pushes ahead, and a resolved one is pushed
with `endsAt` its resolution, for PARTDASH_ALERTMANAGER_RESOLVED_MINUTES after it. A
push is idempotent (Alertmanager deduplicates on the labels), so a worker killed
mid-push, or two pushes at once, never make a second notification: Alertmanager's own
grouping and `repeat_interval` decide what its receivers get.

Labels: `alertname` (`partdash_RULE`), `server`, `schema`, `table`, `partition` (where
the alert has them), `rule`, `severity`. Annotations: `summary` (the alert's message),
`fix` (its SQL, else its advice), `url` (its table's page). partdash's silences do not
apply here: silence in Alertmanager what goes through it.
"""

import http.client
import json
import logging
import socket
import ssl
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from partdash.alerts import emails
from partdash.alerts.models import Alert
from partdash.health.fixes import stored_fix

log = logging.getLogger(__name__)

PUSH_TASK = "partdash.alerts.tasks.push_to_alertmanager"


class PushFailed(Exception):
    """Alertmanager did not take the push: one line (its address without credentials)."""


def enabled() -> bool:
    return bool(settings.PARTDASH_ALERTMANAGER_URL)


def shown_url(url: str) -> str:
    """The URL without its user and password, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def document(alert: Alert, now: datetime) -> dict:
    """One alert as Alertmanager's v2 API takes it."""
    labels = {
        "alertname": f"partdash_{alert.rule}",
        "rule": alert.rule,
        "severity": alert.severity,
        "server": alert.server.name,
    }
    for name in ("schema", "table", "partition"):
        if value := getattr(alert, name):
            labels[name] = value
    fix = stored_fix(alert.fix) or {}
    page = emails.page_of(alert)
    if alert.state == Alert.State.RESOLVED:
        ends = alert.resolved_at or now
    else:
        ahead = max(3 * settings.PARTDASH_ALERTMANAGER_PUSH_SECONDS, 300)
        ends = now + timedelta(seconds=ahead)
    return {
        "labels": labels,
        "annotations": {
            "summary": alert.message,
            "fix": (fix.get("sql") or fix.get("advice") or "").strip(),
            "url": page,
        },
        "startsAt": _when(alert.fired_at or alert.started_at),
        "endsAt": _when(ends),
        "generatorURL": page,
    }


def due(now: datetime) -> list[Alert]:
    """Firing alerts, and those resolved within PARTDASH_ALERTMANAGER_RESOLVED_MINUTES."""
    recent = now - timedelta(minutes=settings.PARTDASH_ALERTMANAGER_RESOLVED_MINUTES)
    query = Q(state=Alert.State.FIRING) | Q(state=Alert.State.RESOLVED, resolved_at__gte=recent)
    resolved_fired = Q(state=Alert.State.RESOLVED, fired_at__isnull=False)
    wanted = Alert.objects.filter(query).filter(Q(state=Alert.State.FIRING) | resolved_fired)
    return list(wanted.select_related("server").order_by("pk"))


def push(now: datetime | None = None) -> int:
    """Push every alert `due`; returns how many. Raises PushFailed with one line."""
    now = now or timezone.now()
    alerts = due(now)
    if not alerts:
        return 0
    base = settings.PARTDASH_ALERTMANAGER_URL.rstrip("/")
    body = json.dumps([document(alert, now) for alert in alerts]).encode()
    request = urllib.request.Request(
        f"{base}/api/v2/alerts",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "partdash"},
    )
    parts = urlsplit(base)
    if parts.username is not None:  # (urllib does not send the URL's credentials itself)
        import base64

        pair = f"{parts.username}:{parts.password or ''}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode())
        request.full_url = f"{shown_url(base)}/api/v2/alerts"
    try:
        with OPENER.open(request, timeout=settings.PARTDASH_ALERTMANAGER_TIMEOUT) as answer:
            answer.read()
    except urllib.error.HTTPError as error:
        moved = " (redirects are not followed)" if 300 <= error.code < 400 else ""
        raise PushFailed(
            f"Alertmanager at {shown_url(base)} answered HTTP {error.code}{moved}"
        ) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
        raise PushFailed(
            f"Alertmanager at {shown_url(base)} unreachable: {unreachable(error)}"
        ) from None
    return len(alerts)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx is an answer, not a new address: urllib would send the Authorization header
    on to wherever it points, another origin included (issue 37)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # (urllib then raises the 3xx as an HTTPError)


OPENER = urllib.request.build_opener(NoRedirects)


def unreachable(error: BaseException) -> str:
    """Why, as a class: never the far side's words."""
    reason = getattr(error, "reason", error)
    if isinstance(reason, http.client.HTTPException):
        return "not HTTP"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ssl.SSLError):
        return "TLS failed"
    if isinstance(reason, socket.gaierror):
        return "host not found"
    return "connection failed"


def queue_push() -> None:
    """After an evaluation that changed something: push now rather than at the next beat."""
    if not enabled():
        return
    from celery import current_app

    try:
        current_app.send_task(PUSH_TASK, retry=False)
    except Exception as exc:  # noqa: BLE001 beat pushes it anyway
        log.info("alertmanager push not queued (%s): beat will push", exc)
