"""Opening a safe, read-only session on a monitored server.

Every failure becomes a `ConnectionFailure` with a one-line reason a user can act on
(DNS, refused, timeout, access denied, TLS), never a stack trace. The password is
passed to PyMySQL only and never appears in a message.
"""

import errno
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import pymysql
from django.conf import settings

from partdash.servers.choices import Flavor, TlsMode

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
ER_ACCESS_DENIED_NO_PASSWORD = 1698
ER_CON_COUNT = 1040
ER_USER_LIMIT_REACHED = 1226
CR_CONN_HOST_ERROR = 2003
NO_TLS_ON_SERVER = "SSL is required but the server doesn't support it"


@dataclass(frozen=True)
class Target:
    """Where and how to connect; built from a Server or a DSN."""

    host: str
    port: int
    user: str
    password: str = ""
    tls_mode: str = TlsMode.PREFERRED
    ssl_ca: str = ""

    def __repr__(self) -> str:  # never show the password
        return f"Target({self.user}@{self.host}:{self.port})"


class ConnectionFailure(Exception):
    """A monitored server could not be reached or refused us. `kind` is one of
    dns, refused, timeout, access_denied, too_many_connections, tls, error."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Session:
    """An open connection plus what was learnt on connecting."""

    conn: pymysql.connections.Connection
    flavor: str
    version: str

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, args)
            return list(cursor.fetchall())

    def scalar(self, sql: str, args: tuple = ()):
        rows = self.rows(sql, args)
        return rows[0][0] if rows else None


def target_for(server) -> Target:
    return Target(
        host=server.host,
        port=server.port,
        user=server.user,
        password=server.get_password(),
        tls_mode=server.tls_mode,
        ssl_ca=server.ssl_ca,
    )


@cache
def _tls_context(tls_mode: str, ca_file: str) -> ssl.SSLContext | None:
    """One context per mode and CA for the life of the process: building one loads the
    system's CA store, which costs more than a whole poll of a small server."""
    if tls_mode == TlsMode.DISABLED:
        return None
    context = ssl.create_default_context(cafile=ca_file or None)
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT  # MySQL's self-signed certificates
    context.check_hostname = tls_mode == TlsMode.VERIFY_IDENTITY
    if tls_mode == TlsMode.PREFERRED:
        context.verify_mode = ssl.CERT_NONE
    return context


# Servers that answered `preferred` TLS with "no TLS here": connect in plain text directly.
_WITHOUT_TLS: set[tuple[str, int]] = set()


def _resolve(target: Target) -> None:
    try:
        socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConnectionFailure(
            "dns", f"cannot resolve host {target.host!r}: {exc.strerror}"
        ) from None


def classify(exc: Exception, target: Target) -> ConnectionFailure:
    """Turn a PyMySQL/socket exception into a one-line, user-facing failure."""
    where = f"{target.host}:{target.port}"
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    cause = exc.__cause__ or exc.__context__
    if code in (ER_ACCESS_DENIED, ER_DBACCESS_DENIED, ER_ACCESS_DENIED_NO_PASSWORD):
        return ConnectionFailure("access_denied", f"access denied for {target.user!r} at {where}")
    if code in (ER_CON_COUNT, ER_USER_LIMIT_REACHED):
        return ConnectionFailure("too_many_connections", f"{where}: {text}")
    if NO_TLS_ON_SERVER in text:
        return ConnectionFailure("tls", f"{where} does not offer TLS but {target.tls_mode} is set")
    if isinstance(cause, ssl.SSLError) or "SSL" in text or "certificate" in text:
        return ConnectionFailure("tls", f"TLS failure with {where}: {text}")
    if isinstance(cause, ConnectionRefusedError) or "refused" in text.lower():
        return ConnectionFailure("refused", f"connection refused by {where}")
    if isinstance(cause, TimeoutError | socket.timeout) or "timed out" in text:
        return ConnectionFailure("timeout", f"timed out talking to {where}")
    if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return ConnectionFailure("unreachable", f"no route to {where}")
    if code == CR_CONN_HOST_ERROR:
        return ConnectionFailure("refused", f"cannot connect to {where}: {text}")
    return ConnectionFailure("error", f"{where}: {text}")


def _session_settings(flavor: str) -> list[str]:
    """Caps that keep a poll from ever hurting the monitored server."""
    statement = settings.PARTDASH_STATEMENT_TIMEOUT
    caps = [
        f"SET SESSION lock_wait_timeout = {int(settings.PARTDASH_LOCK_WAIT_TIMEOUT)}",
        "SET SESSION TRANSACTION READ ONLY",
        "SET SESSION time_zone = '+00:00'",  # TIMESTAMP columns arrive in UTC
    ]
    if flavor == Flavor.MARIADB:
        caps.append(f"SET SESSION max_statement_time = {float(statement)}")
    else:
        caps.append(f"SET SESSION max_execution_time = {int(statement * 1000)}")
    return caps


def flavor_of(version: str) -> str:
    return Flavor.MARIADB if "mariadb" in version.lower() else Flavor.MYSQL


def _check_tls(conn: pymysql.connections.Connection, target: Target) -> None:
    if target.tls_mode not in (TlsMode.VERIFY_CA, TlsMode.VERIFY_IDENTITY):
        return
    with conn.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        row = cursor.fetchone()
    if not row or not row[1]:
        raise ConnectionFailure(
            "tls", f"{target.host}:{target.port} does not offer TLS but {target.tls_mode} is set"
        )


def _connect(target: Target, tls: bool) -> pymysql.connections.Connection:
    context = _tls_context(target.tls_mode, target.ssl_ca) if tls else None
    return pymysql.connect(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password,
        connect_timeout=settings.PARTDASH_CONNECT_TIMEOUT,
        read_timeout=settings.PARTDASH_READ_TIMEOUT,
        write_timeout=settings.PARTDASH_READ_TIMEOUT,
        ssl=context,
        ssl_disabled=context is None,
        charset="utf8mb4",
        autocommit=True,
        program_name="partdash",
    )


def _connect_preferring_tls(target: Target) -> pymysql.connections.Connection:
    """TLS where the server offers it; for `preferred`, plain text where it does not."""
    address = (target.host, target.port)
    plain_known = target.tls_mode == TlsMode.PREFERRED and address in _WITHOUT_TLS
    try:
        return _connect(target, tls=not plain_known)
    except pymysql.OperationalError as exc:
        if target.tls_mode != TlsMode.PREFERRED or NO_TLS_ON_SERVER not in str(exc):
            raise classify(exc, target) from None
    except pymysql.MySQLError as exc:
        raise classify(exc, target) from None
    _WITHOUT_TLS.add(address)
    try:
        return _connect(target, tls=False)
    except pymysql.MySQLError as exc:
        raise classify(exc, target) from None


@contextmanager
def open_session(target: Target) -> Iterator[Session]:
    """Connect with timeouts, a statement cap and a read-only session."""
    _resolve(target)
    conn = _connect_preferring_tls(target)
    try:
        _check_tls(conn, target)
        with conn.cursor() as cursor:
            cursor.execute("SELECT VERSION()")  # the handshake's may carry a 5.5.5- prefix
            version = cursor.fetchone()[0]
            flavor = flavor_of(version)
            for statement in _session_settings(flavor):
                cursor.execute(statement)
        yield Session(conn=conn, flavor=flavor, version=version)
    except pymysql.MySQLError as exc:
        raise classify(exc, target) from None
    finally:
        conn.close()
