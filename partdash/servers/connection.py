"""Opening a safe, read-only session on a monitored server.

Every failure becomes a `ConnectionFailure` with a one-line reason a user can act on
(DNS, refused, timeout, access denied, TLS), never a stack trace. The password is
passed to PyMySQL only and never appears in a message; it is never sent in clear text
over an unencrypted connection (see `GuardedConnection`).
"""

import errno
import logging
import os
import re
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from stat import S_ISREG

import pymysql
from django.conf import settings
from pymysql.constants import CLIENT

from partdash.servers.choices import Flavor, TlsMode

logger = logging.getLogger(__name__)

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
ER_ACCESS_DENIED_NO_PASSWORD = 1698
ER_CON_COUNT = 1040
ER_USER_LIMIT_REACHED = 1226
CR_CONN_HOST_ERROR = 2003
CR_SERVER_GONE, CR_SERVER_LOST = 2006, 2013
NO_TLS_ON_SERVER = "SSL is required but the server doesn't support it"
# Plugins that send the password itself: MySQL's mysql_clear_password (LDAP, PAM) and
# MariaDB's `dialog` (PAM), which answers a "Password: " prompt with the password as typed.
CLEAR_TEXT_PLUGINS = (b"mysql_clear_password", b"dialog")
# A CA bundle is a few hundred certificates at most; this keeps a mistyped path such as a
# log file from being read whole on every save.
MAX_CA_FILE_BYTES = 16 * 1024 * 1024
VERIFYING_MODES = (TlsMode.VERIFY_CA, TlsMode.VERIFY_IDENTITY)


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

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class ConnectionFailure(Exception):
    """A monitored server could not be reached or refused us. `kind` is one of
    dns, refused, timeout, unreachable, lost, access_denied, too_many_connections, tls, error.
    `tls_offered` is what the server's greeting said about TLS, None if none arrived."""

    def __init__(self, kind: str, message: str, tls_offered: bool | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.tls_offered = tls_offered


class ClearTextRefused(pymysql.err.OperationalError):
    """The server asked for the password in clear text over an unencrypted connection."""

    def __init__(self, plugin: bytes):
        name = plugin.decode("ascii", "replace")
        super().__init__(
            "refused to send the password in clear text: "
            f"the server asked for {name} over an unencrypted connection"
        )


class OwnKeyRefused(ClearTextRefused):
    """The server asked for the password encrypted under a public key it sent itself, over
    an unencrypted connection: whoever answers at the address can decrypt it, so it is as
    good as clear text. (The MySQL client refuses this too unless told
    --get-server-public-key.)"""

    def __init__(self):
        pymysql.err.OperationalError.__init__(
            self,
            "refused to send the password over an unencrypted connection: the server asked "
            "for it encrypted under a public key it sent itself (sha256_password or "
            "caching_sha2_password full authentication); enable TLS on the server",
        )


class GuardedConnection(pymysql.connections.Connection):
    """PyMySQL's connection with three changes, each keeping a credential or a worker safe:

    - it never answers a clear-text authentication request (`CLEAR_TEXT_PLUGINS`, in the
      greeting or in an auth switch) unless the connection is encrypted: PyMySQL would
      send the stored password to whoever listens at the address; nor does it encrypt the
      password under a public key the server sent over plain TCP (`OwnKeyRefused`);
    - with `tls_required=False` (the `preferred` mode) it decides from the greeting's
      CLIENT.SSL flag whether to start TLS, within this one connection (PyMySQL does that
      only when given no TLS context, and we pass our own, cached one);
    - the greeting, the TLS handshake and the authentication wait at most the connect
      timeout; the read and write timeouts apply from the first query on.
    """

    def __init__(self, *, tls_required: bool, **kwargs):
        super().__init__(**kwargs, defer_connect=True)
        if self.ssl and not tls_required:
            self._ssl_required = False
            self.client_flag &= ~CLIENT.SSL  # asked for only where the server offers it

    @property
    def tls_offered(self) -> bool | None:
        """Whether the server's greeting offered TLS; None before a greeting arrived."""
        capabilities = getattr(self, "server_capabilities", None)
        return None if capabilities is None else bool(capabilities & CLIENT.SSL)

    @property
    def encrypted(self) -> bool:
        return bool(self._secure)

    def connect(self, sock=None) -> None:
        query_timeouts = self._read_timeout, self._write_timeout
        self._read_timeout = self._write_timeout = self.connect_timeout
        try:
            super().connect(sock)
        finally:
            self._read_timeout, self._write_timeout = query_timeouts

    def _request_authentication(self) -> None:
        plugin = self._auth_plugin_name.encode("ascii", "replace")
        starts_tls = self.ssl and self.tls_offered
        # Where TLS is required but not offered, PyMySQL refuses first, saying so.
        if plugin in CLEAR_TEXT_PLUGINS and not starts_tls and not self._ssl_required:
            raise ClearTextRefused(plugin)
        super()._request_authentication()

    # PyMySQL stores the RSA public key the server sends (sha256_password,
    # caching_sha2_password full authentication) here, then encrypts the password with it.
    @property
    def server_public_key(self) -> bytes | None:
        return self._server_public_key

    @server_public_key.setter
    def server_public_key(self, key: bytes | None) -> None:
        if key and not self._secure:
            raise OwnKeyRefused()
        self._server_public_key = key

    def _process_auth(self, plugin_name, auth_packet, handler=None):
        if plugin_name in CLEAR_TEXT_PLUGINS and not self._secure:
            raise ClearTextRefused(plugin_name)
        return super()._process_auth(plugin_name, auth_packet, handler)


@dataclass(frozen=True)
class Session:
    """An open connection plus what was learnt on connecting."""

    conn: pymysql.connections.Connection
    flavor: str
    version: str
    tls_offered: bool | None = None
    encrypted: bool = False

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


def ssl_reason(exc: ssl.SSLError | OSError) -> str:
    """OpenSSL's reason without the `[LIB: CODE]` prefix and `(_ssl.c:NNNN)` suffix."""
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"certificate verify failed: {exc.verify_message}"
    text = exc.strerror if isinstance(exc.strerror, str) else str(exc)
    text = re.sub(r"^\[[^\]]*\]\s*", "", text)
    return re.sub(r"\s*\(_ssl\.c:\d+\)$", "", text) or type(exc).__name__


# One answer for every CA file that cannot serve, whether it is missing, unreadable, a
# directory or not PEM: the path is typed by a web user and checked on the web host, and
# distinct answers would tell that user which files exist there (/etc/shadow, ~/.ssh/...).
# A poll logs the precise reason in the worker's log, for whoever runs the host.
CA_FILE_UNUSABLE = "not a readable file of PEM certificates"


def _usable_ca_file(path: str) -> bool:
    """Is `path` a readable file of PEM certificates, loaded as the connection loads it?"""
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        return False
    if os.path.getsize(path) > MAX_CA_FILE_BYTES:
        return False
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError):
        return False
    return bool(context.cert_store_stats()["x509"])


