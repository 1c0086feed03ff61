"""Issue 10's proof, with every part real at once: a private MariaDB holding the tables,
polls asked for through the API (`POST /api/v1/servers/ID/poll/`) and run by a real
Celery worker over a real Redis (the worker evaluates the alerts in the poll's
transaction and sends the emails it queued on commit), beat sweeping the outbox, and a
real SMTP server (aiosmtpd) receiving what the worker sends.

- a skewed HASH table fires one email, further polls send nothing, evening its data
  sends one RESOLVED email;
- a partition past `partition_size` (an override with a small threshold) fires;
- a table spilling into MAXVALUE fires runway, and the fix the email gives, run on the
  server with the ANALYZE its advice names, resolves it;
- a server that stops sends one `unreachable` email and resolves nothing else; started
  again, `unreachable` resolves;
- a silence holds the email back until it ends; then the alert still firing is announced.

"Nothing more" is checked after two further polls: once the outbox holds no transition
left to send, and beat's sweeper has had its interval, the mailbox must not grow.
"""

import html
import re
import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from partdash.alerts.models import Alert, Notification, Silence, Transition
from partdash.health.findings import RUNWAY_HORIZON_DAYS
from partdash.health.fixes import safety_words
from partdash.servers.models import Server
from tests.alerts.conftest import DELIVERY_ENV, DeliveryProcesses
from tests.alerts.mailbox import Mailbox
from tests.conftest import wait_until, yield_the_store_to_the_flush
from tests.sql import run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

BASE = DELIVERY_ENV["PARTDASH_BASE_URL"]
SWEEP = float(DELIVERY_ENV["PARTDASH_ALERT_SWEEP_SECONDS"])
# The worker evaluates: an alert fires, and resolves, on the second poll in a row.
WORKER_ENV = {"PARTDASH_ALERT_FOR_POLLS": "2"}
MIB = 1 << 20


# -- the running system, as a test drives it -------------------------------------------


@pytest.fixture(scope="module")
def quiet(mariadb_factory):
    """A MariaDB of this module's own (no other test asks for these options): only the
    tables a test builds are on it, so nothing else can alert."""
    return mariadb_factory.get({"max_connections": 51})


@pytest.fixture(scope="module")
def module_mailbox():
    """One SMTP server for the module's tests, emptied before each (`fleet`)."""
    box = Mailbox().start()
    yield box
    box.stop()


@pytest.fixture(scope="module")
def module_delivery(django_db_setup, redis_server, tmp_path_factory, module_mailbox):
    """One worker and beat for the module's tests: they all run with WORKER_ENV and send
    to the module's mailbox, and none kills the worker. Each test ends with its outbox
    empty (`Fleet.nothing_more`) and its rows are flushed after it, so nothing of one
    test is left to send in the next. A pair costs 1.8 s of CPU and ~7 s to be ready."""
    database = settings.DATABASES["default"]["NAME"]
    log_dir = tmp_path_factory.mktemp("delivery")
    processes = DeliveryProcesses(redis_server.url, database, log_dir, module_mailbox.port)
    yield processes.start(**WORKER_ENV)
    processes.stop()


@pytest.fixture
def fleet(client, admin_user, transactional_db, module_delivery, module_mailbox, redis_server):
    client.force_login(admin_user)  # staff: may ask for polls, add overrides and silences
    module_mailbox.clear()
    yield Fleet(client, module_delivery, module_mailbox, redis_server.url)
    yield_the_store_to_the_flush()


def polled_on_request(instance, name: str, enabled: bool = True) -> Server:
    """A server polled only when a test asks ("Poll now"): never due for beat."""
    server = Server(
        name=name,
        host=instance.host,
        port=instance.port,
        user="root",
        enabled=enabled,
        poll_interval=86400,
        next_poll_at=timezone.now() + timedelta(days=1),
    )
    server.set_password("")
    server.save()
    return server


