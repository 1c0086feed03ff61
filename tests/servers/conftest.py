"""A private MariaDB with TLS, for the tests of TLS and of certificate approval."""

import pytest

from tests.servers.certificates import CertificateFiles, write_certificates
from tests.services import MariaDB, MariaDBFactory


@pytest.fixture(scope="session")
def certificates(tmp_path_factory) -> CertificateFiles:
    return write_certificates(tmp_path_factory.mktemp("tls"), "server")


@pytest.fixture(scope="session")
def mariadb_tls(mariadb_factory: MariaDBFactory, certificates: CertificateFiles) -> MariaDB:
    """A private MariaDB presenting a certificate of the test CA for 127.0.0.1."""
    return mariadb_factory.get(
        {
            "ssl_cert": str(certificates.cert),
            "ssl_key": str(certificates.key),
            "ssl_ca": str(certificates.ca),
        }
    )
