"""A secret-bearing URL as it may be shown: its scheme and host, the rest cut.

A channel's URL holds the service's secret (a Slack token, a routing key, a webhook's
signature), and in an Apprise URL the "host" is often the secret itself
(`slack://TOKEN_A/TOKEN_B/TOKEN_C`, `opsgenie://API_KEY`, `pagerduty://KEY@KEY`). So the
host is kept only where it is a real host name or address; the user, password, port,
path, query and fragment never are."""

import ipaddress
import re
from urllib.parse import urlsplit

CUT = "…"
# A host name: dot-separated labels of letters, digits and hyphens, the last alphabetic.
# A token has no dot, or a label past 63 characters, or an underscore (base64url).
HOST_NAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}")


def scheme_and_host(url: str) -> str:
    """`https://hooks.slack.com/…`, `slack://…`, `ntfys://ntfy.sh/…`: what `url` reaches,
    with nothing that could be a secret."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        return CUT
    scheme = parts.scheme.lower()
    if not re.fullmatch(r"[a-z][a-z0-9+.-]{0,31}", scheme):
        return CUT
    if not is_host(host):
        return f"{scheme}://{CUT}"
    shown_host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown_host}/{CUT}"


def is_host(host: str) -> bool:
    """Whether `host` is a host name or an IP address (not a token in a host's place)."""
    if HOST_NAME.fullmatch(host):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
