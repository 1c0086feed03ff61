"""Throw-away TLS certificates for tests: a CA and a server certificate it signed, for
127.0.0.1 and localhost, written as PEM files (for MariaDB's ssl_* options, the fake
MySQL server and partdash's CA file)."""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PEM = serialization.Encoding.PEM


@dataclass(frozen=True)
class CertificateFiles:
    ca: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, issuer, public_key, signing_key, *, ca: bool, names=()):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def write_certificates(directory: Path, label: str = "test") -> CertificateFiles:
    """A CA named `label` and a server certificate it signed, in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"partdash {label} CA")
    ca_cert = _certificate(ca_name, ca_name, ca_key.public_key(), ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    server_cert = _certificate(
        _name("127.0.0.1"), ca_name, server_key.public_key(), ca_key, ca=False, names=names
    )
    files = CertificateFiles(*(directory / f"{label}-{part}.pem" for part in ("ca", "cert", "key")))
    files.ca.write_bytes(ca_cert.public_bytes(PEM))
    files.cert.write_bytes(server_cert.public_bytes(PEM))
    files.key.write_bytes(
        server_key.private_bytes(
            PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return files


def write_self_signed(directory: Path, label: str) -> CertificateFiles:
    """A self-signed certificate for 127.0.0.1 and localhost, as a MySQL server generates
    for itself (its `ca` is the certificate itself)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    name = _name(f"MySQL_Server_{label}_Auto_Generated_Server_Certificate")
    certificate = _certificate(name, name, key.public_key(), key, ca=False, names=names)
    cert, key_file = directory / f"{label}-cert.pem", directory / f"{label}-key.pem"
    cert.write_bytes(certificate.public_bytes(PEM))
    key_file.write_bytes(
        key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return CertificateFiles(cert, cert, key_file)


def fingerprint(files: CertificateFiles) -> str:
    """The server certificate's SHA-256, computed here rather than by partdash."""
    certificate = x509.load_pem_x509_certificate(files.cert.read_bytes())
    return "SHA256:" + certificate.fingerprint(hashes.SHA256()).hex()
