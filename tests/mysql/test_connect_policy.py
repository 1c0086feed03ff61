"""PARTDASH_CONNECT_ALLOW / PARTDASH_CONNECT_DENY: the addresses partdash may connect to,
checked on each address a host name resolves to, before any packet is sent; the
connection then goes to an admitted address, not to a second lookup's answer."""

import io
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from partdash.lib.addresses import AddressPolicy, parse_networks
from partdash.mysql.connection import ConnectionFailure, Target, open_session

ROOT = Path(__file__).resolve().parents[2]


class CountingListener:
    """A TCP port on 127.0.0.1 that counts the connections it is offered."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    counting = CountingListener()
    yield counting
    counting.socket.close()


def refusal(target: Target) -> ConnectionFailure:
    with pytest.raises(ConnectionFailure) as refused:
        with open_session(target):
            pass
    return refused.value


def test_a_denied_loopback_is_refused_by_name_too_before_any_connection(settings, listener):
    settings.PARTDASH_CONNECT_DENY = ["loopback", "link-local"]

    by_address = refusal(Target("127.0.0.1", listener.port, "root"))
    by_name = refusal(Target("localhost", listener.port, "root"))

    assert by_address.kind == by_name.kind == "forbidden"
    assert by_address.message == (
        f"not connecting to 127.0.0.1:{listener.port}: PARTDASH_CONNECT_DENY refuses it"
    )
    assert by_name.message.startswith(f"not connecting to localhost:{listener.port} (localhost ")
    assert by_name.message.endswith("PARTDASH_CONNECT_DENY refuses it")
    # The cloud metadata address, and the IPv4 loopback written as IPv6: refused alike.
    assert refusal(Target("169.254.169.254", 80, "root")).kind == "forbidden"
    assert refusal(Target("::ffff:127.0.0.1", listener.port, "root")).kind == "forbidden"
    assert listener.accepted == 0


def test_an_allow_list_admits_only_what_it_names(settings, mariadb, listener):
    settings.PARTDASH_CONNECT_ALLOW = ["10.0.0.0/8"]
    refused = refusal(Target(mariadb.host, mariadb.port, "root"))
    assert refused.kind == "forbidden"
    assert refused.message.endswith("it is not in PARTDASH_CONNECT_ALLOW")

    settings.PARTDASH_CONNECT_ALLOW = ["10.0.0.0/8", "127.0.0.1/32"]
    with open_session(Target(mariadb.host, mariadb.port, "root")) as session:
        assert session.scalar("SELECT 1") == 1
    assert listener.accepted == 0


def test_the_session_goes_to_the_admitted_address_without_a_second_lookup(
    settings, mariadb, monkeypatch
):
    """A name answering a refused and an admitted address connects to the admitted one;
    a resolver that would answer differently the second time (DNS rebinding) is never
    asked again."""
    settings.PARTDASH_CONNECT_DENY = ["::1/128", "127.0.0.2/32"]
    real = socket.getaddrinfo
    lookups = []

    def rebinding(host, *args, **kwargs):
        if host != "rebind.test":
            return real(host, *args, **kwargs)
        lookups.append(host)
        answers = ["::1", "127.0.0.1"] if len(lookups) == 1 else ["127.0.0.2"]
        return [answer for address in answers for answer in real(address, *args, **kwargs)]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with open_session(Target("rebind.test", mariadb.port, "root")) as session:
        assert session.scalar("SELECT 1") == 1
    assert lookups == ["rebind.test"]


def test_a_poll_of_a_refused_server_fails_with_one_line(settings, mariadb, make_server):
    settings.PARTDASH_CONNECT_DENY = ["127.0.0.0/8"]
    server = make_server(mariadb, "local-db")
    said = io.StringIO()
    with pytest.raises(CommandError, match="could not be polled"):
        call_command("poll", "local-db", stdout=io.StringIO(), stderr=said)
    server.refresh_from_db()
    line = f"not connecting to 127.0.0.1:{mariadb.port}: PARTDASH_CONNECT_DENY refuses it"
    assert server.last_error == line
    assert said.getvalue() == f"local-db: not polled: {line}\n"


def test_policy_reads_networks_and_names():
    policy = AddressPolicy(deny=parse_networks(["private", " 192.0.2.7 "], "PARTDASH_CONNECT_DENY"))
    assert policy.refusal("192.0.2.7") and policy.refusal("10.1.2.3")
    assert policy.refusal("fd00::5") and policy.refusal("::ffff:172.16.0.1")
    assert policy.refusal("192.0.2.8") is None and policy.refusal("2001:db8::1") is None
    assert not AddressPolicy().active


@pytest.mark.parametrize(
    "address",
    [
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::1",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
    ],
)
def test_ipv6_forms_of_a_loopback_address_are_judged_as_loopback(address):
    """Mapped, NAT64, 6to4 and Teredo addresses carry an IPv4 address to the same host
    (Teredo's client 127.0.0.1 here): each is refused as loopback."""
    policy = AddressPolicy(deny=parse_networks(["loopback"], "PARTDASH_CONNECT_DENY"))
    assert policy.refusal(address) == "PARTDASH_CONNECT_DENY refuses it"
    assert policy.refusal("2001:db8::1") is None


def test_a_misspelt_network_stops_partdash_at_start_naming_it():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    env["PARTDASH_CONNECT_DENY"] = "loopback,10.0.0.0/33"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert (
        "PARTDASH_CONNECT_DENY: '10.0.0.0/33' is neither a network (CIDR such as 10.0.0.0/8) "
        "nor one of loopback, link-local, private"
    ) in result.stderr
