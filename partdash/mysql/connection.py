"""Opening a safe, read-only session on a monitored server.

Every failure becomes a `ConnectionFailure` with a one-line reason a user can act on
(DNS, refused, timeout, access denied, TLS), never a stack trace. The password is
passed to PyMySQL only and never appears in a message; it is never sent in clear text
over an unencrypted connection, nor over TLS whose certificate partdash has not verified
(see `GuardedConnection`).
"""

import errno
import hashlib
import logging
import os
import re
import socket
import ssl
import struct
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from stat import S_ISREG
from typing import TYPE_CHECKING, cast

import pymysql
from django.conf import settings
from pymysql.constants import CLIENT

from partdash.lib.addresses import AddressPolicy, parse_networks
from partdash.mysql.choices import Flavor, TlsMode

if TYPE_CHECKING:
    from typing_extensions import Buffer  # (collections.abc's from Python 3.12)

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
FINGERPRINT_PREFIX = "SHA256:"
FINGERPRINT_LENGTH = len(FINGERPRINT_PREFIX) + 64


def fingerprint_of(certificate: bytes) -> str:
    """`SHA256:` and the hex SHA-256 of a DER certificate, as `openssl x509 -fingerprint
    -sha256` prints it without the colons."""
    return FINGERPRINT_PREFIX + hashlib.sha256(certificate).hexdigest()


def parse_fingerprint(text: str) -> str:
    """`text` as a stored fingerprint (`SHA256:` + 64 lower-case hex digits; "" stays "").
    Takes the `SHA256:` prefix or none, any case, and OpenSSL's colons; ValueError else."""
    digits = text.strip()
    if digits[: len(FINGERPRINT_PREFIX)].upper() == FINGERPRINT_PREFIX:
        digits = digits[len(FINGERPRINT_PREFIX) :]
    digits = digits.replace(":", "").lower()
    if not digits and not text.strip():
        return ""
    if not re.fullmatch(r"[0-9a-f]{64}", digits):
        raise ValueError("a certificate fingerprint is SHA256: followed by 64 hex digits")
    return FINGERPRINT_PREFIX + digits


@dataclass(frozen=True)
class Target:
    """Where and how to connect; built from a Server or a DSN."""

    host: str
    port: int
    user: str
    password: str = ""
    tls_mode: str = cast(str, TlsMode.PREFERRED)  # (a str: mypy sees the choice's tuple)
    ssl_ca: str = ""
    # The certificate an operator approved (`fingerprint_of`): over TLS that a CA did not
    # verify, the password itself goes only to a server presenting this one.
    approved_fingerprint: str = ""
    name: str = ""  # the server's, for messages; "" for a DSN

    def __repr__(self) -> str:  # never show the password
        return f"Target({self.user}@{self.host}:{self.port})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def label(self) -> str:
        """The server as a message names it: `db1 (10.0.0.5:3306)`, or the address."""
        return f"{self.name} ({self.address})" if self.name else self.address