class Fleet:
    def __init__(self, client, processes, mailbox, redis_url: str):
        self.api = client
        self.processes = processes
        self.mailbox = mailbox
        self.redis = redis.Redis.from_url(redis_url)

    def register(self, instance, name: str) -> Server:
        """A server polled only when the test asks: saved disabled, then enabled by an
        UPDATE, so no poll is queued by its registration (`polling.signals`) to race the
        test's first poll and count as a second one (the module's worker is warm)."""
        server = polled_on_request(instance, name, enabled=False)
        Server.objects.filter(pk=server.pk).update(enabled=True)
        server.enabled = True
        return server

    def poll(self, server: Server, ok: bool = True) -> None:
        """One poll through the API and the worker, waited for to its end (recorded, its
        lock released, so the next one is not skipped as overlapping)."""
        before = Server.objects.values_list("last_poll_at", flat=True).get(pk=server.pk)
        response = self.api.post(f"/api/v1/servers/{server.pk}/poll/")
        assert response.status_code == 202, response.content
        wait_until(
            lambda: Server.objects.filter(pk=server.pk).exclude(last_poll_at=before).exists(),
            60,
            f"a poll of {server.name}",
            self.processes.logs,
        )
        wait_until(
            lambda: not self.redis.exists(f"partdash:poll:{server.pk}"),
            30,
            f"the poll lock of {server.name} to be released",
            self.processes.logs,
        )
        status, error = Server.objects.values_list("status", "last_error").get(pk=server.pk)
        assert (status != "unreachable") == ok, (status, error)

    def polls(self, server: Server, n: int, ok: bool = True) -> None:
        for _ in range(n):
            self.poll(server, ok)

    def emails(self, n: int) -> list:
        """Wait for the n-th email; all of them."""
        wait_until(lambda: self.mailbox.count() >= n, 30, f"email {n}", self.processes.logs)
        return self.mailbox.emails()

    def nothing_more(self, server: Server, polls: int = 2, ok: bool = True) -> list:
        """Poll again, wait until the outbox has nothing left to send and the sweeper had
        its interval: the emails received by then (the caller checks there are no more)."""
        self.polls(server, polls, ok)
        wait_until(lambda: not unsent().exists(), 30, "the outbox to empty", self.processes.logs)
        time.sleep(SWEEP + 1)
        assert not unsent().exists()
        received = self.mailbox.emails()
        assert Notification.objects.filter(sent_at__isnull=False).count() == len(received)
        return received

    def table(self, server: Server, schema: str, name: str) -> dict:
        """The table as the API shows it (its id, findings and their fixes)."""
        response = self.api.get(f"/api/v1/servers/{server.pk}/tables/")
        assert response.status_code == 200
        (table,) = [t for t in response.json() if (t["schema"], t["name"]) == (schema, name)]
        return table


def unsent():
    """Transitions to announce that no email has carried yet."""
    return Transition.objects.filter(silenced=False).filter(
        Q(notification=None) | Q(notification__sent_at=None)
    )


def outbox() -> list[tuple[str, str, bool]]:
    """Every transition recorded: (rule, kind, silenced), in order."""
    return list(Transition.objects.order_by("id").values_list("alert__rule", "kind", "silenced"))


def finding(table: dict, kind: str) -> dict:
    (found,) = [f for f in table["findings"] if f["kind"] == kind]
    return found


def the_line(email, state: str) -> str:
    (line,) = email.lines("FIRING", "RESOLVED")
    assert line.startswith(f"{state} ")
    return line


def value_of(line: str, pattern: str) -> float:
    match = re.fullmatch(pattern, line)
    assert match, line
    return float(match.group(1))


def fix_shown(email) -> tuple[str, str]:
    """(advice, statement) under the text part's only transition line: `Fix:` with its
    continuation lines, and the `Run:` block, each unindented."""
    rows = email.text.splitlines()
    start = next(i for i, row in enumerate(rows) if row.startswith("  Fix: "))
    advice = [rows[start].removeprefix("  Fix: ")]
    for row in rows[start + 1 :]:
        if not row.startswith(" " * 7):
            break
        advice.append(row[7:])
    sql = []
    if "  Run:" in rows:
        for row in rows[rows.index("  Run:") + 1 :]:
            if not row.startswith("    "):
                break
            sql.append(row[4:])
    return "\n".join(advice), "\n".join(sql)


