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
  "document": D, "timeout": S}`: a kind partdash speaks itself (`POSTERS`: `webhook`
  posts `document` as JSON to U) goes to its function; any other kind sends title and
  body through Apprise.

It imports nothing of partdash but `partdash/lib/addresses.py` (stdlib only, loaded by
its path), so it starts without Django.

Every connection the process makes answers to the request's address policy (`Guard`,
issue 37): each host is resolved once, each of its addresses checked, and only an
admitted address is connected to (the socket's own connect checks the address it is
given, so a second lookup answering otherwise, DNS rebinding, changes nothing). A
failure is told as a class ("connection refused", "timed out", "not HTTP", "HTTP 401",
"address refused by policy"), never with what the far side said: an operator picks the
host, and the answer of whatever listens there is not theirs to read.
"""

import http.client
import importlib.util
import json
import logging
import re
import socket
import ssl
import sys
from pathlib import Path
from urllib.parse import quote, unquote, unquote_plus, urlsplit

WEBHOOK_SCHEMES = ("http", "https")
NO_DETAIL = "the service did not take the message"


def _load_addresses():
    path = Path(__file__).resolve().parents[1] / "lib" / "addresses.py"
    spec = importlib.util.spec_from_file_location("partdash_addresses", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


addresses = _load_addresses()


class PolicyRefused(ConnectionError):
    """The address policy refused every address of a host: no packet was sent."""


def failure_class(error: BaseException) -> str:
    """What happened, in a few fixed words, from an exception and those it wraps."""
    seen: list[BaseException] = []
    pending: list[BaseException] = [error]
    while pending and len(seen) < 20:
        current = pending.pop(0)
        seen.append(current)
        pending += [a for a in current.args if isinstance(a, BaseException)]
        pending += [c for c in (current.__cause__, current.__context__) if c is not None]
        pending += [r for r in [getattr(current, "reason", None)] if isinstance(r, BaseException)]
    for kind, words in CLASSES:
        if any(isinstance(e, kind) for e in seen):
            return words
    return "connection failed"


CLASSES: list[tuple[type | tuple[type, ...], str]] = [
    (PolicyRefused, addresses.POLICY_REFUSED),
    (socket.gaierror, "host not found"),
    (ConnectionRefusedError, "connection refused"),
    ((TimeoutError, socket.timeout), "timed out"),
    (ssl.SSLError, "TLS failed"),
    (http.client.HTTPException, "not HTTP"),
]


class Guard:
    """This process's connections under the address policy (see the module's docstring);
    `events` keeps what failed, as classes, the last one told."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.resolved: dict[str | None, list[str]] = {}
        self.events: list[str] = []
        self._getaddrinfo = socket.getaddrinfo
        self._connect = socket.socket.connect
        self._connect_ex = socket.socket.connect_ex

    def admitted(self, host: str | None) -> list[str]:
        """The host's addresses the policy admits, resolved once for the process."""
        if host not in self.resolved:
            found = self._getaddrinfo(host, None, 0, socket.SOCK_STREAM)
            ips = list(dict.fromkeys(str(sockaddr[0]) for *_, sockaddr in found))
            self.resolved[host] = [ip for ip in ips if self.policy.refusal(ip) is None]
        if not self.resolved[host]:
            self.events.append(addresses.POLICY_REFUSED)
            raise PolicyRefused(addresses.POLICY_REFUSED)
        return self.resolved[host]

    def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):
        if isinstance(host, bytes):
            host = host.decode("idna")
        answers = []
        for ip in self.admitted(host):
            numeric = flags | socket.AI_NUMERICHOST
            try:
                answers += self._getaddrinfo(ip, port, family, type, proto, numeric)
            except socket.gaierror:  # (an IPv6 address where IPv4 was asked for)
                continue
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "no admitted address of that family")
        return answers

    def target(self, sock: socket.socket, address):
        """The address to connect `sock` to: an admitted one, or PolicyRefused."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            self.events.append(addresses.POLICY_REFUSED)
            raise PolicyRefused(addresses.POLICY_REFUSED)
        host, rest = address[0], tuple(address[1:])
        if self.policy.refusal(host) is None:  # (an admitted literal address)
            return address
        try:
            addresses.plain(host)
        except ValueError:  # a name: one of its admitted addresses
            return (self.admitted(host)[0], *rest)
        self.events.append(addresses.POLICY_REFUSED)
        raise PolicyRefused(addresses.POLICY_REFUSED)

    def connect(self, sock: socket.socket, address) -> None:
        try:
            self._connect(sock, self.target(sock, address))
        except OSError as error:
            self.events.append(failure_class(error))
            raise

    def connect_ex(self, sock: socket.socket, address) -> int:
        return self._connect_ex(sock, self.target(sock, address))

    def install(self) -> "Guard":
        guard = self
        socket.getaddrinfo = self.getaddrinfo  # type: ignore[assignment]
        socket.socket.connect = lambda sock, address: guard.connect(sock, address)  # type: ignore[method-assign]
        socket.socket.connect_ex = lambda sock, address: guard.connect_ex(sock, address)  # type: ignore[method-assign]
        socket.gethostbyname = lambda host: next(  # type: ignore[assignment]
            ip for ip in guard.admitted(host) if ":" not in ip
        )
        self._watch_http()
        return self

    def _watch_http(self) -> None:
        """Every HTTP exchange's outcome as a class: the status of an answer >= 400 (a
        redirect is followed only under the same policy), or what broke it."""
        import requests

        send = requests.Session.send
        guard = self

        def watched(session, prepared, **kwargs):
            try:
                answer = send(session, prepared, **kwargs)
            except Exception as error:
                guard.events.append(failure_class(error))
                raise
            if answer.status_code >= 300 and not answer.is_redirect:
                guard.events.append(f"HTTP {answer.status_code}")
            elif answer.is_redirect and not kwargs.get("allow_redirects", True):
                guard.events.append(f"HTTP {answer.status_code}")
            return answer

        requests.Session.send = watched  # type: ignore[method-assign]

    def told(self, fallback: str) -> str:
        return self.events[-1] if self.events else fallback


def secret_parts(url: str) -> list[str]:
    """What of `url` may be secret: everything but its scheme and a host with a dot (an
    Apprise URL may hold a token where the host goes), as written, decoded and encoded (a
    plugin may quote any of the three), whatever its length."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    shown = host.lower() if "." in host else ""
    rest = url.partition("://")[2]
    pieces = {url, rest, *re.split(r"[/?&=#:@,;+ ]+", rest)}
    pieces |= {form(p) for p in list(pieces) for form in (unquote, unquote_plus)}
    pieces |= {quote(p, safe="") for p in list(pieces)}
    return sorted((p for p in pieces if p and p.lower() != shown), key=len, reverse=True)


def redact(text: str, url: str) -> str:
    """`text` without any piece of `url` (`secret_parts`): a long piece wherever it is, a
    short one (under 8 characters) where it stands as a word, so "ab" as a password goes
    and "about" stays."""
    for piece in secret_parts(url):
        if len(piece) >= 8:
            text = text.replace(piece, "…")
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(piece)}(?![A-Za-z0-9])", "…", text)
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
        raise Undelivered(f"HTTP {answer.status_code}")
    return "webhook"


class Undelivered(Exception):
    """The service did not take the message; the argument is the class of why."""


# The kinds partdash speaks to itself, by their transports' kind (`channel_kinds`): each
# a function of the URL, the request's `document` and the timeout, returning the
# service's name or raising Undelivered with the class of why (`HTTP 500`). Any other
# kind goes through Apprise. Their connections answer to the Guard like Apprise's.
POSTERS = {"webhook": post_webhook}


def apprise_send(request: dict, guard: Guard) -> str:
    import apprise

    notifier = apprise.Apprise(
        asset=apprise.AppriseAsset(app_id="partdash", app_desc="partdash alerts")
    )
    with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
        if not notifier.add(request["url"]):
            # (to the operator saving it, redacted: which part Apprise missed)
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
        if not sent:  # (Apprise's log quotes the far side: only the class is told)
            raise Undelivered(f"{service}: {guard.told(NO_DETAIL)}")
    return service


def _last(captured) -> str:
    lines = [line for line in captured.getvalue().splitlines() if line.strip()]
    return lines[-1] if lines else "no detail"


def policy_of(request: dict):
    """The request's address policy; without one, the channels' default."""
    if request.get("policy"):
        return addresses.AddressPolicy.from_lists(request["policy"])
    return addresses.channel_policy((), (), ())


def refuse_url(url: str, request: dict) -> None:
    """The parent's checks (`channels.admissible`) made again here, so this process never
    carries a line break to a service, nor speaks a scheme the docs do not list, whoever
    calls it: the request's `schemes` (Apprise's) and http(s) for webhooks."""
    if addresses.holds_control_characters(url):
        raise Undelivered("the URL holds a line break or NUL (CR, LF or NUL, maybe %-encoded)")
    scheme = urlsplit(url).scheme.lower()
    if scheme not in {*WEBHOOK_SCHEMES, *request.get("schemes", ())}:
        raise Undelivered(f"scheme {scheme}:// is not a channel partdash sends through")


def handle(request: dict) -> dict:
    url = request.get("url") or ""
    guard = Guard(policy_of(request)).install()
    checking = request.get("action") == "check"
    try:
        refuse_url(url, request)
        scheme = urlsplit(url).scheme.lower()
        kind = request.get("kind")
        if kind in POSTERS or (checking and scheme in WEBHOOK_SCHEMES):
            if scheme not in WEBHOOK_SCHEMES or not urlsplit(url).hostname:
                raise ValueError("a webhook URL is http:// or https:// and names a host")
            if checking:
                return {"ok": True, "service": "webhook"}
            post = POSTERS[kind]
            service = post(url, request["document"], float(request.get("timeout", 10)))
        else:
            service = apprise_send(request, guard)
    except Undelivered as undelivered:
        return {"ok": False, "error": redact(str(undelivered), url)}
    except Exception as error:  # noqa: BLE001 every failure is one line on stdout
        if checking:
            detail = " ".join(str(error).split()) or "no detail"
            return {"ok": False, "error": redact(detail, url)}
        return {"ok": False, "error": redact(guard.told(failure_class(error)), url)}
    return {"ok": True, "service": service}


def main() -> int:
    logging.getLogger().addHandler(logging.NullHandler())  # nothing to stderr
    request = json.loads(sys.stdin.read())
    print(json.dumps(handle(request)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