class ConnectionFailure(Exception):
    """A monitored server could not be reached or refused us. `kind` is one of
    dns, refused, timeout, unreachable, lost, access_denied, too_many_connections, tls,
    forbidden (PARTDASH_CONNECT_ALLOW/DENY refuse the address), protocol (what answered
    is not a MySQL server), error.
    `tls_offered` is what the server's greeting said about TLS, None if none arrived."""

    def __init__(
        self, kind: str, message: str, tls_offered: bool | None = None, tls_fingerprint: str = ""
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.tls_offered = tls_offered
        self.tls_fingerprint = tls_fingerprint


class PasswordRefused(pymysql.err.OperationalError):
    """partdash would not send the password where the server asked for it."""


class ClearTextRefused(PasswordRefused):
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


class CertificateNotApproved(PasswordRefused):
    """The server asked for the password itself (clear text, or caching_sha2_password /
    sha256_password full authentication, which send it as is inside TLS) over TLS whose
    certificate neither a CA nor an operator's approval vouches for: a man in the middle
    with a certificate of its own would read it. `fingerprint` is the one to approve."""

    def __init__(self, plugin: str, fingerprint: str):
        super().__init__(f"{plugin} over TLS with an unverified certificate {fingerprint}")
        self.plugin, self.fingerprint = plugin, fingerprint


class _GuardedPassword(bytes):
    """The password as PyMySQL holds it (`Connection.password`). PyMySQL builds every
    message that carries the password itself, in clear or RSA-encrypted, as
    `password + b"\\0"` (mysql_clear_password, dialog, sha256_password, caching_sha2_password
    full authentication), while the scrambles (mysql_native_password, the caching_sha2 fast
    path, ed25519) only hash it: so concatenating it asks `before_sending` first, whatever
    path PyMySQL took to get there. tests/servers/test_certificate_approval.py drives each
    path against a fake server and fails should a PyMySQL version build it otherwise.

    It holds the connection's check weakly: the connection holds it, and a cycle between
    them would keep the connection, and the last result it read (a first poll's: 32,000
    rows), until the cyclic collector runs. With the connection gone it sends nothing."""

    _check: "weakref.WeakMethod[Callable[[], None]]"

    def __new__(cls, password: bytes, before_sending: Callable[[], None]) -> "_GuardedPassword":
        guarded = super().__new__(cls, password)
        guarded._check = weakref.WeakMethod(before_sending)
        return guarded

    def before_sending(self) -> None:
        check = self._check()
        if check is None:  # (the connection is gone: nothing is sent on it)
            raise ClearTextRefused(b"a password for a closed connection")
        check()

    def __add__(self, other: "Buffer") -> bytes:
        if self:
            self.before_sending()
        return bytes(self) + other

    def __radd__(self, other: bytes) -> bytes:
        if self:
            self.before_sending()
        return other + bytes(self)


class TooManyRows(pymysql.err.OperationalError):
    """A result set longer than PARTDASH_MAX_ROWS_PER_SOURCE. Reading stopped there and
    the connection was closed (nothing else stops a server sending the rest), so every
    later query on it fails the same way, as a `repeat`."""

    def __init__(self, cap: int, repeat: bool = False):
        super().__init__(
            f"the server sent more than {cap:,} rows (PARTDASH_MAX_ROWS_PER_SOURCE); "
            "partdash stopped reading and closed the session"
        )
        self.cap, self.repeat = cap, repeat

    def again(self) -> "TooManyRows":
        """The same failure, for a later query on the closed connection."""
        return type(self)(self.cap, repeat=True)


class TooManyBytes(TooManyRows):
    """One result larger than PARTDASH_MAX_BYTES_PER_SOURCE (a few rows can be huge: a
    hostile server may send one 1 GB row, which PyMySQL would assemble whole). Reading
    stops before the bytes past the cap are read, and the connection is closed."""

    def __init__(self, cap: int, repeat: bool = False):
        pymysql.err.OperationalError.__init__(
            self,
            f"the server sent more than {cap / 2**20:,.0f} MiB for one query "
            "(PARTDASH_MAX_BYTES_PER_SOURCE); partdash stopped reading and closed the session",
        )
        self.cap, self.repeat = cap, repeat


class DeadlinePassed(pymysql.err.OperationalError):
    """The connection's overall deadline passed (`GuardedConnection.deadline`): the socket
    was shut down under whatever was reading it."""

    def __init__(self, seconds: float):
        super().__init__(CR_SERVER_LOST, f"no complete answer within {seconds:g} s")
        self.seconds = seconds


CR_MALFORMED_PACKET = 2027
# What PyMySQL's parsing raises on bytes that are not the MySQL protocol (measured on 300
# random greetings). Only these are `NotMySQL`: a timeout, a task's time limit or any
# other exception on the way is what it is (a black hole is a timeout, not garbage).
UNREADABLE = (
    ValueError,
    UnicodeDecodeError,
    struct.error,
    IndexError,
    KeyError,
    TypeError,
    AttributeError,
    NameError,
)
HANDSHAKE_V10 = 10  # every MySQL and MariaDB since 3.21


class NotMySQL(pymysql.err.OperationalError):
    """What answered is not a MySQL server, or sent a packet that cannot be read (random
    bytes, another protocol). PyMySQL would raise whichever exception its parsing met
    (ValueError, UnicodeDecodeError, struct.error...), a traceback where a line is due.
    The connection is closed: a client error, so a source read ends the poll."""

    def __init__(self, what: str):
        super().__init__(CR_MALFORMED_PACKET, what)


class CappedResult(pymysql.connections.MySQLResult):
    """PyMySQL's buffered result, read up to the connection's `max_rows` rows. (Rather
    than an unbuffered cursor's `fetchmany`: 15-30% slower over 64,000 tablespace rows,
    measured, for the same bound.)"""

    connection: "GuardedConnection | None"  # PyMySQL's; None once the result is read

    def _read_rowdata_packet(self) -> None:
        connection = cast(GuardedConnection, self.connection)  # (set while reading)
        cap = connection.max_rows
        rows: list[tuple] = []
        while True:
            packet = connection._read_packet()
            if self._check_packet_is_eof(packet):
                self.connection = None  # (as PyMySQL's: no cyclic reference)
                break
            if len(rows) >= cap:
                connection.stop_reading(TooManyRows(cap))
            rows.append(self._read_row_from_packet(packet))
        self.affected_rows = len(rows)
        self.rows = tuple(rows)


class GuardedConnection(pymysql.connections.Connection):
    """PyMySQL's connection with seven changes, each keeping a credential or a worker safe:

    - it never answers a clear-text authentication request (`CLEAR_TEXT_PLUGINS`, in the
      greeting or in an auth switch) unless the connection is encrypted: PyMySQL would
      send the stored password to whoever listens at the address; nor does it encrypt the
      password under a public key the server sent over plain TCP (`OwnKeyRefused`);
    - over TLS it sends the password itself (clear text, or caching_sha2_password and
      sha256_password full authentication, which send it as is inside TLS) only when the
      certificate is verified, by a CA (`verify_ca`, `verify_identity`) or by the
      operator's approval of its fingerprint (`approved_fingerprint`); else
      `CertificateNotApproved`. Scrambles, which never carry the password, go anywhere;
    - with `tls_required=False` (the `preferred` mode) it decides from the greeting's
      CLIENT.SSL flag whether to start TLS, within this one connection (PyMySQL does that
      only when given no TLS context, and we pass our own, cached one);
    - the greeting, the TLS handshake and the authentication wait at most the connect
      timeout; the read and write timeouts apply from the first query on;
    - a result set longer than `max_rows` rows or `max_bytes` bytes is not read on
      (`CappedResult`, `_read_bytes`): a server claiming a million partitions, or sending
      one 1 GB row, would otherwise fill a worker child's memory;
    - with a `deadline` (seconds), the whole connection, from the TCP connect to the last
      query, ends then: a server that sends its greeting a byte every 3 s resets every
      socket timeout and would hold a web thread for ever (Test connection);
    - a greeting, handshake or result its parser cannot read is a `NotMySQL`, one line,
      not whichever exception PyMySQL met (random bytes, another protocol's banner).
    """

    # PyMySQL's (untyped), as this class sets them.
    password: bytes
    _read_timeout: float | None
    _write_timeout: float | None

    def __init__(
        self,
        *,
        tls_required: bool,
        addresses: tuple = (),
        approved_fingerprint: str = "",
        max_rows: int = 0,
        max_bytes: int = 0,
        deadline: float | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs, defer_connect=True)
        self.max_rows = max_rows or settings.PARTDASH_MAX_ROWS_PER_SOURCE
        self.max_bytes = max_bytes or settings.PARTDASH_MAX_BYTES_PER_SOURCE
        self._bytes_left = self.max_bytes  # of the greeting and login, then of each result
        # The failure that closed the connection mid-result (`TooManyRows`), else None.
        self.capped: TooManyRows | None = None
        self.deadline = deadline
        self.expired = False
        self._watchdog: threading.Timer | None = None
        if self.ssl and not tls_required:
            self._ssl_required = False
            self.client_flag &= ~CLIENT.SSL  # asked for only where the server offers it
        # The resolved addresses the connect policy admitted, (family, sockaddr) each: the
        # connection goes to one of them, not to whatever a second lookup would answer.
        self._admitted = addresses
        self.password = _GuardedPassword(self.password, self._before_sending_password)
        self.approved_fingerprint = approved_fingerprint
        self.tls_fingerprint = ""  # the server's certificate, once TLS is up
        self._asking_plugin = ""

    @property
    def certificate_verified(self) -> bool:
        """Whether a CA verified the certificate in the handshake (the verifying modes;
        `preferred` accepts any)."""
        return bool(self._secure) and self.ctx.verify_mode == ssl.CERT_REQUIRED

    def _peer_fingerprint(self) -> str:
        if isinstance(self._sock, ssl.SSLSocket) and not self.tls_fingerprint:
            try:
                certificate = self._sock.getpeercert(binary_form=True)
            except (OSError, ValueError):  # never mask the failure under way
                certificate = None
            self.tls_fingerprint = fingerprint_of(certificate) if certificate else ""
        return self.tls_fingerprint

    def _before_sending_password(self) -> None:
        """Called as PyMySQL is about to send the password itself (`_GuardedPassword`)."""
        if not self._secure:
            raise ClearTextRefused(self._asking_plugin.encode())
        fingerprint = self._peer_fingerprint()
        if self.certificate_verified or (fingerprint and fingerprint == self.approved_fingerprint):
            return
        raise CertificateNotApproved(self._asking_plugin, fingerprint)

    @property
    def tls_offered(self) -> bool | None:
        """Whether the server's greeting offered TLS; None before a greeting arrived."""
        capabilities = getattr(self, "server_capabilities", None)
        return None if capabilities is None else bool(capabilities & CLIENT.SSL)

    @property
    def encrypted(self) -> bool:
        return bool(self._secure)

    def connect(self, sock=None) -> None:
        if self.deadline is not None and self._watchdog is None:
            # (a weak reference: the timer holding the connection, which holds the timer,
            # would leave both to the cyclic collector after every poll)
            self._watchdog = threading.Timer(self.deadline, _expire, (weakref.ref(self),))
            self._watchdog.daemon = True
            self._watchdog.start()
        query_timeouts = self._read_timeout, self._write_timeout
        self._read_timeout = self._write_timeout = self.connect_timeout
        try:
            if sock is None and self._admitted:
                sock = self._open_admitted()
            super().connect(sock)
        except pymysql.MySQLError:
            raise
        except UNREADABLE:  # a garbled handshake, past the greeting's checks
            self._force_close()
            raise NotMySQL("its handshake cannot be read") from None
        finally:
            self._read_timeout, self._write_timeout = query_timeouts

    def _expire(self) -> None:
        """The deadline passed (the watchdog's thread): shut the socket down, which ends
        whatever read or write is blocked on it at once, TLS included (the plain socket's
        shutdown: the TLS object stays the reading thread's)."""
        self.expired = True
        sock = self._sock
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:  # not connected yet, or closed already
                pass

    def disarm(self) -> None:
        """Stop the deadline's watchdog (the session is over)."""
        if self._watchdog is not None:
            self._watchdog.cancel()

    def _read_bytes(self, num_bytes: int) -> bytes:
        """PyMySQL's, refusing to read past the result's byte cap or the deadline."""
        if self.expired:
            self._force_close()
            assert self.deadline is not None  # expired: the deadline's watchdog ran
            raise DeadlinePassed(self.deadline)
        if num_bytes > self._bytes_left:  # the greeting and authentication count too
            self.stop_reading(TooManyBytes(self.max_bytes))
        self._bytes_left -= num_bytes
        try:
            return super()._read_bytes(num_bytes)
        except pymysql.err.OperationalError:
            if self.expired:
                assert self.deadline is not None  # (as above)
                raise DeadlinePassed(self.deadline) from None
            raise

    def _open_admitted(self) -> socket.socket:
        """A TCP connection to the first admitted address that answers (as PyMySQL's own
        `socket.create_connection` would try each), failing as PyMySQL fails."""
        failure: OSError | None = None
        for family, sockaddr in self._admitted:
            if self.expired:
                assert self.deadline is not None  # (as above)
                raise DeadlinePassed(self.deadline)
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(self.connect_timeout)
            try:
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                failure = exc
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            return sock
        error = pymysql.err.OperationalError(
            CR_CONN_HOST_ERROR, f"Can't connect to MySQL server on {self.host!r} ({failure})"
        )
        error.original_exception = failure
        raise error

    def _get_server_information(self) -> None:
        """PyMySQL's, refusing a greeting that is not MySQL's before anything is sent."""
        try:
            super()._get_server_information()
        except pymysql.err.InternalError:  # "Packet sequence number wrong"
            raise NotMySQL("its greeting is not a MySQL handshake") from None
        except pymysql.MySQLError:  # an error packet: too many connections, host blocked
            raise
        except UNREADABLE:
            raise NotMySQL("its greeting is not a MySQL handshake") from None
        if self.protocol_version != HANDSHAKE_V10:
            version = self.protocol_version
            raise NotMySQL(f"its greeting is not a MySQL handshake (protocol {version})")

    def _read_query_result(self, unbuffered: bool = False) -> int:
        """PyMySQL's, with a `CappedResult` (unbuffered results are not used)."""
        if unbuffered:
            return super()._read_query_result(unbuffered)
        self._result = None
        result = CappedResult(self)
        self._bytes_left = self.max_bytes
        try:
            result.read()
        except pymysql.MySQLError:
            raise
        except UNREADABLE:  # a garbled result set: the session cannot go on
            self._force_close()
            raise NotMySQL("it sent a malformed result") from None
        self._result = result
        if result.server_status is not None:
            self.server_status = result.server_status
        return result.affected_rows

    def stop_reading(self, failure: TooManyRows) -> None:
        """Close the connection mid-result and raise `failure`."""
        self.capped = failure
        self._force_close()
        raise failure

    def _request_authentication(self) -> None:
        self._asking_plugin = self._auth_plugin_name
        plugin = self._auth_plugin_name.encode("ascii", "replace")
        starts_tls = self.ssl and self.tls_offered
        # Where TLS is required but not offered, PyMySQL refuses first, saying so.
        if plugin in CLEAR_TEXT_PLUGINS and not starts_tls and not self._ssl_required:
            raise ClearTextRefused(plugin)
        try:
            super()._request_authentication()
        finally:  # the certificate, for Test connection, even when authentication failed
            self._peer_fingerprint()

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
        self._asking_plugin = plugin_name.decode("ascii", "replace")
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
    tls_fingerprint: str = ""  # the server's certificate (`fingerprint_of`), "" without TLS
    certificate_verified: bool = False  # by a CA in the handshake

    @property
    def capped(self) -> bool:
        """Whether a result set went over PARTDASH_MAX_ROWS_PER_SOURCE (or _BYTES_): the
        connection is closed, and nothing more is read this poll."""
        return bool(getattr(self.conn, "capped", None))

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        """Every row of a query, at most PARTDASH_MAX_ROWS_PER_SOURCE rows and
        PARTDASH_MAX_BYTES_PER_SOURCE bytes (`TooManyRows`, `TooManyBytes`)."""
        if self.capped:
            raise self.conn.capped.again()
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
        approved_fingerprint=server.tls_approved_fingerprint,
        name=server.name,
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


def _ca_file_failure(where: str, path: str, reason: str | None) -> ConnectionFailure:
    """The poll's one line for a CA file that cannot serve, the same whatever `reason`
    (see CA_FILE_UNUSABLE), which is logged."""
    logger.warning("CA file %s unusable: %s", path, reason)
    return ConnectionFailure("tls", f"{where}: {CA_FILE_UNUSABLE}")


def _resolve(target: Target) -> list[tuple]:
    """The host's addresses, (family, sockaddr) each, in the resolver's order."""
    try:
        found = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConnectionFailure(
            "dns", f"cannot resolve host {target.host!r}: {exc.strerror}"
        ) from None
    return [(family, sockaddr) for family, _, _, _, sockaddr in found]


@lru_cache(maxsize=4)
def _policy(allow: tuple[str, ...], deny: tuple[str, ...]) -> AddressPolicy:
    return AddressPolicy(
        parse_networks(allow, "PARTDASH_CONNECT_ALLOW"),
        parse_networks(deny, "PARTDASH_CONNECT_DENY"),
    )


def connect_policy() -> AddressPolicy:
    """PARTDASH_CONNECT_ALLOW and PARTDASH_CONNECT_DENY, as networks."""
    return _policy(tuple(settings.PARTDASH_CONNECT_ALLOW), tuple(settings.PARTDASH_CONNECT_DENY))


def admitted(target: Target, addresses: list[tuple]) -> tuple:
    """The addresses the connect policy lets partdash connect to; none of them: a
    ConnectionFailure (kind `forbidden`) naming the address and the setting, before
    any packet is sent. Without a policy: () (PyMySQL resolves and connects itself)."""
    policy = connect_policy()
    if not policy.active:
        return ()
    refusals = [(sockaddr[0], policy.refusal(sockaddr[0])) for _, sockaddr in addresses]
    allowed = tuple(a for a, (_, why) in zip(addresses, refusals, strict=True) if why is None)
    if not allowed:
        address, why = refusals[0]
        named = "" if address == target.host else f" ({target.host} resolves to {address})"
        raise ConnectionFailure("forbidden", f"not connecting to {target.address}{named}: {why}")
    return allowed


def _kind_and_message(exc: Exception, target: Target, limit: str) -> tuple[str, str]:
    where = target.address
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc.args[0] if exc.args else exc)
    cause = getattr(exc, "original_exception", None) or exc.__cause__ or exc.__context__
    if isinstance(exc, CertificateNotApproved):
        return "tls", _not_approved_message(exc, target)
    if isinstance(exc, ClearTextRefused):
        return "tls", text
    if isinstance(exc, NotMySQL):
        return "protocol", f"{where} does not speak MySQL: {text}"
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


