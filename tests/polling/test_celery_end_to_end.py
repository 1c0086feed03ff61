"""End to end: a server registered through the admin is polled by a real Celery worker
and beat over a real Redis, and its snapshot is stored."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def celery_processes(shared_celery_processes):
    """One worker and beat for this module's tests: none needs its own."""
    return shared_celery_processes


def register_through_admin(client, admin_user, instance, name="fleet-a", interval=10):
    client.force_login(admin_user)
    response = client.post(
        "/admin/servers/server/add/",
        {
            "name": name,
            "host": instance.host,
            "port": instance.port,
            "user": "root",
            "password": "",
            "tls_mode": "preferred",
            "ssl_ca": "",
            "poll_interval": interval,
            "enabled": "on",
            "tags": "e2e, test",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def test_beat_and_worker_poll_a_server_registered_in_the_admin(
    client, admin_user, mariadb, celery_processes
):
    from partdash.metrics.models import ServerSnapshot
    from partdash.servers.models import Server

    mariadb.execute("CREATE DATABASE IF NOT EXISTS e2e")
    mariadb.execute(
        "CREATE TABLE IF NOT EXISTS e2e.t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 6"
    )
    registered_at = timezone.now()
    register_through_admin(client, admin_user, mariadb)
    server = Server.objects.get(name="fleet-a")

    first = wait_until(
        lambda: ServerSnapshot.objects.filter(server=server).order_by("taken_at").first(),
        timeout=60,
        what="the first snapshot",
        logs=celery_processes.logs,
    )
    # The poll's outcome is recorded on the server just after its snapshot is stored.
    wait_until(
        lambda: Server.objects.filter(pk=server.pk).exclude(status="never").exists(),
        timeout=30,
        what="the first poll's outcome",
        logs=celery_processes.logs,
    )
    server.refresh_from_db()
    assert server.status == "degraded"  # performance_schema is OFF on this instance
    assert "performance_schema is OFF" in server.last_error
    assert server.flavor == "mariadb"
    assert server.version.startswith("10.")
    assert server.partitions >= 6
    assert first.variables["table_open_cache"]

    # Beat keeps polling it on its interval (10 s), with a new snapshot each time.
    wait_until(
        lambda: ServerSnapshot.objects.filter(server=server).count() >= 2,
        timeout=40,
        what="a second, scheduled poll",
        logs=celery_processes.logs,
    )
    # The first poll is due at registration, the second at the server's offset into the
    # interval, half an interval (5 s) to one and a half later (`scheduling.next_due`):
    # when the second began collecting (the snapshot time is taken when collecting ends)
    # is not before that, less beat's one-second tick. Measured from the registration,
    # not from the first poll's start, which a loaded machine delays by seconds.
    starts = [
        taken_at - timedelta(seconds=seconds)
        for taken_at, seconds in ServerSnapshot.objects.filter(server=server)
        .order_by("taken_at")
        .values_list("taken_at", "seconds")
    ]
    assert (starts[1] - registered_at).total_seconds() >= 4, (registered_at, starts)


def test_a_disabled_server_is_never_polled(client, admin_user, mariadb, celery_processes):
    from partdash.metrics.models import ServerSnapshot
    from partdash.servers.models import Server

    Server.objects.create(
        name="off", host=mariadb.host, port=mariadb.port, user="root", enabled=False
    )
    register_through_admin(client, admin_user, mariadb, name="on")
    wait_until(
        lambda: ServerSnapshot.objects.filter(server__name="on").exists(),
        timeout=60,
        what="the enabled server's poll",
        logs=celery_processes.logs,
    )
    assert not ServerSnapshot.objects.filter(server__name="off").exists()
    assert Server.objects.get(name="off").status == "never"


class Blackhole:
    """A TCP port that accepts connections and never says a word, like a hung server."""

    def __init__(self):
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self):
        self.listener.close()
        for connection in self.held:
            connection.close()


def test_a_hung_server_does_not_delay_the_others(client, admin_user, mariadb, celery_processes):
    from partdash.metrics.models import ServerSnapshot
    from partdash.servers.models import Server

    hung = Blackhole()
    try:
        Server.objects.create(name="hung", host="127.0.0.1", port=hung.port, user="root")
        wait_until(lambda: hung.held, timeout=30, what="the hung server's poll to start")
        register_through_admin(client, admin_user, mariadb, name="healthy")
        wait_until(
            lambda: ServerSnapshot.objects.filter(server__name="healthy").exists(),
            timeout=15,
            what="the healthy server's poll while the hung one is still waiting",
            logs=celery_processes.logs,
        )
        assert Server.objects.get(name="hung").status == "never"  # still waiting on it
    finally:
        hung.close()


def build_ground_truth(instance, schema: str) -> dict[str, int]:
    """A HASH table with uneven partitions, analysed; returns COUNT(*) per partition."""
    instance.execute(f"DROP DATABASE IF EXISTS {schema}")
    instance.execute(f"CREATE DATABASE {schema}")
    instance.execute(
        f"CREATE TABLE {schema}.events (id BIGINT PRIMARY KEY, v INT) "
        "PARTITION BY HASH(id) PARTITIONS 4"
    )
    conn = instance.connect(database=schema)
    with conn.cursor() as cursor:
        cursor.execute("INSERT INTO events SELECT seq, seq FROM seq_1_to_400")
        cursor.execute("INSERT INTO events SELECT seq * 4, 0 FROM seq_101_to_700")  # all to p0
        cursor.execute("ANALYZE TABLE events")
        cursor.fetchall()
        truth = {}
        for partition in ("p0", "p1", "p2", "p3"):
            cursor.execute(f"SELECT COUNT(*) FROM events PARTITION ({partition})")
            truth[partition] = cursor.fetchone()[0]
    conn.close()
    return truth


def test_a_fleet_of_three_servers_is_polled_on_schedule_with_true_figures(
    admin_client, mariadb_factory, celery_processes
):
    from partdash.servers.models import Server

    fleet = {
        "plain": mariadb_factory.get(),
        "instrumented": mariadb_factory.get(
            {"performance_schema": "ON", "innodb_cmp_per_index_enabled": "ON"}
        ),
        "small-cache": mariadb_factory.get({"table_open_cache": 10}),
    }
    truth = {name: build_ground_truth(instance, "fleet_gt") for name, instance in fleet.items()}
    for name, instance in fleet.items():
        Server.objects.create(
            name=name, host=instance.host, port=instance.port, user="root", poll_interval=10
        )

    def all_polled():
        servers = admin_client.get("/api/v1/servers/").json()
        return servers if all(s["status"] in ("ok", "degraded") for s in servers) else None

    servers = wait_until(all_polled, timeout=60, what="three polls", logs=celery_processes.logs)
    statuses = {s["name"]: s["status"] for s in servers}
    assert statuses == {"plain": "degraded", "instrumented": "ok", "small-cache": "degraded"}
    for server in servers:
        tables = admin_client.get(f"/api/v1/servers/{server['id']}/tables/").json()
        events = next(t for t in tables if (t["schema"], t["name"]) == ("fleet_gt", "events"))
        assert events["method"] == "HASH" and events["partition_count"] == 4
        partitions = admin_client.get(f"/api/v1/tables/{events['id']}/partitions/").json()
        assert {p["name"]: p["rows"] for p in partitions} == truth[server["name"]]
        assert events["rows"] == sum(truth[server["name"]].values())


def test_a_working_worker_records_its_tasks_and_passes_checkworker(
    celery_processes, settings, tmp_path, capsys
):
    """The liveness record a real worker keeps (each task's start and finish, in Redis),
    its answer to the ping, and `manage.py checkworker` finding it alive."""
    import socket

    from django.core.management import call_command

    from partdash.lib import liveness
    from partdash.lib.shared_redis import redis_client

    node = f"test@{socket.gethostname()}"  # as CeleryProcesses names it
    client = redis_client()
    before = time.time()
    # Beat queues a dispatch every second: the worker starts and finishes tasks.
    record = wait_until(
        lambda: (
            (seen := liveness.activity_of(client, node)).finished
            and seen.finished > before
            and seen
        ),
        30,
        "a task the worker finished",
        celery_processes.logs,
    )
    assert record.started is not None and record.started <= record.finished + 1
    settings.VAR_DIR = tmp_path
    call_command("checkworker", "--node", node)
    assert capsys.readouterr().out.startswith(f"{node}: alive (")