def assert_details(email, table_id: int, fix: dict) -> None:
    """The fix the findings API gives, the table page's link, in both parts."""
    advice, sql = fix_shown(email)
    assert advice == fix["advice"]
    assert sql == (fix["sql"] or "")
    safety = safety_words(fix["safety"], fix["rows"], fix["bytes"])
    assert [r for r in email.text.splitlines() if r.startswith("  Safety: ")] == (
        [f"  Safety: {safety}"] if fix["sql"] else []
    )
    page = f"{BASE}/tables/{table_id}/"
    assert f"  Page: {page}" in email.text.splitlines()
    shown = html.unescape(email.html).replace("\r\n", "\n")
    assert f'href="{page}"' in shown
    assert f"Fix: {fix['advice']}" in shown
    assert (fix["sql"] or "") in shown


# -- the tables ------------------------------------------------------------------------


def skewed_hash_table(instance, schema: str) -> None:
    """18,000 of 24,000 rows have k = 0, so they all hash to p0: 3.25x the mean."""
    run(
        instance,
        schema,
        "CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k)) "
        "PARTITION BY HASH(k) PARTITIONS 4",
        "INSERT INTO t SELECT seq, IF(seq <= 18000, 0, seq) FROM seq_1_to_24000",
        "ANALYZE TABLE t",
    )


SKEW_LINE = r"{state} skew {schema}\.t value ([0-9.]+) threshold 1\.5"


# -- 1. skew: one email, nothing more, one resolved email -------------------------------


def test_a_skewed_hash_table_fires_once_and_evening_it_resolves_once(quiet, new_schema, fleet):
    schema = new_schema(quiet)
    skewed_hash_table(quiet, schema)
    server = fleet.register(quiet, "e2e-skew")

    fleet.poll(server)
    assert Alert.objects.get(rule="skew").state == "pending"
    fleet.poll(server)
    (fired,) = fleet.emails(1)

    assert fired.subject == f"[partdash] e2e-skew: FIRING skew {schema}.t"
    assert fired.recipients == ["ops@example.com"]
    line = the_line(fired, "FIRING")
    assert value_of(line, SKEW_LINE.format(state="FIRING", schema=schema)) == pytest.approx(
        3.25, rel=0.05
    )
    table = fleet.table(server, schema, "t")
    skew = finding(table, "skew")
    assert f"  {skew['severity'].upper()}: {skew['message']}" in fired.text.splitlines()
    assert "  Partitions: p0" in fired.text.splitlines()
    assert_details(fired, table["id"], skew["fix"])
    assert fleet.nothing_more(server) == [fired]

    run(quiet, schema, "DELETE FROM t WHERE k = 0", "ANALYZE TABLE t")
    fleet.poll(server)
    assert fleet.mailbox.count() == 1  # clear once: still firing
    fleet.poll(server)
    _, resolved = fleet.emails(2)

    assert resolved.subject == f"[partdash] e2e-skew: RESOLVED skew {schema}.t"
    line = the_line(resolved, "RESOLVED")
    assert value_of(line, SKEW_LINE.format(state="RESOLVED", schema=schema)) == pytest.approx(
        1.0, abs=0.1
    )
    # It says how bad it was while it fired, not how the clear reading would rate.
    was = f"  Was {skew['severity']}: even enough"
    assert any(row.startswith(was) for row in resolved.text.splitlines()), resolved.text
    assert f"  Page: {BASE}/tables/{table['id']}/" in resolved.text.splitlines()
    assert fleet.nothing_more(server) == [fired, resolved]
    assert Alert.objects.get(rule="skew").state == "resolved"
    assert outbox() == [("skew", "firing", False), ("skew", "resolved", False)]


# -- 2. partition_size ------------------------------------------------------------------


