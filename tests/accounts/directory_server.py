"""A private OpenLDAP directory for the sign-on tests: Debian's `slapd` on 127.0.0.1 and
a free port, its own configuration and database in a temporary directory, a certificate
of the tests' own CA, and every operation refused until the client has started TLS
(`security tls=1`), so a login that works went through StartTLS. Starts in about 0.1 s."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

import ldap
import ldap.modlist

from tests.conftest import wait_until
from tests.servers.certificates import CertificateFiles, write_certificates
from tests.services import LOCALHOST, free_port

SLAPD = "/usr/sbin/slapd"
BASE = "dc=partdash,dc=test"
ADMIN_DN = f"cn=admin,{BASE}"
ADMIN_PASSWORD = "directory-admin-pw"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
# A search account for partdash, as a site would give it (the bind DN).
READER_DN = f"cn=partdash,{BASE}"
READER_PASSWORD = "partdash-reader-pw"
ROLE_GROUPS = {role: f"cn=partdash-{role},{GROUPS}" for role in ("viewers", "operators", "admins")}

CONFIG = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {dir}/slapd.pid
TLSCACertificateFile {tls.ca}
TLSCertificateFile {tls.cert}
TLSCertificateKeyFile {tls.key}
security tls=1
database mdb
maxsize 10485760
suffix "{base}"
rootdn "{admin}"
rootpw {password}
directory {dir}/data
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
"""


@dataclass
class Directory:
    uri: str
    tls: CertificateFiles
    process: subprocess.Popen

    def connect(self, start_tls: bool = True):
        """A connection bound as the directory's administrator."""
        connection = ldap.initialize(self.uri)
        connection.set_option(ldap.OPT_NETWORK_TIMEOUT, 5)
        connection.set_option(ldap.OPT_X_TLS_CACERTFILE, str(self.tls.ca))
        connection.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
        connection.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
        if start_tls:
            connection.start_tls_s()
        connection.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        return connection

    def add_person(self, uid: str, password: str, groups: tuple[str, ...] = ()) -> str:
        dn = f"uid={uid},{PEOPLE}"
        entry = {
            "objectClass": [b"inetOrgPerson"],
            "uid": [uid.encode()],
            "cn": [uid.encode()],
            "sn": [b"Tester"],
            "givenName": [uid.title().encode()],
            "mail": [f"{uid}@example.test".encode()],
            "userPassword": [password.encode()],
        }
        connection = self.connect()
        connection.add_s(dn, ldap.modlist.addModlist(entry))
        for role in groups:
            self.join(dn, role, connection)
        return dn

    def join(self, dn: str, role: str, connection=None) -> None:
        (connection or self.connect()).modify_s(
            ROLE_GROUPS[role], [(ldap.MOD_ADD, "member", [dn.encode()])]
        )

    def leave(self, dn: str, role: str) -> None:
        self.connect().modify_s(ROLE_GROUPS[role], [(ldap.MOD_DELETE, "member", [dn.encode()])])

    def environment(self) -> dict[str, str]:
        """partdash's settings for this directory, as a site would set them."""
        return {
            "PARTDASH_LDAP_URI": self.uri,
            "PARTDASH_LDAP_BIND_DN": READER_DN,
            "PARTDASH_LDAP_BIND_PASSWORD": READER_PASSWORD,
            "PARTDASH_LDAP_USER_BASE": PEOPLE,
            "PARTDASH_LDAP_GROUP_BASE": GROUPS,
            "PARTDASH_LDAP_VIEWER_GROUP": ROLE_GROUPS["viewers"],
            "PARTDASH_LDAP_OPERATOR_GROUP": ROLE_GROUPS["operators"],
            "PARTDASH_LDAP_ADMIN_GROUP": ROLE_GROUPS["admins"],
            "PARTDASH_LDAP_START_TLS": "1",
            "PARTDASH_LDAP_CA_FILE": str(self.tls.ca),
            "PARTDASH_LDAP_TIMEOUT": "5",
        }


def start_directory(directory: Path) -> Directory:
    """slapd in `directory`, with the base, people and groups (an unrelated placeholder
    member in each group: groupOfNames needs one)."""
    (directory / "data").mkdir(parents=True)
    tls = write_certificates(directory, "ldap")
    config = directory / "slapd.conf"
    config.write_text(
        CONFIG.format(dir=directory, tls=tls, base=BASE, admin=ADMIN_DN, password=ADMIN_PASSWORD)
    )
    port = free_port()
    uri = f"ldap://{LOCALHOST}:{port}"
    process = subprocess.Popen(
        [SLAPD, "-f", str(config), "-h", uri, "-d", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    served = Directory(uri=uri, tls=tls, process=process)
    wait_until(lambda: _answers(served), 10, "slapd answers")
    connection = served.connect()
    for dn, entry in _tree():
        connection.add_s(dn, ldap.modlist.addModlist(entry))
    return served


def _answers(served: Directory) -> bool:
    if served.process.poll() is not None:
        raise AssertionError(f"slapd exited: {served.process.stderr.read().decode()[-2000:]}")
    try:
        served.connect()
    except ldap.SERVER_DOWN:
        return False
    return True


def _tree():
    placeholder = [f"cn=nobody,{BASE}".encode()]
    yield (
        BASE,
        {"objectClass": [b"dcObject", b"organization"], "o": [b"partdash"], "dc": [b"partdash"]},
    )
    yield (
        READER_DN,
        {
            "objectClass": [b"person"],
            "cn": [b"partdash"],
            "sn": [b"partdash"],
            "userPassword": [READER_PASSWORD.encode()],
        },
    )
    for unit in ("people", "groups"):
        yield f"ou={unit},{BASE}", {"objectClass": [b"organizationalUnit"], "ou": [unit.encode()]}
    for role, dn in ROLE_GROUPS.items():
        name = f"partdash-{role}".encode()
        yield dn, {"objectClass": [b"groupOfNames"], "cn": [name], "member": placeholder}
