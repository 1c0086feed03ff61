"""`mysql://user:password@host:port/` DSNs, as used by PARTDASH_DEMO_DSN."""

from urllib.parse import unquote, urlsplit

from partdash.mysql.connection import Target


class DsnError(ValueError):
    pass


def parse_dsn(dsn: str) -> Target:
    parts = urlsplit(dsn)
    if parts.scheme not in ("mysql", "mariadb"):
        raise DsnError(f"not a mysql:// DSN: {parts.scheme or dsn!r}")
    if not parts.hostname:
        raise DsnError("the DSN has no host")
    try:
        port = parts.port or 3306
    except ValueError as exc:
        raise DsnError(f"bad port in DSN: {exc}") from None
    return Target(
        host=parts.hostname,
        port=port,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
    )
