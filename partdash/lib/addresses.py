"""Which addresses partdash may connect to (PARTDASH_CONNECT_ALLOW, PARTDASH_CONNECT_DENY).

Both are comma-separated lists of networks in CIDR form (`10.20.0.0/16`, `::1/128`, a
bare address meaning just it) or the names `loopback`, `link-local` and `private`. The
deny list wins; a non-empty allow list admits only what it names. Both empty (the
default): every address. Checked on each address the host name resolves to, so a name
pointing at 127.0.0.1 or 169.254.169.254 (a cloud's metadata service) is refused like
the address itself.
"""

import ipaddress
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

NAMED = {
    "loopback": ("127.0.0.0/8", "::1/128"),
    "link-local": ("169.254.0.0/16", "fe80::/10"),
    "private": ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"),
}


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
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


@dataclass(frozen=True)
class AddressPolicy:
    allow: tuple[Network, ...] = ()
    deny: tuple[Network, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.allow or self.deny)

    def refusal(self, address: str) -> str | None:
        """Why `address` may not be connected to, or None when it may."""
        ip = plain(address)
        if any(ip in network for network in self.deny):
            return "PARTDASH_CONNECT_DENY refuses it"
        if self.allow and not any(ip in network for network in self.allow):
            return "it is not in PARTDASH_CONNECT_ALLOW"
        return None
