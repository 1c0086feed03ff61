"""Send one message through one channel, in a process of its own.

Run by `partdash.alerts.channels.run_sender` as `python -I channel_send.py`, the request
on stdin as JSON (never in arguments or the environment: the URL holds the service's
secret), the outcome on stdout as one JSON line: `{"ok": true, "service": NAME}` or
`{"ok": false, "error": ONE_LINE}`, the error never holding the URL or a part of it.

Why a process: Apprise loads every one of its 130 services' modules on first use, 44 MB
that a worker child (which polls servers too, under 300 MB) would then keep. Here they
are loaded, used and given back; and a service that hangs is killed at the timeout.

Requests:
- `{"action": "check", "url": U}`: whether Apprise (or the webhook) takes the URL;
- `{"action": "send", "url": U, "kind": K, "title": T, "body": B, "failure": bool,
  "document": D, "timeout": S}`: kind `webhook` posts `document` as JSON to U; any other
  kind sends title and body through Apprise.

It imports nothing of partdash, so it starts without Django.
"""

import json
import logging
import re
import sys
from urllib.parse import urlsplit

WEBHOOK_SCHEMES = ("http", "https")


def secret_parts(url: str) -> list[str]:
    """What of `url` may be secret: everything but its scheme and host, in the pieces an
    error could quote (a path segment, a query value, the user and password)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return [url]
    pieces = {url, url.partition("://")[2]}
    pieces.update(re.split(r"[/?&=#:@,]+", url.partition("://")[2]))
    # (Shorter pieces are words, "hook" or "api", and cutting them out of an error would
    # garble it; a token, key or password is longer.)
    return sorted((p for p in pieces if len(p) >= 8 and p != host), key=len, reverse=True)


def redact(text: str, url: str) -> str:
    for piece in secret_parts(url):
        text = text.replace(piece, "…")
    return " ".join(text.split())[:500]


def post_webhook(url: str, document: dict, timeout: float) -> str:
    import requests

    answer = requests.post(
        url,
        data=json.dumps(document, separators=(",", ":")),
        headers={"Content-Type": "application/json", "User-Agent": "partdash"},
        timeout=timeout,
        allow_redirects=False,
    )
    if not 200 <= answer.status_code < 300:
        raise RuntimeError(f"the webhook answered HTTP {answer.status_code}")
    return "webhook"


def apprise_send(request: dict) -> str:
    import apprise

    notifier = apprise.Apprise(
        asset=apprise.AppriseAsset(app_id="partdash", app_desc="partdash alerts")
    )
    with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
        if not notifier.add(request["url"]):
            raise ValueError("Apprise does not take this URL: " + _last(captured))
        service = notifier[0].service_name
        if request.get("action") == "check":
            return service
        kind = apprise.NotifyType.FAILURE if request.get("failure") else apprise.NotifyType.SUCCESS
        sent = notifier.notify(
            title=request.get("title", ""),
            body=request.get("body", ""),
            notify_type=kind,
            body_format=apprise.NotifyFormat.TEXT,
        )
        if not sent:
            raise RuntimeError(f"{service} did not take the message: " + _last(captured))
    return service


def _last(captured) -> str:
    lines = [line for line in captured.getvalue().splitlines() if line.strip()]
    return lines[-1] if lines else "no detail"


def handle(request: dict) -> dict:
    url = request.get("url") or ""
    try:
        scheme = urlsplit(url).scheme.lower()
        if request.get("kind") == "webhook" or (
            request.get("action") == "check" and scheme in WEBHOOK_SCHEMES
        ):
            if scheme not in WEBHOOK_SCHEMES or not urlsplit(url).hostname:
                raise ValueError("a webhook URL is http:// or https:// and names a host")
            if request.get("action") == "check":
                return {"ok": True, "service": "webhook"}
            service = post_webhook(url, request["document"], float(request.get("timeout", 10)))
        else:
            service = apprise_send(request)
    except Exception as error:  # noqa: BLE001 every failure is one line on stdout
        detail = " ".join(str(error).split()) or "no detail"
        return {"ok": False, "error": redact(f"{type(error).__name__}: {detail}", url)}
    return {"ok": True, "service": service}


def main() -> int:
    logging.getLogger().addHandler(logging.NullHandler())  # nothing to stderr
    request = json.loads(sys.stdin.read())
    print(json.dumps(handle(request)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
