"""A local HTTP receiver for alert channels: partdash's JSON webhook posts to it directly,
and Apprise's Slack, Teams, Discord, Telegram, PagerDuty, Opsgenie and ntfy plugins reach
it as their services' hosts through it as an HTTPS proxy (CONNECT), which answers TLS
with a certificate for those hosts signed by a CA made here: the sender's process trusts
that CA (`REQUESTS_CA_BUNDLE`) and is told of the proxy (`HTTPS_PROXY`), as any
deployment behind a proxy would be. So each plugin's own request, in its own format,
arrives here, and nothing leaves the machine."""

import datetime
import json
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# The services' hosts the proxy answers for.
HOSTS = [
    "hooks.slack.com",
    "slack.com",
    "outlook.office.com",
    "example.webhook.office.com",
    "prod-00.westus.logic.azure.com",
    "discord.com",
    "api.telegram.org",
    "events.pagerduty.com",
    "api.opsgenie.com",
    "ntfy.sh",
]


@dataclass
class Received:
    method: str
    host: str  # the Host header (the service's host, through the proxy)
    path: str
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for `HOSTS` signed by it: (CA file, certificate, key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("partdash test CA"))
        .issuer_name(_name("partdash test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(HOSTS[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(host) for host in HOSTS]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = (
        directory / "ca.pem",
        directory / "cert.pem",
        directory / "key.pem",
    )
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, cert_file, key_file


# What each service answers when it takes a message, where Apprise checks more than 200.
ANSWERS = {
    "hooks.slack.com": (200, b"ok"),
    "api.opsgenie.com": (202, b'{"result": "Request will be processed", "requestId": "1"}'),
    "events.pagerduty.com": (202, b'{"status": "success", "dedup_key": "1"}'),
}


class Receiver:
    """Records every request; answers as the service would (`ANSWERS`; else 200 with a
    JSON body), or `status` where set (a failing service)."""

    def __init__(self, directory: Path) -> None:
        self.received: list[Received] = []
        self.status: int | None = None
        self.ca_file, cert, key = make_certificates(directory)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def proxy_env(self) -> dict[str, str]:
        """What a sender's process needs to reach the services here."""
        return {"HTTPS_PROXY": self.url, "REQUESTS_CA_BUNDLE": str(self.ca_file), "NO_PROXY": ""}

    def start(self) -> "Receiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.received) >= count, timeout)
            return list(self.received)

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_CONNECT(self) -> None:
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                self.connection = receiver.tls.wrap_socket(self.connection, server_side=True)
                self.rfile = self.connection.makefile("rb")
                self.wfile = self.connection.makefile("wb")
                self.close_connection = False
                while not self.close_connection:
                    self.handle_one_request()

            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with receiver.arrived:
                    receiver.received.append(
                        Received(
                            self.command,
                            (self.headers.get("Host") or "").split(":")[0],
                            self.path,
                            dict(self.headers),
                            body,
                        )
                    )
                    receiver.arrived.notify_all()
                host = receiver.received[-1].host
                status, answer = ANSWERS.get(host, (200, b'{"ok": true}'))
                if receiver.status is not None:
                    status, answer = receiver.status, b'{"error": "refused"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                self.wfile.flush()

            do_POST = do_PUT = do_GET = _record

        return Handler