def ca_file_problem(path: str) -> str | None:
    """Why `path` cannot serve as a CA bundle (None if it can), in one message whatever
    the reason (CA_FILE_UNUSABLE)."""
    return None if _usable_ca_file(path) else f"{path} is {CA_FILE_UNUSABLE}."


@lru_cache(maxsize=64)
def _cached_tls_context(tls_mode: str, ca_file: str, ca_version: tuple) -> ssl.SSLContext:
    """One context per mode and CA file version for the life of the process: building one
    loads the system's CA store, which costs more than a whole poll of a small server.
    `ca_version` (the file's mtime, size and inode) reloads a CA file replaced since."""
    context = ssl.create_default_context(cafile=ca_file or None)
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT  # MySQL's self-signed certificates
    context.check_hostname = tls_mode == TlsMode.VERIFY_IDENTITY
    if tls_mode == TlsMode.PREFERRED:
        context.verify_mode = ssl.CERT_NONE
    return context


def _ca_load_reason(exc: ssl.SSLError | OSError) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason == "NO_CERTIFICATE_OR_CRL_FOUND":
        return "it holds no PEM certificate"
    return ssl_reason(exc)


def tls_context(target: Target) -> ssl.SSLContext | None:
    """The TLS context for `target` (None when TLS is disabled). A CA file that is gone,
    unreadable or holds no certificate is a `ConnectionFailure` with a one-line reason,
    never an exception of the ssl module."""
    if target.tls_mode == TlsMode.DISABLED:
        return None
    ca_version: tuple = ()
    where = f"cannot use the TLS CA file {target.ssl_ca}" if target.ssl_ca else "cannot set up TLS"
    if target.ssl_ca:
        try:
            stat = os.stat(target.ssl_ca)
        except OSError as exc:
            raise _ca_file_failure(where, target.ssl_ca, exc.strerror) from None
        if not S_ISREG(stat.st_mode) or stat.st_size > MAX_CA_FILE_BYTES:
            raise _ca_file_failure(where, target.ssl_ca, "not a file, or too large")
        ca_version = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    try:
        return _cached_tls_context(target.tls_mode, target.ssl_ca, ca_version)
    except (ssl.SSLError, OSError) as exc:
        if target.ssl_ca:
            raise _ca_file_failure(where, target.ssl_ca, _ca_load_reason(exc)) from None
        raise ConnectionFailure("tls", f"{where}: {_ca_load_reason(exc)}") from None


