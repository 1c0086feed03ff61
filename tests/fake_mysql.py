"""A hostile MySQL server of the tests' own: it greets like a MySQL server (handshake v10),
optionally offers TLS, then asks the client for its password in clear text (an
AuthSwitchRequest for `mysql_clear_password` or MariaDB's `dialog`), or RSA-encrypted
under a public key of its own (`caching_sha2_password` full authentication,
`sha256_password`), and records every byte it receives. It lets nobody in ("access
denied") unless given `accept`: then the client that answers with that password is let
in, and every command it sends after gets an OK.

Each connection is a `Conversation`: `wire` holds the bytes as they crossed the network
(TLS records still encrypted), `payloads` the packets as the server read them.
"""

import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Self

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

CLIENT_SSL = 1 << 11
CAPABILITIES = (
    0x1  # LONG_PASSWORD
    | 0x2  # FOUND_ROWS
    | 0x4  # LONG_FLAG
    | 0x8  # CONNECT_WITH_DB
    | 0x200  # PROTOCOL_41
    | 0x2000  # TRANSACTIONS
    | 0x8000  # SECURE_CONNECTION
    | 1 << 17  # MULTI_RESULTS
    | 1 << 19  # PLUGIN_AUTH
    | 1 << 21  # PLUGIN_AUTH_LENENC_CLIENT_DATA
)
SCRAMBLE = b"0123456789abcdefghij"
UTF8MB4_GENERAL_CI = 45
ER_ACCESS_DENIED = 1045
# What MariaDB's PAM `dialog` plugin asks: flag 4 is "a password question".
DIALOG_PASSWORD_QUESTION = b"\x04Password: "


def greeting(plugin: str, offer_tls: bool) -> bytes:
    capabilities = CAPABILITIES | (CLIENT_SSL if offer_tls else 0)
    return b"".join(
        [
            b"\x0a5.7.99-fake\0",
            struct.pack("<I", 42),  # connection id
            SCRAMBLE[:8],
            b"\0",
            struct.pack("<HBHH", capabilities & 0xFFFF, UTF8MB4_GENERAL_CI, 2, capabilities >> 16),
            bytes([len(SCRAMBLE) + 1]),
            b"\0" * 10,
            SCRAMBLE[8:] + b"\0",
            plugin.encode() + b"\0",
        ]
    )


RSA_PLUGINS = ("caching_sha2_password", "sha256_password")
REQUEST_PUBLIC_KEY = {"caching_sha2_password": b"\x02", "sha256_password": b"\x01"}
PERFORM_FULL_AUTHENTICATION = b"\x01\x04"
OK = b"\x00\x00\x00\x02\x00\x00\x00"  # no rows, no insert id, autocommit on, no warnings
COM_QUIT = b"\x01"


def auth_switch(plugin: str) -> bytes:
    data = DIALOG_PASSWORD_QUESTION if plugin == "dialog" else SCRAMBLE + b"\0"
    return b"\xfe" + plugin.encode() + b"\0" + data


def access_denied() -> bytes:
    return b"\xff" + struct.pack("<H", ER_ACCESS_DENIED) + b"#28000Access denied (fake server)"


@dataclass
class Conversation:
    """Everything one client sent."""

    wire: bytearray = field(default_factory=bytearray)
    payloads: list[bytes] = field(default_factory=list)
    encrypted: bool = False
    switched: bool = False  # the AuthSwitchRequest was sent
    answered: bool = False  # the client answered it
    key_sent: bool = False  # the server's own RSA public key was sent
    decrypted: bytes = b""  # what the client encrypted under that key, decrypted