def _not_approved_message(exc: CertificateNotApproved, target: Target) -> str:
    """One line naming the server, the mode and the fingerprint to approve."""
    approved = target.approved_fingerprint
    was = f"; the approved one is {approved}" if approved else ""
    return (
        f"refused to send the password to {target.label} for {exc.plugin}: its TLS "
        f"certificate {exc.fingerprint} is not verified (tls_mode {target.tls_mode}{was}); "
        "approve that fingerprint if it is the server's, or verify it with a CA (verify_ca)"
    )


def classify(
    exc: Exception,
    target: Target,
    tls_offered: bool | None = None,
    limit: str = "",
    tls_fingerprint: str = "",
) -> ConnectionFailure:
    """Turn a PyMySQL/socket exception into a one-line, user-facing failure. `limit` names
    the timeout that applied ("the read timeout of 30 s"), for a timeout's message."""
    kind, message = _kind_and_message(exc, target, limit)
    return ConnectionFailure(kind, " ".join(message.split()), tls_offered, tls_fingerprint)


GROUP_CONCAT_MAX_LEN = 64 * 1024 * 1024


def _session_settings(flavor: str) -> list[str]:
    """Caps that keep a poll from ever hurting the monitored server."""
    statement = settings.PARTDASH_STATEMENT_TIMEOUT
    caps = [
        f"SET SESSION lock_wait_timeout = {int(settings.PARTDASH_LOCK_WAIT_TIMEOUT)}",
        "SET SESSION TRANSACTION READ ONLY",
        "SET SESSION time_zone = '+00:00'",  # TIMESTAMP columns arrive in UTC
        # The bucket aggregates of a large server arrive as one string (MySQL's default
        # 1 KB would cut it; mysql.incremental reads row by row if it is cut).
        f"SET SESSION group_concat_max_len = {GROUP_CONCAT_MAX_LEN}",
    ]
    if flavor == Flavor.MARIADB:
        caps.append(f"SET SESSION max_statement_time = {float(statement)}")
    else:
        caps.append(f"SET SESSION max_execution_time = {int(statement * 1000)}")
    return caps