def _ca_file_failure(where: str, path: str, reason: str) -> ConnectionFailure:
    """The poll's one line for a CA file that cannot serve, the same whatever `reason`
    (see CA_FILE_UNUSABLE), which is logged."""
    logger.warning("CA file %s unusable: %s", path, reason)
    return ConnectionFailure("tls", f"{where}: {CA_FILE_UNUSABLE}")


def _resolve(target: Target) -> None:
    try:
        socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConnectionFailure(
            "dns", f"cannot resolve host {target.host!r}: {exc.strerror}"
        ) from None


def _kind_and_message(exc: Exception, target: Target, limit: str) -> tuple[str, str]:
    where = target.address
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc.args[0] if exc.args else exc)
    cause = getattr(exc, "original_exception", None) or exc.__cause__ or exc.__context__
    if isinstance(exc, ClearTextRefused):
        return "tls", text
    if code in (ER_ACCESS_DENIED, ER_DBACCESS_DENIED, ER_ACCESS_DENIED_NO_PASSWORD):
        return "access_denied", f"access denied for {target.user!r} at {where}"
    if code in (ER_CON_COUNT, ER_USER_LIMIT_REACHED):
        return "too_many_connections", f"{where}: {text}"
    if NO_TLS_ON_SERVER in text:
        return "tls", f"{where} does not offer TLS but {target.tls_mode} is set"
    if isinstance(cause, ssl.SSLError):
        return "tls", f"TLS failure with {where}: {ssl_reason(cause)}"
    if "SSL" in text or "certificate" in text:
        return "tls", f"TLS failure with {where}: {text}"
    if isinstance(cause, ConnectionRefusedError) or "refused" in text.lower():
        return "refused", f"connection refused by {where}"
    if isinstance(cause, TimeoutError | socket.timeout) or "timed out" in text:
        return "timeout", f"timed out talking to {where}" + (
            f": no answer within {limit}" * bool(limit)
        )
    if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return "unreachable", f"no route to {where}"
    if code in (CR_SERVER_GONE, CR_SERVER_LOST):  # killed, restarted, or a proxy dropped it
        return "lost", f"lost the connection to {where}: {text}"
    if code == CR_CONN_HOST_ERROR:
        return "refused", f"cannot connect to {where}: {text}"
    return "error", f"{where}: {text}"