def test_a_partition_past_its_partition_size_override_fires(quiet, new_schema, fleet):
    schema = new_schema(quiet)
    # Two lists (never judged skewed): p_live holds some MiB, p_old one 16 KiB page.
    run(
        quiet,
        schema,
        "CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, pad VARCHAR(300) NOT NULL, "
        "PRIMARY KEY (id, k)) PARTITION BY LIST (k) "
        "(PARTITION p_live VALUES IN (1), PARTITION p_old VALUES IN (2))",
        "INSERT INTO t SELECT seq, 1, REPEAT('x', 250) FROM seq_1_to_20000",
        "INSERT INTO t SELECT seq, 2, 'x' FROM seq_1_to_10",
        "ANALYZE TABLE t",
    )
    server = fleet.register(quiet, "e2e-size")
    response = fleet.api.post(
        "/api/v1/alert-rules/",
        {
            "rule": "partition_size",
            "server": server.pk,
            "schema": schema,
            "table": "t",
            "threshold": MIB,
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content

    fleet.polls(server, 2)
    (fired,) = fleet.emails(1)

    ((size,),) = quiet.execute(
        "SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't' AND PARTITION_NAME = 'p_live'",
        (schema,),
    )
    assert size > MIB
    assert fired.subject == f"[partdash] e2e-size: FIRING partition_size {schema}.t"
    assert the_line(fired, "FIRING") == (
        f"FIRING partition_size {schema}.t value {size} ({size / MIB:.1f} MiB) "
        f"threshold {MIB} (1.0 MiB)"
    )
    assert "  Partitions: p_live" in fired.text.splitlines()
    table = fleet.table(server, schema, "t")
    assert_details(fired, table["id"], Alert.objects.get(rule="partition_size").fix)
    assert fleet.nothing_more(server) == [fired]
    assert Alert.objects.get().partition == "p_live"
    assert outbox() == [("partition_size", "firing", False)]


# -- 3. runway: the email's fix, run on the server, resolves it --------------------------


def test_a_table_spilling_into_maxvalue_fires_runway_and_its_fix_resolves_it(
    quiet, new_schema, fleet
):
    schema = new_schema(quiet)
    ((today,),) = quiet.execute("SELECT UTC_DATE()")
    days = [today - timedelta(days=n) for n in (13, 12, 11)]
    bounds = ", ".join(
        f"PARTITION p{d:%Y%m%d} VALUES LESS THAN (TO_DAYS('{d + timedelta(1):%Y-%m-%d}'))"
        for d in days
    )
    # Daily partitions that ended ten days ago: 300 rows since landed in pmax.
    run(
        quiet,
        schema,
        "CREATE TABLE t (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        f"PARTITION BY RANGE (TO_DAYS(d)) ({bounds}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO t SELECT seq, UTC_DATE() - INTERVAL 12 DAY FROM seq_1_to_100",
        "INSERT INTO t SELECT seq, UTC_DATE() - INTERVAL seq % 9 DAY FROM seq_1_to_300",
        "ANALYZE TABLE t",
    )
    server = fleet.register(quiet, "e2e-runway")

    fleet.polls(server, 2)
    (fired,) = fleet.emails(1)

    assert fired.subject == f"[partdash] e2e-runway: FIRING runway {schema}.t"
    assert the_line(fired, "FIRING") == f"FIRING runway {schema}.t value 0 threshold 14"
    assert "300 rows already in the catch-all" in fired.text
    table = fleet.table(server, schema, "t")
    runway = finding(table, "runway")
    assert runway["severity"] == "critical"
    assert_details(fired, table["id"], runway["fix"])
    advice, sql = fix_shown(fired)
    assert sql.startswith(f"ALTER TABLE `{schema}`.`t` REORGANIZE PARTITION `pmax` INTO (")
    (analyze,) = re.findall(r"then run (ALTER TABLE .+ ANALYZE PARTITION .+)\.$", advice)

    run(quiet, schema, sql, analyze)  # as a DBA would, from the email
    assert run(quiet, schema, "SELECT COUNT(*) FROM t PARTITION (pmax)") == ((0,),)
    fleet.poll(server)
    assert fleet.mailbox.count() == 1
    fleet.poll(server)
    _, resolved = fleet.emails(2)

    assert resolved.subject == f"[partdash] e2e-runway: RESOLVED runway {schema}.t"
    assert the_line(resolved, "RESOLVED") == (
        f"RESOLVED runway {schema}.t value {RUNWAY_HORIZON_DAYS} threshold 14"
    )
    assert f"  Was critical: {RUNWAY_HORIZON_DAYS} days left" in resolved.text.splitlines()
    assert fleet.nothing_more(server) == [fired, resolved]
    assert not fleet.table(server, schema, "t")["findings"]
    assert outbox() == [("runway", "firing", False), ("runway", "resolved", False)]


# -- 4. unreachable: one email, nothing else resolves, restarting resolves it -----------


def test_a_stopped_server_is_one_unreachable_email_and_resolves_nothing_else(
    mariadb_factory, new_schema, fleet
):
    instance = mariadb_factory.get({"max_connections": 52})  # this test's alone: it stops
    schema = new_schema(instance)
    skewed_hash_table(instance, schema)
    server = fleet.register(instance, "e2e-down")
    fleet.polls(server, 2)
    (skew,) = fleet.emails(1)
    assert skew.subject == f"[partdash] e2e-down: FIRING skew {schema}.t"

    port = instance.port
    instance.kill()
    try:
        fleet.polls(server, 2, ok=False)
        _, down = fleet.emails(2)
        assert down.subject == "[partdash] e2e-down: FIRING unreachable e2e-down"
        assert the_line(down, "FIRING") == "FIRING unreachable e2e-down value 1 threshold 1"
        assert "  CRITICAL: e2e-down cannot be polled: connection refused" in down.text
        assert f"  Page: {BASE}/servers/{server.pk}/" in down.text.splitlines()
        assert "  Fix: Check that the server is up" in down.text
        assert fleet.nothing_more(server, ok=False) == [skew, down]
        firing_skew = Alert.objects.get(rule="skew")
        assert (firing_skew.state, firing_skew.resolved_at) == ("firing", None)
    finally:
        instance.start()
    if instance.port != port:  # it lost its port to someone else meanwhile: follow it
        Server.objects.filter(pk=server.pk).update(port=instance.port)

    fleet.poll(server)
    assert fleet.mailbox.count() == 2
    fleet.poll(server)
    *_, up = fleet.emails(3)

    assert up.subject == "[partdash] e2e-down: RESOLVED unreachable e2e-down"
    assert the_line(up, "RESOLVED") == "RESOLVED unreachable e2e-down value 0 threshold 1"
    assert "  Was critical: e2e-down polled again" in up.text.splitlines()
    assert fleet.nothing_more(server) == [skew, down, up]
    assert Alert.objects.get(rule="skew").state == "firing"
    assert outbox() == [
        ("skew", "firing", False),
        ("unreachable", "firing", False),
        ("unreachable", "resolved", False),
    ]


# -- 5. a silence holds the email back until it ends ------------------------------------


def test_a_silence_holds_the_email_back_until_it_ends_then_it_is_sent_once(
    quiet, new_schema, fleet
):
    schema = new_schema(quiet)
    skewed_hash_table(quiet, schema)
    server = fleet.register(quiet, "e2e-quiet")
    response = fleet.api.post(
        "/api/v1/silences/",
        {
            "server": server.pk,
            "schema": schema,
            "table": "t",
            "rule": "skew",
            "ends_at": (timezone.now() + timedelta(hours=1)).isoformat(),
            "comment": "rebalancing t",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content

    fleet.polls(server, 2)
    alert = Alert.objects.get(rule="skew")
    assert (alert.state, alert.notified_at) == ("firing", None)
    (held,) = Transition.objects.all()
    assert (held.kind, held.silenced, held.notification) == ("firing", True, None)
    assert fleet.nothing_more(server) == []

    Silence.objects.filter(pk=response.json()["id"]).update(
        starts_at=timezone.now() - timedelta(hours=1), ends_at=timezone.now() - timedelta(seconds=1)
    )
    fleet.poll(server)
    (announced,) = fleet.emails(1)

    assert announced.subject == f"[partdash] e2e-quiet: FIRING skew {schema}.t"
    line = the_line(announced, "FIRING")
    assert value_of(line, SKEW_LINE.format(state="FIRING", schema=schema)) == pytest.approx(
        3.25, rel=0.05
    )
    table = fleet.table(server, schema, "t")
    assert_details(announced, table["id"], finding(table, "skew")["fix"])
    assert fleet.nothing_more(server) == [announced]
    assert Alert.objects.get(rule="skew").notified_at is not None
    assert outbox() == [("skew", "firing", True), ("skew", "firing", False)]
