"""Write hotspots follow what the application does (rows changed), not what the disk
does (page flushes), on a real MariaDB with performance_schema on: polls every 60 s by
partdash's clock, default settings, the work between polls done for real. Ground truth:
the rows each statement changed, counted here, and performance_schema's bytes written
per partition file."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partdash.metrics.models import ServerSnapshot
from partdash.polling.service import poll_server
from tests.api.test_health_ground_truth import (
    api_partitions,
    api_tables,
    file_writes,
    flush_to_disk,
)
from tests.sql import run

pytestmark = pytest.mark.django_db

POLL_SECONDS = 60
HOT_IDS = (3, 11, 19, 27, 35)  # all in p3 of HASH(user_id) PARTITIONS 8


class Clock:
    """partdash's clock, starting `minutes_ago` and moved forward by hand: each poll is
    stored as taken at the clock's time (the server's figures are real)."""

    def __init__(self, monkeypatch, minutes_ago: float):
        self.real_now = timezone.now
        self.offset = timedelta(minutes=-minutes_ago)
        monkeypatch.setattr(timezone, "now", lambda: self.real_now() + self.offset)

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)

    def poll(self, server) -> None:
        report = poll_server(server)
        assert report.ok, report.error


@pytest.fixture
def rows_changed_read(settings):
    # On whatever the dictionary cache holds: the shared test server holds other tests'
    # tables, more than its table_definition_cache (`auto` would not read them there;
    # tests/mysql/test_tablestats_cost.py covers that choice).
    settings.PARTDASH_READ_TABLESTATS = "on"


def sessions_table(instance, schema: str, loaded: str) -> None:
    """`sessions_hash`: 8 HASH partitions on user_id, `loaded` the ids bulk-loaded."""
    run(
        instance,
        schema,
        "CREATE TABLE sessions_hash (user_id INT PRIMARY KEY, payload VARCHAR(400)) "
        "PARTITION BY HASH(user_id) PARTITIONS 8",
        f"INSERT INTO sessions_hash SELECT seq, REPEAT('s', 400) FROM {loaded}",
    )


def update_loop(cursor, seconds: int, serial: list[int]) -> int:
    """One UPDATE of the five hot users a second, for `seconds`, on the application's
    session; the rows changed."""
    changed = 0
    for _ in range(seconds):
        serial[0] += 1
        changed += cursor.execute(
            f"UPDATE sessions_hash SET payload = REPEAT('{serial[0] % 10}', 400) "
            f"WHERE user_id IN ({', '.join(map(str, HOT_IDS))})",
        )
    return changed


@pytest.fixture
def application(mariadb_ps):
    """The application's own session (autocommit), open throughout as a pool's is."""

    def connect(schema: str):
        conn = mariadb_ps.connect(database=schema)
        conn.autocommit(True)
        opened.append(conn)
        return conn.cursor()

    opened = []
    yield connect
    for conn in opened:
        conn.close()


def table_of(client, server, schema: str, name: str) -> tuple[dict, dict]:
    table = api_tables(client, server)[(schema, name)]
    return table, api_partitions(client, table)


def test_a_hot_update_loop_is_flagged_at_once_and_an_old_bulk_load_flushed_never(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch, rows_changed_read, application
):
    """The field report: five users in p3 updated once a second; p0 and p4 hold pages a
    bulk load dirtied over an hour ago, which a checkpoint writes out while the loop
    runs. p3 is the write hotspot on the first poll after the loop began, alone; p0
    and p4 show disk writes and no row changed, and are never hot."""
    schema = new_schema(mariadb_ps)
    sessions_table(mariadb_ps, schema, "seq_1_to_0")
    server = make_server(mariadb_ps)
    clock = Clock(monkeypatch, minutes_ago=150)
    clock.poll(server)
    # Counted from before the load: a busy machine's page cleaner may write its pages
    # out before the loop begins (then the polls before the loop show it).
    before = file_writes(mariadb_ps, schema, "sessions_hash")
    # The bulk load, two hours before the loop: 3,000 ids in p0 and p4, left dirty.
    run(
        mariadb_ps,
        schema,
        "INSERT INTO sessions_hash SELECT seq * 4, REPEAT('b', 400) FROM seq_1_to_3000",
        "INSERT INTO sessions_hash SELECT seq, REPEAT('s', 400) FROM seq_1_to_40 WHERE seq % 8 = 3",
    )
    loaded = []  # the partitions as the polls between the load and the loop saw them
    for advance in (POLL_SECONDS, 110 * 60):  # then the load's slot has left the window
        clock.advance(advance)
        clock.poll(server)
        loaded.append(table_of(admin_client, server, schema, "sessions_hash")[1])

    cursor = application(schema)
    serial, flagged_after, changed, seen, polled = [0], None, 0, [], []
    for minute in range(1, 11):
        changed += update_loop(cursor, POLL_SECONDS, serial)
        if minute == 2:  # the checkpoint: every dirty page of the table written out
            flush_to_disk(mariadb_ps, schema, "sessions_hash")
        clock.advance(POLL_SECONDS)
        clock.poll(server)
        table, partitions = table_of(admin_client, server, schema, "sessions_hash")
        seen.append(
            {n: (p["rows_changed_per_s"], p["modified_counter"]) for n, p in partitions.items()}
        )
        assert set(table["hotspots"]) <= {"p3"}, (minute, table["hotspots"], seen)
        if table["hotspots"] == ["p3"] and flagged_after is None:
            flagged_after = minute
        polled.append(partitions)
        if flagged_after and minute >= 3:
            break

    assert flagged_after == 1, seen
    after = file_writes(mariadb_ps, schema, "sessions_hash")
    written = {name: after[name] - before.get(name, 0) for name in after}
    # Ground truth: the checkpoint wrote p0 and p4 (far more than p3), nobody changed them.
    assert written["p0"] > 16 * 16384 and written["p4"] > 16 * 16384, written
    assert written["p0"] + written["p4"] > written["p3"], written
    assert changed == len(HOT_IDS) * POLL_SECONDS * minute
    assert table["activity_source"] == "rows_changed"
    (finding,) = [f for f in table["findings"] if f["kind"] == "hotspot"]
    assert finding["message"].startswith("p3 takes 100% of the rows changed")
    # The flush shows as disk writes on p0 and p4, never as rows changed in the loop: at
    # the checkpoint's poll, or at one before it where InnoDB's page cleaner got there
    # first (it writes old dirty pages on its own, sooner on a busy machine).
    for name in ("p0", "p4"):
        writes = [p[name]["write_bytes_per_s"] for p in loaded + polled]
        assert any(rate and rate > 0 for rate in writes), (name, writes)
        assert all(p[name]["rows_changed_per_s"] == 0 for p in polled), (name, seen)
        assert partitions[name]["is_hotspot"] is False and partitions[name]["write_share"] == 0
    # p3's rate: the rows the last minute's UPDATEs changed over the poll's interval
    # (partdash's clock moved 60 s plus the time the statements really took).
    last, previous = ServerSnapshot.objects.filter(server=server).order_by("-taken_at")[:2]
    interval = (last.taken_at - previous.taken_at).total_seconds()
    expected = len(HOT_IDS) * POLL_SECONDS / interval
    assert partitions["p3"]["rows_changed_per_s"] == pytest.approx(expected, rel=0.01), seen
    assert partitions["p3"]["write_share"] == 1.0 and partitions["p3"]["is_hotspot"] is True
    # The heatmap's series says the same, poll by poll: p3 alone, at its rate.
    history = admin_client.get(
        f"/api/v1/tables/{table['id']}/history/",
        {"metric": "rows_changed_per_s", "since": previous.taken_at.isoformat()},
    ).json()
    latest = dict(zip(history["partitions"], history["points"][-1][1:], strict=True))
    assert latest == {name: p["rows_changed_per_s"] for name, p in partitions.items()}
    assert latest["p3"] == pytest.approx(expected, rel=0.01)
    health = admin_client.get(f"/api/v1/servers/{server.pk}/health/").json()
    assert health["pressure"]["working_set"]["partitions"] == 1  # p3, not the flushed ones


PRELOADED = 8 * 4000  # rows in the HASH table before its inserts begin


def test_inserts_into_one_partition_are_flagged_and_a_uniform_table_never(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch, rows_changed_read, application
):
    """A burst of inserts into one LIST partition and, beside it, an 8-partition HASH
    table written evenly every minute: the LIST partition is hot on the first poll after
    the burst; the HASH table flags nothing in ten minutes, and its partitions' shares of
    the rows changed are their shares of the rows inserted. (The HASH table holds 4,000
    rows a partition first, so ten minutes of inserts stay under the tenth of its rows at
    which InnoDB resets a partition's counter: the counts are exact, not the lower bound
    a reset leaves, which depends on when InnoDB's background statistics run.)"""
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE events (id INT AUTO_INCREMENT, region INT NOT NULL, v VARCHAR(200), "
        "PRIMARY KEY (id, region)) PARTITION BY LIST (region) ("
        "PARTITION eu VALUES IN (1), PARTITION us VALUES IN (2), "
        "PARTITION asia VALUES IN (3), PARTITION other VALUES IN (4))",
        "INSERT INTO events (region, v) SELECT 1 + seq % 4, 'x' FROM seq_1_to_20000",
        "CREATE TABLE even (id INT PRIMARY KEY, v VARCHAR(200)) PARTITION BY HASH(id) PARTITIONS 8",
        f"INSERT INTO even SELECT seq, 'e' FROM seq_0_to_{PRELOADED - 1}",
        # Statistics of both, now: the rows a poll sees (and the counters it starts from)
        # are then the same whatever InnoDB's background statistics got to.
        "ANALYZE TABLE events, even",
    )
    server = make_server(mariadb_ps)
    clock = Clock(monkeypatch, minutes_ago=30)
    clock.poll(server)
    cursor = application(schema)
    flagged_after, next_id, seen = None, PRELOADED, []
    for minute in range(1, 11):
        cursor.execute(f"INSERT INTO even SELECT {next_id} + seq, 'e' FROM seq_1_to_300")
        if minute <= 3:
            cursor.execute("INSERT INTO events (region, v) SELECT 3, 'burst' FROM seq_1_to_300")
        next_id += 300
        clock.advance(POLL_SECONDS)
        clock.poll(server)
        tables = api_tables(admin_client, server)
        events = api_partitions(admin_client, tables[(schema, "events")])
        seen.append(
            {
                n: (p["rows_changed_per_s"], p["modified_counter"], p["rows"])
                for n, p in events.items()
            }
        )
        assert tables[(schema, "even")]["hotspots"] == [], minute
        assert set(tables[(schema, "events")]["hotspots"]) <= {"asia"}, minute
        if tables[(schema, "events")]["hotspots"] == ["asia"] and flagged_after is None:
            flagged_after = minute
    assert flagged_after == 1, seen
    even, partitions = table_of(admin_client, server, schema, "even")
    assert even["activity_source"] == "rows_changed" and even["findings"] == []
    counted = run(
        mariadb_ps, schema, f"SELECT id % 8, COUNT(*) FROM even WHERE id >= {PRELOADED} GROUP BY 1"
    )
    assert sum(n for _, n in counted) == 3000
    shares = {f"p{k}": n / 3000 for k, n in counted}
    for name, partition in partitions.items():
        assert partition["write_share"] == pytest.approx(shares[name], abs=0.02), name


def purchases_table(instance, schema: str, names: tuple[str, str, str, str]) -> int:
    """iiBench's purchases table (three secondary indexes), RANGE by day in four
    partitions `names`: before today, today, tomorrow, MAXVALUE; 20,000 rows three days
    old. Returns today's TO_DAYS."""
    today, tomorrow, after = (
        instance.execute(f"SELECT TO_DAYS(UTC_DATE() + INTERVAL {k} DAY)")[0][0] for k in (0, 1, 2)
    )
    bounds = (today, tomorrow, after, "MAXVALUE")
    run(
        instance,
        schema,
        "CREATE TABLE purchases (transactionid BIGINT AUTO_INCREMENT, dateandtime DATETIME "
        "NOT NULL, cashregisterid INT, customerid INT, productid INT, price FLOAT, "
        "PRIMARY KEY (transactionid, dateandtime), KEY (price, customerid), "
        "KEY (cashregisterid, price, customerid), KEY (price, dateandtime, customerid)) "
        "PARTITION BY RANGE (TO_DAYS(dateandtime)) ("
        + ", ".join(
            f"PARTITION {name} VALUES LESS THAN ({bound})"
            if bound != "MAXVALUE"
            else f"PARTITION {name} VALUES LESS THAN MAXVALUE"
            for name, bound in zip(names, bounds, strict=True)
        )
        + ")",
        "INSERT INTO purchases (dateandtime, cashregisterid, customerid, productid, price) "
        "SELECT UTC_DATE() - INTERVAL 3 DAY, seq % 1000, seq % 100000, seq % 10000, seq % 500 "
        "FROM seq_1_to_20000",
        "ANALYZE TABLE purchases",
    )
    return today


def iibench_batch(cursor, rows: int) -> None:
    """One batch of iiBench's inserts, all timestamped now (today's partition)."""
    cursor.execute(
        "INSERT INTO purchases (dateandtime, cashregisterid, customerid, productid, price) "
        "SELECT UTC_TIMESTAMP(), RAND() * 1000, RAND() * 100000, RAND() * 10000, "
        f"RAND() * 500 FROM seq_1_to_{rows}"
    )


def test_iibench_inserts_make_the_newest_range_partition_the_only_hotspot(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch, rows_changed_read, application
):
    """iiBench's table (a purchases table with three secondary indexes, RANGE by day)
    with its inserts going to today's partition, batch by batch: today's partition is the
    hotspot, alone, on rows changed, and normal for RANGE (no finding)."""
    schema = new_schema(mariadb_ps)
    today = purchases_table(mariadb_ps, schema, ("p_old", "p_today", "p_next", "pmax"))
    server = make_server(mariadb_ps)
    clock = Clock(monkeypatch, minutes_ago=15)
    clock.poll(server)
    cursor = application(schema)
    for _ in range(5):
        iibench_batch(cursor, 1000)
        clock.advance(POLL_SECONDS)
        clock.poll(server)
    table, partitions = table_of(admin_client, server, schema, "purchases")
    counted = dict(
        run(
            mariadb_ps,
            schema,
            f"SELECT TO_DAYS(dateandtime) >= {today}, COUNT(*) FROM purchases GROUP BY 1",
        )
    )
    assert counted[1] == 5000  # ground truth: every insert went to today's partition
    assert table["hotspots"] == ["p_today"] and table["activity_source"] == "rows_changed"
    assert "hotspot" not in [f["kind"] for f in table["findings"]]
    assert partitions["p_today"]["write_share"] == 1.0
    assert {n: p["is_hotspot"] for n, p in partitions.items()} == {
        "p_old": False,
        "p_today": True,
        "p_next": False,
        "pmax": False,
    }