def _expire(connection: "weakref.ref[GuardedConnection]") -> None:
    """The deadline's watchdog: end the connection if it still exists."""
    conn = connection()
    if conn is not None:
        conn._expire()


def flavor_of(version: str) -> str:
    return cast(str, Flavor.MARIADB if "mariadb" in version.lower() else Flavor.MYSQL)


def _past_deadline(conn: GuardedConnection, target: Target, said: str = "") -> ConnectionFailure:
    """The one line for a session its deadline ended: the server's name and address, and
    the limit as the caller names it (`said`: "the poll's time limit of 54 s"), else the
    deadline's seconds."""
    said = said or f"the deadline of {conn.deadline:g} s"
    return ConnectionFailure(
        "timeout",
        f"timed out talking to {target.label}: no complete answer within {said}",
        conn.tls_offered,
        conn.tls_fingerprint,
    )


def connect(
    target: Target, deadline: float | None = None, deadline_said: str = ""
) -> GuardedConnection:
    """One connection, TLS as `target.tls_mode` says (for `preferred`: where the server's
    greeting offers it), with the connect timeout on the handshake and the read timeout
    on queries, and, with `deadline` (seconds), ended then whatever it is doing (the
    caller disarms it: `GuardedConnection.disarm`); `deadline_said` names that limit in
    the failure's message. No second, throw-away connection is ever made: each would
    count as an aborted connect on the server, and enough of them get partdash's host
    blocked (max_connect_errors)."""
    addresses = admitted(target, _resolve(target))
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
        addresses=addresses,
        approved_fingerprint=target.approved_fingerprint,
        deadline=deadline,
        charset="utf8mb4",
        autocommit=True,
        program_name="partdash",
    )
    try:
        conn.connect()
    except pymysql.MySQLError as exc:
        conn.disarm()
        if conn.expired:
            raise _past_deadline(conn, target, deadline_said) from None
        limit = f"the connect timeout of {settings.PARTDASH_CONNECT_TIMEOUT} s"
        raise classify(exc, target, conn.tls_offered, limit, conn.tls_fingerprint) from None
    except BaseException:
        conn.disarm()
        raise
    if target.tls_mode in VERIFYING_MODES and not conn.encrypted:  # PyMySQL refuses first
        conn.close()
        raise ConnectionFailure(
            "tls", f"{target.address} does not offer TLS but {target.tls_mode} is set", False
        )
    return conn


@contextmanager
def open_session(
    target: Target, deadline: float | None = None, deadline_said: str = ""
) -> Iterator[Session]:
    """Connect with timeouts, a statement cap and a read-only session; with `deadline`
    (seconds), the session ends then, wherever it is (`connect`): a poll's, at its time
    limit, from the TCP connect to the last row."""
    conn = connect(target, deadline, deadline_said)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT VERSION()")  # the handshake's may carry a 5.5.5- prefix
            version = cursor.fetchone()[0]
            flavor = flavor_of(version)
            for statement in _session_settings(flavor):
                cursor.execute(statement)
        yield Session(
            conn,
            flavor,
            version,
            conn.tls_offered,
            conn.encrypted,
            conn.tls_fingerprint,
            conn.certificate_verified,
        )
    except pymysql.MySQLError as exc:  # a source's lost connection included
        if conn.expired:
            raise _past_deadline(conn, target, deadline_said) from None
        limit = f"the read timeout of {settings.PARTDASH_READ_TIMEOUT} s"
        raise classify(exc, target, conn.tls_offered, limit, conn.tls_fingerprint) from None
    finally:
        conn.disarm()
        if conn.open:
            conn.close()