class Channel:
    """MySQL packets over a socket, with a server-side TLS upgrade on memory BIOs so the
    raw bytes on the wire stay visible."""

    def __init__(self, sock: socket.socket, conversation: Conversation):
        self.sock = sock
        self.conversation = conversation
        self.buffer = bytearray()
        self.tls: ssl.SSLObject | None = None

    def _receive(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.conversation.wire += data
        return data

    def _flush(self) -> None:
        if self.tls and (data := self.outgoing.read()):
            self.sock.sendall(data)

    def start_tls(self, context: ssl.SSLContext) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.incoming.write(bytes(self.buffer))  # a ClientHello read with the SSLRequest
        self.buffer.clear()
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                self.incoming.write(self._receive())
        self._flush()
        self.conversation.encrypted = True

    def _read_exact(self, count: int) -> bytes:
        while len(self.buffer) < count:
            if self.tls is None:
                self.buffer += self._receive()
                continue
            try:
                self.buffer += self.tls.read(65536)
            except ssl.SSLWantReadError:
                self._flush()
                self.incoming.write(self._receive())
            except ssl.SSLZeroReturnError:
                raise EOFError from None
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def read_packet(self) -> tuple[int, bytes]:
        header = self._read_exact(4)
        length = int.from_bytes(header[:3], "little")
        payload = self._read_exact(length)
        self.conversation.payloads.append(payload)
        return header[3], payload

    def write_packet(self, sequence: int, payload: bytes) -> None:
        data = len(payload).to_bytes(3, "little") + bytes([sequence % 256]) + payload
        if self.tls is None:
            self.sock.sendall(data)
        else:
            self.tls.write(data)
            self._flush()


class FakeMySQL:
    """`FakeMySQL(switch_to="mysql_clear_password")` on 127.0.0.1, a free port.

    - `greeting_plugin`: the plugin named in the greeting (the client's first answer);
    - `switch_to`: the plugin of the AuthSwitchRequest sent after it (None: none); for
      `caching_sha2_password` and `sha256_password` it then asks for full authentication
      and hands out the public key of `rsa_key` (its own); with no switch and a
      `caching_sha2_password` greeting, it asks for full authentication after the
      client's first answer;
    - `tls`: a server context to offer TLS with (None: TLS not offered);
    - `silent`: accept connections and never send a byte;
    - `accept`: a password (bytes) the server lets in when the client sends it as is.
    """

    def __init__(
        self,
        switch_to: str | None = "mysql_clear_password",
        greeting_plugin: str = "mysql_native_password",
        tls: ssl.SSLContext | None = None,
        silent: bool = False,
        rsa_key=None,
        accept: bytes | None = None,
    ):
        self.switch_to = switch_to
        self.accept = accept
        self.rsa_key = rsa_key
        self.greeting_plugin = greeting_plugin
        self.tls = tls
        self.silent = silent
        self.conversations: list[Conversation] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self.listener.getsockname()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Self:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.listener.close()
        # Each conversation ends when the client hangs up: closing its socket before would
        # cut the fake's reading short, and what it never read it could not record.
        for thread in self._threads:
            thread.join(timeout=2)
        for sock in self._sockets:
            sock.close()
        for thread in self._threads:
            thread.join(timeout=5)

    @property
    def received(self) -> bytes:
        """Every byte any client sent, as it crossed the network."""
        return b"".join(bytes(c.wire) for c in self.conversations)

    @property
    def payloads(self) -> bytes:
        """Every packet any client sent, as the server read it (decrypted)."""
        return b"".join(p for c in self.conversations for p in c.payloads)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self._sockets.append(sock)
            conversation = Conversation()
            self.conversations.append(conversation)
            thread = threading.Thread(target=self._serve, args=(sock, conversation), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, conversation: Conversation) -> None:
        sock.settimeout(None if self.silent else 10)
        channel = Channel(sock, conversation)
        try:
            if self.silent:
                while channel._receive():
                    pass
            self._converse(channel, conversation)
        except (EOFError, OSError, ssl.SSLError):
            pass
        finally:
            sock.close()

    def _converse(self, channel: Channel, conversation: Conversation) -> None:
        channel.write_packet(0, greeting(self.greeting_plugin, offer_tls=self.tls is not None))
        sequence, answer = channel.read_packet()
        is_ssl_request = len(answer) == 32 and struct.unpack("<I", answer[:4])[0] & CLIENT_SSL
        if is_ssl_request and self.tls is not None:
            channel.start_tls(self.tls)
            sequence, answer = channel.read_packet()
        plugin = self.switch_to
        if self.switch_to:
            channel.write_packet(sequence + 1, auth_switch(self.switch_to))
            conversation.switched = True
            sequence, answer = channel.read_packet()
            conversation.answered = True
        elif self.greeting_plugin == "caching_sha2_password":
            plugin = self.greeting_plugin
        if plugin in RSA_PLUGINS:
            sequence, answer = self._full_authentication(
                channel, conversation, plugin, sequence, answer
            )
        # The password as is: alone, or within the handshake response (sha256_password).
        if self.accept is not None and self.accept + b"\0" in answer:
            self._let_in(channel, sequence)
            return
        channel.write_packet(sequence + 1, access_denied())

    def _let_in(self, channel: Channel, sequence: int) -> None:
        """OK to the password, then to every command until the client hangs up."""
        channel.write_packet(sequence + 1, OK)
        while True:
            _, command = channel.read_packet()
            if command[:1] == COM_QUIT:
                return
            channel.write_packet(1, OK)

    def _full_authentication(
        self, channel, conversation, plugin: str, sequence: int, answer: bytes
    ) -> tuple[int, bytes]:
        """Ask for the password under our own public key; decrypt whatever comes. Returns
        the client's last answer (over TLS, the password itself)."""
        if plugin == "caching_sha2_password":  # the answer was the fast-path scramble
            channel.write_packet(sequence + 1, PERFORM_FULL_AUTHENTICATION)
            sequence, answer = channel.read_packet()
        if answer != REQUEST_PUBLIC_KEY[plugin]:
            return sequence, answer
        public = self.rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        channel.write_packet(sequence + 1, b"\x01" + public)
        conversation.key_sent = True
        sequence, answer = channel.read_packet()
        oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
        salted = self.rsa_key.decrypt(answer, oaep)
        conversation.decrypted = bytes(
            b ^ SCRAMBLE[i % len(SCRAMBLE)] for i, b in enumerate(salted)
        )
        return sequence, answer


def server_tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


# -- a server that lets partdash in and claims as many partitions as it is told ----------

COM_QUIT, COM_QUERY = 0x01, 0x03
LONGLONG, VAR_STRING = 8, 253
OK_PACKET = b"\x00\x00\x00\x02\x00\x00\x00"  # autocommit on
EOF_PACKET = b"\xfe\x00\x00\x02\x00"
ROWS_PER_WRITE = 2000


def lenenc(data: bytes) -> bytes:
    length = len(data)
    if length < 251:
        return bytes([length]) + data
    if length < 1 << 16:
        return b"\xfc" + length.to_bytes(2, "little") + data
    if length < 1 << 24:
        return b"\xfd" + length.to_bytes(3, "little") + data
    return b"\xfe" + length.to_bytes(8, "little") + data


def column_definition(name: str, kind: int) -> bytes:
    charset = 63 if kind == LONGLONG else UTF8MB4_GENERAL_CI
    return b"".join(
        [
            *(lenenc(text) for text in (b"def", b"", b"", b"", name.encode(), name.encode())),
            b"\x0c",
            struct.pack("<HIBHB", charset, 1024, kind, 0, 0),
            b"\0\0",
        ]
    )


def top_level_columns(select_list: str) -> list[str]:
    """`a, f(b, c), d` -> [`a`, `f(b, c)`, `d`]."""
    columns, depth, start = [], 0, 0
    for index, char in enumerate(select_list):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            columns.append(select_list[start:index].strip())
            start = index + 1
    return [*columns, select_list[start:].strip()]


def partition_cell(column: str, index: int, name_length: int) -> str | int:
    """What a partition's row holds in `column`: names for the name columns (padded with
    `x` to `name_length` characters where asked), a number elsewhere."""
    table = "t" + "x" * max(0, name_length - 1)
    partition = f"p{index}".ljust(name_length, "x")
    lowered = column.lower()
    if "database_name" in lowered:
        return "hostile"
    if "table_name" in lowered:
        return f"{table}#P#{partition}"
    if "file_name" in lowered:
        return f"./hostile/{table}#P#{partition}.ibd"
    if "row_format" in lowered:
        return "Dynamic"
    if lowered == "name":
        return f"hostile/{table}#P#{partition}"
    if lowered == "page_size":
        return 16384
    return index


class FakePartitionServer(FakeMySQL):
    """A server that lets anyone in and answers partdash's queries: every source that
    lists partitions (its SQL says `#P#`) lists `partitions` of them, streamed as they
    are generated (a million cost a few seconds and no memory); `version` is what
    VERSION() says; `name_length` pads table and partition names to that length.
    `sent` counts the partition rows it managed to send, per query."""

    def __init__(self, partitions: int, version: str = "10.11.99-MariaDB-fake", name_length=0):
        super().__init__(switch_to=None)
        self.partitions, self.version, self.name_length = partitions, version, name_length
        self.method = "HASH"
        self.queries: list[str] = []
        self.sent: list[int] = []
        self.variables = {
            "innodb_file_per_table": "ON",
            "innodb_stats_persistent": "ON",
            "innodb_page_size": "16384",
            "performance_schema": "OFF",
            "table_definition_cache": "400",
        }

    def _converse(self, channel: Channel, conversation: Conversation) -> None:
        channel.write_packet(0, greeting("mysql_native_password", offer_tls=False))
        sequence, _ = channel.read_packet()
        channel.write_packet(sequence + 1, OK_PACKET)
        while True:
            _, command = channel.read_packet()
            if command[:1] == bytes([COM_QUIT]):
                return
            if command[:1] != bytes([COM_QUERY]):
                channel.write_packet(1, OK_PACKET)
                continue
            query = command[1:].decode("utf-8", "replace")
            self.queries.append(query)
            self._answer(channel, query)

    def _answer(self, channel: Channel, query: str) -> None:
        upper = query.upper()
        if upper.startswith("SET "):
            channel.write_packet(1, OK_PACKET)
        elif upper == "SELECT VERSION()":
            self._result(channel, [("VERSION()", VAR_STRING)], [(self.version,)])
        elif upper.startswith("SHOW GLOBAL VARIABLES"):
            rows = list(self.variables.items())
            self._result(channel, [("Variable_name", VAR_STRING), ("Value", VAR_STRING)], rows)
        elif upper.startswith("SHOW GLOBAL STATUS"):
            self._result(channel, [("Variable_name", VAR_STRING), ("Value", VAR_STRING)], [])
        elif upper.startswith("SELECT UNIX_TIMESTAMP(), CURRENT_USER()"):
            columns = [("clock", LONGLONG), ("user", VAR_STRING)]
            self._result(channel, columns, [(int(time.time()), "partdash@%")])
        elif upper.startswith("SELECT COUNT(*)"):
            self._result(channel, [("COUNT(*)", LONGLONG)], [(self.partitions,)])
        elif "GROUP_CONCAT" in upper:  # bucket aggregates: none, so every row is read
            columns = [("text", VAR_STRING), ("buckets", LONGLONG), ("limit", LONGLONG)]
            self._result(channel, columns, [("", 0, 1 << 20)])
        elif "#P#" in upper:
            self._partitions(channel, query)
        elif "FROM INFORMATION_SCHEMA.PARTITIONS" in upper and "PARTITION_METHOD" in upper:
            self._definitions(channel)
        else:
            self._result(channel, [("value", VAR_STRING)], [])

    def _result(self, channel: Channel, columns: list, rows) -> int:
        """A text-protocol result set; `rows` may be a generator. Returns the rows sent."""
        sequence = 1
        channel.write_packet(sequence, bytes([len(columns)]))
        for name, kind in columns:
            sequence += 1
            channel.write_packet(sequence, column_definition(name, kind))
        sequence += 1
        channel.write_packet(sequence, EOF_PACKET)
        sent, batch = 0, bytearray()
        for row in rows:
            sequence += 1
            payload = b"".join(
                b"\xfb" if value is None else lenenc(str(value).encode()) for value in row
            )
            batch += len(payload).to_bytes(3, "little") + bytes([sequence % 256]) + payload
            sent += 1
            if sent % ROWS_PER_WRITE == 0:
                channel.sock.sendall(batch)
                batch.clear()
        sequence += 1
        channel.sock.sendall(batch)
        channel.write_packet(sequence, EOF_PACKET)
        return sent

    def _partitions(self, channel: Channel, query: str) -> None:
        select_list = query[len("SELECT ") : query.upper().index(" FROM ")]
        columns = top_level_columns(select_list)
        kinds = [
            VAR_STRING if isinstance(partition_cell(c, 0, 0), str) else LONGLONG for c in columns
        ]
        length = self.name_length
        rows = (
            tuple(partition_cell(column, index, length) for column in columns)
            for index in range(self.partitions)
        )
        self.sent.append(0)
        counted = self._counting(rows)
        self._result(channel, list(zip(columns, kinds, strict=True)), counted)

    def _definitions(self, channel: Channel) -> None:
        """The one table's partitions, HASH-partitioned (`method`) on `id`."""
        text = ("PARTITION_NAME", "SUBPARTITION_NAME", "METHOD", "SUBMETHOD", "EXPRESSION")
        columns = [(name, VAR_STRING) for name in text[:2]]
        columns += [("ORDINAL", LONGLONG), ("SUBORDINAL", LONGLONG)]
        columns += [(name, VAR_STRING) for name in (*text[2:], "SUBEXPRESSION", "DESCRIPTION")]
        rows = [
            (f"p{index}".ljust(self.name_length, "x"), None, index + 1, None, self.method)
            + (None, "id", None, None)
            for index in range(self.partitions)
        ]
        self._result(channel, columns, rows)

    def _counting(self, rows):
        for row in rows:
            self.sent[-1] += 1
            yield row


class FakeGarbage(FakeMySQL):
    """Greets with `garbage` (random bytes, another protocol's banner) instead of a MySQL
    handshake, then reads whatever comes until the client goes."""

    def __init__(self, garbage: bytes):
        super().__init__(switch_to=None)
        self.garbage = garbage

    def _converse(self, channel: Channel, conversation: Conversation) -> None:
        channel.sock.sendall(self.garbage)
        while channel._receive():
            pass


class FakeDrip(FakeMySQL):
    """Sends a greeting one byte every `interval` seconds: each byte arrives well within
    any socket timeout, so only an overall deadline ends the client's wait."""

    def __init__(self, interval: float):
        super().__init__(switch_to=None)
        self.interval = interval
        self.closing = threading.Event()  # its wait between bytes ends with the fake

    def __exit__(self, *exc_info) -> None:
        self.closing.set()
        super().__exit__(*exc_info)

    def _converse(self, channel: Channel, conversation: Conversation) -> None:
        payload = b"\x0a5.5.5-10.11.0-MariaDB" + b"\0" * 60
        for byte in len(payload).to_bytes(3, "little") + b"\0" + payload:
            channel.sock.sendall(bytes([byte]))
            if self.closing.wait(self.interval):
                return
