"""Which addresses partdash may connect to (PARTDASH_CONNECT_ALLOW, PARTDASH_CONNECT_DENY).

Both are comma-separated lists of networks in CIDR form (`10.20.0.0/16`, `::1/128`, a
bare address meaning just it) or the names `loopback`, `link-local` and `private`. The
deny list wins; a non-empty allow list admits only what it names. Both empty (the
default): every address. Checked on each address the host name resolves to, so a name
pointing at 127.0.0.1 or 169.254.169.254 (a cloud's metadata service) is refused like
the address itself.

Alert channels (`channel_policy`) answer to the same two settings, and besides refuse
what no chat or webhook lives at but the house's own services do (`CHANNEL_GUARDED`:
loopback, link-local, the clouds' metadata addresses, "this host"), unless
PARTDASH_CHANNEL_ALLOW names it: an operator picks a channel's host, so without this an
operator could reach the broker's Redis on 127.0.0.1 (issue 37).

Stdlib only: the channel sender (`partdash.alerts.channel_send`, a process without
Django) loads this file by its path.
"""

import ipaddress
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

NAMED = {
    "loopback": ("127.0.0.0/8", "::1/128"),
    "link-local": ("169.254.0.0/16", "fe80::/10"),
    "private": ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"),
    # AWS (also 169.254.169.254 under link-local), Alibaba, Azure's wire server
    "metadata": ("fd00:ec2::254/128", "100.100.100.200/32", "168.63.129.16/32"),
    # 0.0.0.0 reaches this host on Linux, as :: does
    "this-host": ("0.0.0.0/8", "::/128"),
}
CHANNEL_GUARDED = ("loopback", "link-local", "metadata", "this-host")
POLICY_REFUSED = "address refused by policy"


def parse_networks(entries: list[str] | tuple[str, ...], setting: str) -> tuple[Network, ...]:
    """The networks `entries` name; ValueError naming the setting and the bad entry."""
    networks: list[Network] = []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        for cidr in NAMED.get(entry.lower(), (entry,)):
            try:
                networks.append(ipaddress.ip_network(cidr, strict=False))
            except ValueError:
                raise ValueError(
                    f"{setting}: {entry!r} is neither a network (CIDR such as 10.0.0.0/8) "
                    f"nor one of {', '.join(NAMED)}"
                ) from None
    return tuple(networks)


def plain(address: str) -> Address:
    """The address as a value, an IPv6 zone (`fe80::1%eth0`) dropped and an IPv4-mapped
    IPv6 address (`::ffff:127.0.0.1`) read as the IPv4 address it is."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        return _embedded_ipv4(ip) or ip
    return ip


NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries to the same host: mapped (`::ffff:a.b.c.d`),
    NAT64 (`64:ff9b::a.b.c.d`), 6to4 (`2002:AABB:CCDD::`) or Teredo's client; judged as
    that IPv4 address, so `64:ff9b::127.0.0.1` is loopback to the policy."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


CONTROL = ("\r", "\n", "\0")


def holds_control_characters(url: str) -> bool:
    """CR, LF or NUL in `url`, as written or decoded up to three times over (`%250D`): a
    line-based service (IRC, SMTP, Redis) would read what follows as a command."""
    forms = [url]
    for _ in range(3):
        forms += [unquote(forms[-1]), unquote_plus(forms[-1])]
    return any(c in form for form in forms for c in CONTROL)


@dataclass(frozen=True)
class AddressPolicy:
    """`allow` and `deny` as above; `guarded`: refused unless `exempt` names the address
    (channels: CHANNEL_GUARDED, exempt PARTDASH_CHANNEL_ALLOW, which also widens a
    non-empty allow list)."""

    allow: tuple[Network, ...] = ()
    deny: tuple[Network, ...] = ()
    guarded: tuple[Network, ...] = ()
    exempt: tuple[Network, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.allow or self.deny or self.guarded)

    def refusal(self, address: str) -> str | None:
        """Why `address` may not be connected to, or None when it may."""
        try:
            ip = plain(address)
        except ValueError:
            return "it is not an IP address"
        exempt = any(ip in network for network in self.exempt)
        if any(ip in network for network in self.deny):
            return "PARTDASH_CONNECT_DENY refuses it"
        if not exempt and any(ip in network for network in self.guarded):
            return "loopback, link-local and metadata addresses need PARTDASH_CHANNEL_ALLOW"
        if self.allow and not exempt and not any(ip in network for network in self.allow):
            return "it is not in PARTDASH_CONNECT_ALLOW"
        return None

    def as_lists(self) -> dict[str, list[str]]:
        """The policy as plain strings, for a process that reads it back (`from_lists`)."""
        return {name: [str(n) for n in getattr(self, name)] for name in POLICY_FIELDS}

    @classmethod
    def from_lists(cls, lists: dict[str, list[str]]) -> "AddressPolicy":
        return cls(**{name: parse_networks(lists.get(name, []), name) for name in POLICY_FIELDS})


POLICY_FIELDS = ("allow", "deny", "guarded", "exempt")


def channel_policy(
    allow: list[str] | tuple[str, ...],
    deny: list[str] | tuple[str, ...],
    channel_allow: list[str] | tuple[str, ...],
) -> AddressPolicy:
    """Where alert channels may connect: PARTDASH_CONNECT_ALLOW/DENY, and CHANNEL_GUARDED
    refused unless PARTDASH_CHANNEL_ALLOW (`channel_allow`) names the address."""
    return AddressPolicy(
        allow=parse_networks(allow, "PARTDASH_CONNECT_ALLOW"),
        deny=parse_networks(deny, "PARTDASH_CONNECT_DENY"),
        guarded=parse_networks(CHANNEL_GUARDED, "channels"),
        exempt=parse_networks(channel_allow, "PARTDASH_CHANNEL_ALLOW"),
    )