def classify(
    exc: Exception, target: Target, tls_offered: bool | None = None, limit: str = ""
) -> ConnectionFailure:
    """Turn a PyMySQL/socket exception into a one-line, user-facing failure. `limit` names
    the timeout that applied ("the read timeout of 30 s"), for a timeout's message."""
    kind, message = _kind_and_message(exc, target, limit)
    return ConnectionFailure(kind, " ".join(message.split()), tls_offered)


GROUP_CONCAT_MAX_LEN = 64 * 1024 * 1024


def _session_settings(flavor: str) -> list[str]:
    """Caps that keep a poll from ever hurting the monitored server."""
    statement = settings.PARTDASH_STATEMENT_TIMEOUT
    caps = [
        f"SET SESSION lock_wait_timeout = {int(settings.PARTDASH_LOCK_WAIT_TIMEOUT)}",
        "SET SESSION TRANSACTION READ ONLY",
        "SET SESSION time_zone = '+00:00'",  # TIMESTAMP columns arrive in UTC
        # The bucket aggregates of a large server arrive as one string (MySQL's default
        # 1 KB would cut it; collector.incremental reads row by row if it is cut).
        f"SET SESSION group_concat_max_len = {GROUP_CONCAT_MAX_LEN}",
    ]
    if flavor == Flavor.MARIADB:
        caps.append(f"SET SESSION max_statement_time = {float(statement)}")
    else:
        caps.append(f"SET SESSION max_execution_time = {int(statement * 1000)}")
    return caps


def flavor_of(version: str) -> str:
    return Flavor.MARIADB if "mariadb" in version.lower() else Flavor.MYSQL


def connect(target: Target) -> GuardedConnection:
    """One connection, TLS as `target.tls_mode` says (for `preferred`: where the server's
    greeting offers it), with the connect timeout on the handshake and the read timeout
    on queries. No second, throw-away connection is ever made: each would count as an
    aborted connect on the server, and enough of them get partdash's host blocked
    (max_connect_errors)."""
    _resolve(target)
    context = tls_context(target)
    conn = GuardedConnection(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password,
        connect_timeout=settings.PARTDASH_CONNECT_TIMEOUT,
        read_timeout=settings.PARTDASH_READ_TIMEOUT,
        write_timeout=settings.PARTDASH_READ_TIMEOUT,
        ssl=context,
        ssl_disabled=context is None,
        tls_required=target.tls_mode in VERIFYING_MODES,
        charset="utf8mb4",
        autocommit=True,
        program_name="partdash",
    )
    try:
        conn.connect()
    except pymysql.MySQLError as exc:
        limit = f"the connect timeout of {settings.PARTDASH_CONNECT_TIMEOUT} s"
        raise classify(exc, target, conn.tls_offered, limit) from None
    if target.tls_mode in VERIFYING_MODES and not conn.encrypted:  # PyMySQL refuses first
        conn.close()
        raise ConnectionFailure(
            "tls", f"{target.address} does not offer TLS but {target.tls_mode} is set", False
        )
    return conn


@contextmanager
def open_session(target: Target) -> Iterator[Session]:
    """Connect with timeouts, a statement cap and a read-only session."""
    conn = connect(target)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT VERSION()")  # the handshake's may carry a 5.5.5- prefix
            version = cursor.fetchone()[0]
            flavor = flavor_of(version)
            for statement in _session_settings(flavor):
                cursor.execute(statement)
        yield Session(conn, flavor, version, conn.tls_offered, conn.encrypted)
    except pymysql.MySQLError as exc:  # a source's lost connection included
        limit = f"the read timeout of {settings.PARTDASH_READ_TIMEOUT} s"
        raise classify(exc, target, conn.tls_offered, limit) from None
    finally:
        if conn.open:
            conn.close()
