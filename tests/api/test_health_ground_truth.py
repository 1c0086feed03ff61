"""Ground truth for the health analytics the REST API serves: skew, hotspots, runway,
compression, findings and server pressure, each checked against what the test built on a
real private MariaDB (COUNT(*) per partition, performance_schema file counters,
INNODB_CMP_PER_INDEX, the .ibd files on disk, the server's own date arithmetic).

Tables shared by several tests live in one module-scoped schema on the default server;
tests that write between polls get their own schema on the performance_schema server.
Each test registers its server afresh (the Django database is rolled back per test).
"""

import os
from datetime import date, timedelta
from itertools import combinations
from statistics import fmean, pstdev

import pytest
from django.utils import timezone

from partdash.health.compression import FAILURE_RATE_LIMIT, MIN_COMPRESS_OPS
from partdash.health.findings import (
    RUNWAY_CRITICAL_DAYS,
    RUNWAY_WARNING_DAYS,
    SKEW_CRITICAL_FACTOR,
)
from partdash.health.skew import HASH_SKEW_RATIO
from partdash.metrics.models import PartitionedTable
from partdash.polling.service import poll_server
from tests.services import MariaDB
from tests.sql import new_schema_on, run

pytestmark = pytest.mark.django_db

# Row estimates after ANALYZE TABLE against COUNT(*): exact while a partition's leaf pages
# fit in the 20-page statistics sample, which every table here does (narrow rows).
ESTIMATE_TOLERANCE = 0.02


# -- helpers ------------------------------------------------------------------------------


def partition_names(instance: MariaDB, schema: str, table: str) -> list[str]:
    rows = instance.execute(
        "SELECT PARTITION_NAME FROM information_schema.PARTITIONS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY PARTITION_ORDINAL_POSITION",
        (schema, table),
    )
    return [row[0] for row in rows]


def counts(instance: MariaDB, schema: str, table: str) -> dict[str, int]:
    """COUNT(*) of every partition, in definition order."""
    return {
        name: run(instance, schema, f"SELECT COUNT(*) FROM {table} PARTITION ({name})")[0][0]
        for name in partition_names(instance, schema, table)
    }


def utc_days_from_today(instance: MariaDB, *offsets: int) -> list[int]:
    """TO_DAYS(UTC_DATE() + offset) for each offset, as the server computes them (bounds
    in UTC, the zone partdash compares them in)."""
    columns = ", ".join(f"TO_DAYS(UTC_DATE() + INTERVAL {n} DAY)" for n in offsets)
    return list(instance.execute(f"SELECT {columns}")[0])


def days_until(instance: MariaDB, to_days: int) -> int:
    return instance.execute("SELECT DATEDIFF(FROM_DAYS(%s), UTC_DATE())", (to_days,))[0][0]


def from_days(instance: MariaDB, to_days: int) -> date:
    return instance.execute("SELECT FROM_DAYS(%s)", (to_days,))[0][0]


def gini(values: list[int]) -> float:
    """Mean absolute difference over twice the mean, straight from the definition."""
    n, mean = len(values), fmean(values)
    pairs = sum(abs(a - b) for a, b in combinations(values, 2)) * 2
    return pairs / (2 * n * n * mean)


def flush_to_disk(instance: MariaDB, schema: str, *tables: str) -> None:
    """Write the tables' dirty pages to their files now."""
    run(instance, schema, f"FLUSH TABLES {', '.join(tables)} FOR EXPORT", "UNLOCK TABLES")


def file_writes(instance: MariaDB, schema: str, table: str) -> dict[str, int]:
    """performance_schema's bytes written per partition file of a table."""
    rows = instance.execute(
        "SELECT FILE_NAME, SUM_NUMBER_OF_BYTES_WRITE FROM performance_schema."
        "file_summary_by_instance WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_data_file' "
        "AND FILE_NAME LIKE %s",
        (f"%/{schema}/{table}#P#%",),
    )
    return {path.rsplit("#P#", 1)[1].removesuffix(".ibd"): int(written) for path, written in rows}


def cmp_per_partition(instance: MariaDB, schema: str, table: str) -> dict[str, tuple[int, int]]:
    """(compress_ops, compress_ops_ok) per partition, summed over its indexes."""
    rows = instance.execute(
        "SELECT table_name, SUM(compress_ops), SUM(compress_ops_ok) "
        "FROM information_schema.INNODB_CMP_PER_INDEX "
        "WHERE database_name = %s AND table_name LIKE %s GROUP BY table_name",
        (schema, f"{table}#P#%"),
    )
    return {name.split("#P#")[1]: (int(ops), int(ok)) for name, ops, ok in rows}


def api_tables(client, server) -> dict[tuple[str, str], dict]:
    response = client.get(f"/api/v1/servers/{server.pk}/tables/")
    assert response.status_code == 200
    return {(t["schema"], t["name"]): t for t in response.json()}


def api_partitions(client, table: dict) -> dict[str, dict]:
    response = client.get(f"/api/v1/tables/{table['id']}/partitions/")
    assert response.status_code == 200
    return {p["name"]: p for p in response.json()}


def polled(make_server, instance: MariaDB, name: str = "db1"):
    server = make_server(instance, name=name)
    report = poll_server(server)
    assert report.ok, report.error
    return server


# -- the shared schema: skewed and even HASH tables, RANGE tables near and past their end ----


@pytest.fixture(scope="module")
def built(mariadb: MariaDB):
    """One schema on the default server with every table the read-only tests look at."""
    schema = new_schema_on(mariadb)
    old, today, tomorrow, day2, day4 = utc_days_from_today(mariadb, -30, 0, 1, 2, 4)
    past20, past10 = utc_days_from_today(mariadb, -20, -10)
    run(
        mariadb,
        schema,
        # Half the rows in p0 (HASH(id) puts id % 8 == 0 there), the rest over p1..p7.
        "CREATE TABLE skewed (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8",
        "INSERT INTO skewed SELECT seq * 8 FROM seq_1_to_8000",
        "INSERT INTO skewed SELECT seq * 8 + seq % 7 + 1 FROM seq_1_to_8000",
        "CREATE TABLE even (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8",
        "INSERT INTO even SELECT seq FROM seq_1_to_16000",
        # The last bounded partition ends in four days; nothing in pmax.
        "CREATE TABLE soon (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        "PARTITION BY RANGE (TO_DAYS(d)) ("
        f"PARTITION p_old VALUES LESS THAN ({old}), "
        f"PARTITION p_prev VALUES LESS THAN ({today}), "
        f"PARTITION p_today VALUES LESS THAN ({tomorrow}), "
        f"PARTITION p_next VALUES LESS THAN ({day2}), "
        f"PARTITION p_last VALUES LESS THAN ({day4}), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO soon SELECT seq, UTC_DATE() - INTERVAL 40 DAY FROM seq_1_to_200",
        "INSERT INTO soon SELECT seq, UTC_DATE() - INTERVAL 10 DAY FROM seq_1_to_300",
        "INSERT INTO soon SELECT seq, UTC_DATE() FROM seq_1_to_100",
        # The last bounded partition ended ten days ago: newer rows went to pmax.
        "CREATE TABLE spilled (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        "PARTITION BY RANGE (TO_DAYS(d)) ("
        f"PARTITION p0 VALUES LESS THAN ({past20}), "
        f"PARTITION p1 VALUES LESS THAN ({past10}), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO spilled SELECT seq, UTC_DATE() - INTERVAL 25 DAY FROM seq_1_to_100",
        "INSERT INTO spilled SELECT seq, UTC_DATE() - INTERVAL 15 DAY FROM seq_1_to_150",
        "INSERT INTO spilled SELECT seq, UTC_DATE() - INTERVAL seq % 3 DAY FROM seq_1_to_400",
        "ANALYZE TABLE skewed, even, soon, spilled",
    )
    yield {
        "schema": schema,
        "soon_bounds": {"p_old": old, "p_today": tomorrow, "p_last": day4},
        "spilled_last": past10,
    }
    mariadb.execute(f"DROP DATABASE IF EXISTS {schema}")


# -- 1. skew ------------------------------------------------------------------------------


def test_a_skewed_hash_table_shows_the_skew_of_its_count_star_and_an_even_one_nothing(
    mariadb, built, make_server, admin_client
):
    schema = built["schema"]
    server = polled(make_server, mariadb)
    tables = api_tables(admin_client, server)

    truth = counts(mariadb, schema, "skewed")
    values = list(truth.values())
    assert sum(values) == 16000 and truth["p0"] == 8000  # what was built
    mean = fmean(values)
    expected_ratio = max(values) / mean
    assert expected_ratio == pytest.approx(8 * truth["p0"] / sum(values))

    skewed = tables[(schema, "skewed")]
    skew = skewed["skew"]
    assert skew["max_mean_ratio"] == pytest.approx(expected_ratio, rel=ESTIMATE_TOLERANCE)
    assert skew["cv"] == pytest.approx(pstdev(values) / mean, rel=ESTIMATE_TOLERANCE)
    assert skew["gini"] == pytest.approx(gini(values), rel=ESTIMATE_TOLERANCE)
    assert skew["is_finding"] is True
    assert skew["largest"] == "p0"
    assert skew["threshold"] == HASH_SKEW_RATIO
    assert skewed["rows"] == pytest.approx(sum(values), rel=ESTIMATE_TOLERANCE)
    (finding,) = skewed["findings"]
    assert finding["kind"] == "skew"
    critical = expected_ratio / HASH_SKEW_RATIO >= SKEW_CRITICAL_FACTOR
    assert finding["severity"] == ("critical" if critical else "warning")
    assert "p0" in finding["message"]
    assert skewed["score"] == pytest.approx(finding["score"]) and skewed["score"] > 0

    even_truth = list(counts(mariadb, schema, "even").values())
    assert even_truth == [2000] * 8
    even = tables[(schema, "even")]
    assert even["skew"]["is_finding"] is False
    assert even["skew"]["max_mean_ratio"] == pytest.approx(1.0, rel=ESTIMATE_TOLERANCE)
    assert even["skew"]["reason"].startswith("even enough")  # judged, not "too little"
    assert even["findings"] == [] and even["score"] == 0
    assert even["hotspots"] == [] and even["runway"] is None and even["compression"] is None


# -- 3. runway ------------------------------------------------------------------------------


def test_runway_of_range_tables_against_the_server_calendar(
    mariadb, built, make_server, admin_client
):
    schema, bounds = built["schema"], built["soon_bounds"]
    server = polled(make_server, mariadb)
    tables = api_tables(admin_client, server)

    # Nearly full: four days left, nothing in the catch-all yet.
    soon_counts = counts(mariadb, schema, "soon")
    assert soon_counts == {
        "p_old": 200,
        "p_prev": 300,
        "p_today": 100,
        "p_next": 0,
        "p_last": 0,
        "pmax": 0,
    }
    soon = tables[(schema, "soon")]
    runway = soon["runway"]
    days_left = days_until(mariadb, bounds["p_last"])
    assert 3 <= days_left <= 5
    assert runway["days_left"] == days_left
    assert runway["catchall_rows"] == soon_counts["pmax"] == 0
    assert runway["empty_future_partitions"] == 2  # p_next and p_last
    assert runway["last_bound"] == from_days(mariadb, bounds["p_last"]).isoformat()
    assert runway["bound_kind"] == "date"
    assert runway["oldest_partition_age_days"] == -days_until(mariadb, bounds["p_old"])
    (finding,) = soon["findings"]
    assert finding["kind"] == "runway"
    if days_left < RUNWAY_CRITICAL_DAYS:
        assert finding["severity"] == "critical"
    else:
        assert days_left <= RUNWAY_WARNING_DAYS
        assert finding["severity"] == "warning"
    assert f"{days_left} days left" in finding["message"]
    # Each bound as the server's FROM_DAYS() reads it, for the runway timeline.
    partitions = api_partitions(admin_client, soon)
    for name, to_days in bounds.items():
        assert partitions[name]["bound_date"] == from_days(mariadb, to_days).isoformat(), name
    assert partitions["pmax"]["bound_date"] is None and partitions["pmax"]["catchall"] is True
    assert not any(p["catchall"] for name, p in partitions.items() if name != "pmax")

    # Past its last bound: rows already spill into pmax.
    spilled_counts = counts(mariadb, schema, "spilled")
    assert spilled_counts == {"p0": 100, "p1": 150, "pmax": 400}
    assert days_until(mariadb, built["spilled_last"]) < 0
    spilled = tables[(schema, "spilled")]
    assert spilled["runway"]["days_left"] == 0
    assert spilled["runway"]["catchall_rows"] == spilled_counts["pmax"]
    assert spilled["runway"]["empty_future_partitions"] == 0
    (finding,) = spilled["findings"]
    assert (finding["kind"], finding["severity"]) == ("runway", "critical")
    assert f"{spilled_counts['pmax']:,} rows already in the catch-all" in finding["message"]

    # Not RANGE: no runway at all.
    assert tables[(schema, "skewed")]["runway"] is None
    assert tables[(schema, "even")]["runway"] is None


# -- 5. findings and server health ------------------------------------------------------------


def test_findings_rank_the_broken_tables_first_and_leave_healthy_ones_out(
    mariadb, built, make_server, admin_client
):
    schema = built["schema"]
    server = polled(make_server, mariadb)
    tables = api_tables(admin_client, server)

    response = admin_client.get("/api/v1/findings/?limit=50")
    assert response.status_code == 200
    found = [f for f in response.json() if f["schema"] == schema]
    scores = [f["score"] for f in response.json()]
    assert scores == sorted(scores, reverse=True)
    ranked = [(f["table"], f["kind"], f["severity"]) for f in found]
    assert ranked[:2] == [("spilled", "runway", "critical"), ("skewed", "skew", "critical")]
    assert ranked[2:] == [("soon", "runway", tables[(schema, "soon")]["findings"][0]["severity"])]
    for finding in found:
        table = tables[(schema, finding["table"])]
        assert finding["table_id"] == table["id"]
        assert (finding["server_id"], finding["server"]) == (server.pk, server.name)
        assert finding["score"] == pytest.approx(table["score"])
    assert "even" not in {f["table"] for f in found}  # healthy: no finding to rank

    # The server's own worst three are the head of the fleet list (one server here).
    listed = admin_client.get(f"/api/v1/servers/{server.pk}/").json()["findings"]
    assert [(f["table"], f["kind"]) for f in listed] == [
        (f["table"], f["kind"]) for f in response.json() if f["server_id"] == server.pk
    ][:3]


def partitions_on_server(instance: MariaDB) -> int:
    """Partitions (subpartitions counted singly) of every partitioned table on a server."""
    return instance.execute(
        "SELECT COUNT(*) FROM information_schema.PARTITIONS WHERE PARTITION_NAME IS NOT NULL"
    )[0][0]


def variables(instance: MariaDB, *names: str) -> dict[str, int]:
    rows = instance.execute(
        "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
        f"WHERE VARIABLE_NAME IN ({', '.join(['%s'] * len(names))})",
        [n.upper() for n in names],
    )
    return {name.lower(): int(value) for name, value in rows}


LIMITS = ("table_open_cache", "table_definition_cache", "open_files_limit")


def test_server_health_capabilities_and_partition_pressure(
    mariadb, mariadb_ps, built, make_server, new_schema, admin_client
):
    run(
        mariadb_ps,
        new_schema(mariadb_ps),
        "CREATE TABLE t (id INT) PARTITION BY RANGE (id) SUBPARTITION BY HASH (id) "
        "SUBPARTITIONS 2 (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), "
        "PARTITION p2 VALUES LESS THAN MAXVALUE)",
    )
    without = polled(make_server, mariadb, "plain")
    with_ps = polled(make_server, mariadb_ps, "with-ps")

    for server, instance, ps_on in ((without, mariadb, False), (with_ps, mariadb_ps, True)):
        response = admin_client.get(f"/api/v1/servers/{server.pk}/health/")
        assert response.status_code == 200
        health = response.json()
        assert health["snapshot_at"] is not None
        capabilities = {c["source"]: c for c in health["capabilities"]}
        file_io = capabilities["file_io"]
        assert file_io["ok"] is ps_on
        if ps_on:
            assert file_io["fix"] == ""
        else:
            assert file_io["causes"] == ["setting"]
            assert "performance_schema=ON" in file_io["fix"]
        # Per-index counters are read on the server that has them on; elsewhere they are
        # not needed while no table is compressed.
        cmp = capabilities["cmp_per_index"]
        assert (cmp["ok"], cmp["state"]) == ((True, "ok") if ps_on else (True, "unused"))
        assert cmp["fix"] == ""
        assert capabilities["tablespaces"]["ok"] is True

        count = partitions_on_server(instance)
        assert count >= (25 if instance is mariadb else 6)  # what this module built there
        limits = {row["setting"]: row for row in health["pressure"]["limits"]}
        assert set(limits) == set(LIMITS)
        truth = variables(instance, *LIMITS)
        for setting, row in limits.items():
            assert row["partitions"] == count, setting
            assert row["limit"] == truth[setting], setting
            assert row["ratio"] == pytest.approx(count / truth[setting], abs=1e-6), setting
            ratio = count / truth[setting]
            expected = "critical" if ratio > 1 else "warn" if ratio >= 0.8 else "ok"
            assert row["level"] == expected, setting


def test_partitions_past_a_server_limit_are_a_server_finding_ranked_with_the_tables(
    mariadb_factory, make_server, new_schema, admin_client
):
    """A server with table_open_cache=10 and more partitions than that: a critical
    finding of the server itself, first in the fleet's findings and its server row."""
    instance = mariadb_factory.get({"table_open_cache": 10})
    run(
        instance,
        new_schema(instance),
        "CREATE TABLE many (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 16",
    )
    server = polled(make_server, instance, "tight")
    count, truth = partitions_on_server(instance), variables(instance, *LIMITS)

    findings = admin_client.get("/api/v1/findings/?limit=500").json()
    own = [f for f in findings if f["server_id"] == server.pk and f["table_id"] is None]
    expected = {}
    for setting, limit in truth.items():
        ratio = count / limit
        if ratio >= 0.8:
            expected[setting] = "critical" if ratio > 1 else "warning"
    assert expected["table_open_cache"] == "critical"  # what the test built
    assert {f["message"].split("=")[0].split()[-1]: f["severity"] for f in own} == expected
    cache_finding = next(f for f in own if "table_open_cache=" in f["message"])
    assert cache_finding["kind"] == "pressure"
    assert (
        f"{count:,} partitions against table_open_cache={truth['table_open_cache']:,}"
        in (cache_finding["message"])
    )
    assert findings[0]["score"] >= cache_finding["score"] >= 100
    (row,) = [s for s in admin_client.get("/api/v1/servers/").json() if s["id"] == server.pk]
    assert row["findings"][0]["kind"] == "pressure"
    assert row["findings"][0]["severity"] == "critical"


# -- 2. hotspots ------------------------------------------------------------------------------

BATCHES = 3  # polls with writes, each in its own slot: the fewest a hotspot needs
BATCH_ROWS = 3000  # ~3.5 MB of pages per batch into one partition
SLOT_HOURS = 5 / 60  # a slot of the default one-hour window


def monthly_bounds(instance: MariaDB) -> list[int]:
    """TO_DAYS of the first day of last month, this month, next month and the one after."""
    columns = ", ".join(
        f"TO_DAYS(DATE_FORMAT(UTC_DATE(), '%Y-%m-01') + INTERVAL {k} MONTH)" for k in (-1, 0, 1, 2)
    )
    return list(instance.execute(f"SELECT {columns}")[0])


def test_writes_into_the_newest_range_partition_make_it_the_only_hotspot(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch, settings
):
    """An insert-only workload, one batch per poll, each poll in its own slot of the
    window (polls five minutes apart, by partdash's clock). Rows changed not read: disk
    writes stand in, and are judged on as the disk counted them."""
    settings.PARTDASH_READ_TABLESTATS = "off"
    schema = new_schema(mariadb_ps)
    last_month, this_month, next_month, month_after = monthly_bounds(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE events (id INT AUTO_INCREMENT, d DATE NOT NULL, v VARCHAR(1000), "
        "PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) ("
        f"PARTITION p_m2 VALUES LESS THAN ({last_month}), "
        f"PARTITION p_m1 VALUES LESS THAN ({this_month}), "
        f"PARTITION p_cur VALUES LESS THAN ({next_month}), "
        f"PARTITION p_next VALUES LESS THAN ({month_after}), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO events (d, v) SELECT UTC_DATE() - INTERVAL 2 MONTH, REPEAT('x', 1000) "
        "FROM seq_1_to_500",
        "INSERT INTO events (d, v) SELECT UTC_DATE() - INTERVAL 1 MONTH, REPEAT('x', 1000) "
        "FROM seq_1_to_500",
        "CREATE TABLE spread (id INT PRIMARY KEY, v VARCHAR(1000)) "
        "PARTITION BY HASH(id) PARTITIONS 4",
        "ANALYZE TABLE events, spread",
    )
    flush_to_disk(mariadb_ps, schema, "events", "spread")
    before = {t: file_writes(mariadb_ps, schema, t) for t in ("events", "spread")}
    server = make_server(mariadb_ps)
    poll_as_of(server, monkeypatch, hours_ago=BATCHES * SLOT_HOURS)
    for batch in range(BATCHES):
        run(
            mariadb_ps,
            schema,
            f"INSERT INTO events (d, v) SELECT UTC_DATE(), REPEAT('x', 1000) "
            f"FROM seq_1_to_{BATCH_ROWS}",
            f"INSERT INTO spread SELECT seq + {batch * BATCH_ROWS}, REPEAT('x', 1000) "
            f"FROM seq_1_to_{BATCH_ROWS}",
        )
        flush_to_disk(mariadb_ps, schema, "events", "spread")
        poll_as_of(server, monkeypatch, hours_ago=(BATCHES - 1 - batch) * SLOT_HOURS)
    after = {t: file_writes(mariadb_ps, schema, t) for t in ("events", "spread")}

    # Ground truth: the bytes performance_schema saw written to each file since the baseline.
    written = {
        t: {name: after[t][name] - before[t].get(name, 0) for name in after[t]} for t in after
    }
    assert written["events"]["p_cur"] >= BATCHES * BATCH_ROWS * 1000  # the rows reached disk
    assert counts(mariadb_ps, schema, "events")["p_cur"] == BATCHES * BATCH_ROWS
    tables = api_tables(admin_client, server)

    events = tables[(schema, "events")]
    assert events["hotspots"] == ["p_cur"]
    assert "hotspot" not in [f["kind"] for f in events["findings"]]  # normal for RANGE
    detail = admin_client.get(f"/api/v1/tables/{events['id']}/").json()
    assert detail["activity"]["source"] == events["activity_source"] == "disk"
    assert "disk writes stand in" in detail["activity"]["stands_in"]
    (hot,) = [d for d in detail["hotspot_detail"] if d["kind"] == "write"]
    assert hot["partition"] == "p_cur" and hot["share"] == pytest.approx(1.0, abs=0.01)
    assert (hot["slots_hot"], hot["slots_active"]) == (BATCHES, BATCHES)
    total = sum(written["events"].values())
    partitions = api_partitions(admin_client, events)
    assert list(partitions) == ["p_m2", "p_m1", "p_cur", "p_next", "pmax"]
    for name, partition in partitions.items():
        assert partition["is_hotspot"] is (name == "p_cur"), name
        assert partition["write_share"] == pytest.approx(
            written["events"][name] / total, abs=1e-3
        ), name
    assert partitions["p_cur"]["write_share"] == pytest.approx(1.0, abs=0.01)

    spread = tables[(schema, "spread")]
    assert spread["hotspots"] == [] and spread["findings"] == []
    total = sum(written["spread"].values())
    for name, partition in api_partitions(admin_client, spread).items():
        assert partition["is_hotspot"] is False, name
        share = written["spread"][name] / total
        assert share == pytest.approx(1 / 4, abs=0.05), name  # what was built
        assert partition["write_share"] == pytest.approx(share, abs=1e-3), name


# -- 4. compression ---------------------------------------------------------------------------

COMPRESSED = (
    "CREATE TABLE {name} (id INT PRIMARY KEY, v VARBINARY(3000)) "
    "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4 PARTITION BY HASH(id) PARTITIONS 2"
)
INCOMPRESSIBLE = "CONCAT(RANDOM_BYTES(1000), RANDOM_BYTES(1000), RANDOM_BYTES(1000))"


def window_rate(before: dict, after: dict) -> tuple[float, int]:
    """Failure rate and compress_ops between two INNODB_CMP_PER_INDEX readings."""
    ops = sum(after[p][0] - before.get(p, (0, 0))[0] for p in after)
    ok = sum(after[p][1] - before.get(p, (0, 0))[1] for p in after)
    return (ops - ok) / ops, ops


def test_compression_failure_rates_and_page_compression_ratio(
    mariadb_ps, make_server, new_schema, admin_client
):
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        COMPRESSED.format(name="squeezable"),
        COMPRESSED.format(name="noise"),
        "INSERT INTO squeezable SELECT seq, REPEAT('a', 3000) FROM seq_1_to_500",
        f"INSERT INTO noise SELECT seq, {INCOMPRESSIBLE} FROM seq_1_to_500",
        "CREATE TABLE paged (id INT PRIMARY KEY, v VARCHAR(200)) PAGE_COMPRESSED=1 "
        "PARTITION BY HASH(id) PARTITIONS 2",
        "INSERT INTO paged SELECT seq, REPEAT('a', 200) FROM seq_1_to_20000",
        "ANALYZE TABLE squeezable, noise, paged",
    )
    flush_to_disk(mariadb_ps, schema, "paged")
    before = {t: cmp_per_partition(mariadb_ps, schema, t) for t in ("squeezable", "noise")}
    server = polled(make_server, mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "INSERT INTO squeezable SELECT seq + 500, REPEAT('a', 3000) FROM seq_1_to_1000",
        f"INSERT INTO noise SELECT seq + 500, {INCOMPRESSIBLE} FROM seq_1_to_1000",
        "ANALYZE TABLE squeezable, noise",
    )
    assert poll_server(server).ok
    after = {t: cmp_per_partition(mariadb_ps, schema, t) for t in ("squeezable", "noise")}
    tables = api_tables(admin_client, server)

    rates = {}
    for name in ("squeezable", "noise"):
        rate, ops = window_rate(before[name], after[name])
        rates[name] = rate
        compression = tables[(schema, name)]["compression"]
        assert compression["kind"] == "row"
        assert compression["ratio"] == 16384 / 4096 and compression["ratio_is_nominal"] is True
        assert compression["failure_rate"] == pytest.approx(rate, abs=1e-4), name
        expect_finding = ops >= MIN_COMPRESS_OPS and rate > FAILURE_RATE_LIMIT
        assert compression["is_finding"] is expect_finding, name
        kinds = [f["kind"] for f in tables[(schema, name)]["findings"]]
        assert kinds == (["compression"] if expect_finding else []), name
    assert rates["noise"] > rates["squeezable"] + 0.1  # what was built
    assert rates["noise"] > FAILURE_RATE_LIMIT >= rates["squeezable"]

    # Page compression: apparent file size over the blocks allocated, from the files.
    paged = tables[(schema, "paged")]
    stats = {
        name: os.stat(mariadb_ps.datadir / schema / f"paged#P#{name}.ibd")
        for name in partition_names(mariadb_ps, schema, "paged")
    }
    file_bytes = sum(s.st_size for s in stats.values())
    allocated = sum(s.st_blocks * 512 for s in stats.values())
    assert allocated < file_bytes  # holes were punched
    assert paged["compression"]["kind"] == "page"
    assert paged["compression"]["ratio"] == pytest.approx(file_bytes / allocated, rel=1e-5)
    assert paged["compression"]["failure_rate"] is None
    for name, partition in api_partitions(admin_client, paged).items():
        own = stats[name].st_size / (stats[name].st_blocks * 512)
        assert partition["compression"]["kind"] == "page"
        assert partition["compression"]["ratio"] == pytest.approx(own, rel=1e-5), name


# -- what time does to the figures --------------------------------------------------------------


def monthly_events(instance: MariaDB, schema: str) -> str:
    """`events` by month (last, this, next, MAXVALUE), 500 rows last month, on disk."""
    _, this_month, next_month, month_after = monthly_bounds(instance)
    run(
        instance,
        schema,
        "CREATE TABLE events (id INT AUTO_INCREMENT, d DATE NOT NULL, v VARCHAR(1000), "
        "PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) ("
        f"PARTITION p_m1 VALUES LESS THAN ({this_month}), "
        f"PARTITION p_cur VALUES LESS THAN ({next_month}), "
        f"PARTITION p_next VALUES LESS THAN ({month_after}), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO events (d, v) SELECT UTC_DATE() - INTERVAL 1 MONTH, REPEAT('x', 1000) "
        "FROM seq_1_to_500",
        "ANALYZE TABLE events",
    )
    flush_to_disk(instance, schema, "events")
    return schema


def write_this_month(instance: MariaDB, schema: str) -> None:
    """A burst of BATCH_ROWS rows into `events`' current month, on disk."""
    run(
        instance,
        schema,
        "INSERT INTO events (d, v) SELECT UTC_DATE(), REPEAT('x', 1000) "
        f"FROM seq_1_to_{BATCH_ROWS}",
    )
    flush_to_disk(instance, schema, "events")


def poll_as_of(server, monkeypatch, hours_ago: float):
    """Poll now, stored as if taken `hours_ago` (a poll that happened back then: the
    server's figures are the same, only partdash's clock is set back)."""
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() - timedelta(hours=hours_ago))
    try:
        assert poll_server(server).ok
    finally:
        monkeypatch.setattr(timezone, "now", real_now)


def test_a_burst_into_a_partition_quiet_for_two_hours_counts_in_full_and_is_not_a_hotspot(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch, settings
):
    """Samples are stored only when a figure changes, so after a quiet spell the last
    known value (older than the window) is where the burst's delta starts. On disk
    writes (rows changed not read), one burst fills one slot: it shows in the shares,
    and is not persistent enough to be hot (on rows changed it is: see
    test_write_hotspots_ground_truth.py)."""
    settings.PARTDASH_READ_TABLESTATS = "off"
    schema = monthly_events(mariadb_ps, new_schema(mariadb_ps))
    before = file_writes(mariadb_ps, schema, "events")
    server = make_server(mariadb_ps)
    poll_as_of(server, monkeypatch, hours_ago=2)  # the last poll that saw these figures
    write_this_month(mariadb_ps, schema)
    assert poll_server(server).ok
    after = file_writes(mariadb_ps, schema, "events")
    written = {name: after[name] - before.get(name, 0) for name in after}
    assert written["p_cur"] >= BATCH_ROWS * 1000 and sum(written.values()) == written["p_cur"]

    events = api_tables(admin_client, server)[(schema, "events")]
    partitions = api_partitions(admin_client, events)
    assert events["hotspots"] == []
    assert partitions["p_cur"]["is_hotspot"] is False
    assert partitions["p_cur"]["write_share"] == pytest.approx(1.0, abs=1e-3)


def test_a_quiet_poll_analyses_nothing_and_an_old_burst_leaves_the_window(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch
):
    """A table is analysed again when its figures change, not on every poll; and when
    its last activity leaves the window, the next poll re-analyses it with nothing
    written, so the share it showed goes away."""
    schema = monthly_events(mariadb_ps, new_schema(mariadb_ps))
    server = polled(make_server, mariadb_ps)
    assert poll_server(server).ok  # rates go from unknown to 0: a change, analysed
    table = PartitionedTable.objects.get(server=server, schema=schema, name="events")
    assert poll_server(server).ok  # nothing changed
    table_after = PartitionedTable.objects.get(pk=table.pk)
    assert table_after.analysed_at == table.analysed_at
    assert table_after.health == table.health and table.health["window_ends"] is None

    write_this_month(mariadb_ps, schema)
    assert poll_server(server).ok
    events = api_tables(admin_client, server)[(schema, "events")]
    shares = {n: p["write_share"] for n, p in api_partitions(admin_client, events).items()}
    assert shares["p_cur"] == pytest.approx(1.0, abs=1e-3)
    burst = PartitionedTable.objects.get(pk=table.pk)
    assert burst.health["window_ends"] > burst.analysed_at.timestamp()

    poll_as_of(server, monkeypatch, hours_ago=-2)  # two hours on: the burst is history
    later = PartitionedTable.objects.get(pk=table.pk)
    assert later.analysed_at > burst.analysed_at
    events = api_tables(admin_client, server)[(schema, "events")]
    assert events["hotspots"] == [] and later.activity["source"] == events["activity_source"]
    shares = [p["write_share"] for p in api_partitions(admin_client, events).values()]
    assert shares == [0] * len(shares), (shares, later.activity)


def file_reads(instance: MariaDB, schema: str, table: str) -> dict[str, int]:
    """performance_schema's bytes read per partition file of a table."""
    rows = instance.execute(
        "SELECT FILE_NAME, SUM_NUMBER_OF_BYTES_READ FROM performance_schema."
        "file_summary_by_instance WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_data_file' "
        "AND FILE_NAME LIKE %s",
        (f"%/{schema}/{table}#P#%",),
    )
    return {path.rsplit("#P#", 1)[1].removesuffix(".ibd"): int(read) for path, read in rows}


def evict_from_buffer_pool(instance: MariaDB, schema: str) -> None:
    """Push every page out of the 64 MiB buffer pool by writing 96 MiB of other rows, so
    the next read of a table comes from its files (the only reads performance_schema
    counts)."""
    run(
        instance,
        schema,
        "CREATE TABLE filler (id INT PRIMARY KEY, v VARCHAR(1000))",
        "INSERT INTO filler SELECT seq, REPEAT('f', 1000) FROM seq_1_to_90000",
        "DROP TABLE filler",
    )


def test_one_count_star_shows_in_the_read_shares_and_flags_nothing(
    mariadb_ps, make_server, new_schema, admin_client
):
    """The diagnostic scan reads every partition once, most of it the partition that
    holds most rows: the reads show, and nothing is hot."""
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE accounts (id INT PRIMARY KEY, v VARCHAR(1000)) "
        "PARTITION BY HASH(id) PARTITIONS 4",
        # Most rows in p0 (id % 4 == 0), a few in each of the others.
        "INSERT INTO accounts SELECT seq * 4, REPEAT('a', 1000) FROM seq_1_to_4000",
        "INSERT INTO accounts SELECT seq * 4 + seq % 3 + 1, REPEAT('a', 1000) "
        "FROM seq_4001_to_4600",
        "ANALYZE TABLE accounts",
    )
    flush_to_disk(mariadb_ps, schema, "accounts")
    server = polled(make_server, mariadb_ps)
    evict_from_buffer_pool(mariadb_ps, schema)
    before = file_reads(mariadb_ps, schema, "accounts")
    (count,) = run(mariadb_ps, schema, "SELECT COUNT(*) FROM accounts")[0]
    after = file_reads(mariadb_ps, schema, "accounts")
    assert poll_server(server).ok

    read = {name: after[name] - before.get(name, 0) for name in after}
    assert count == 4600 and read["p0"] > sum(read.values()) / 2  # what was built
    accounts = api_tables(admin_client, server)[(schema, "accounts")]
    assert accounts["hotspots"] == []
    assert "hotspot" not in [f["kind"] for f in accounts["findings"]]
    detail = admin_client.get(f"/api/v1/tables/{accounts['id']}/").json()
    assert detail["hotspot_detail"] == []
    for name, partition in api_partitions(admin_client, accounts).items():
        assert partition["is_hotspot"] is False, name
        share = read[name] / sum(read.values())
        assert partition["read_share"] == pytest.approx(share, abs=1e-3), name


def test_sustained_writes_into_one_hash_partition_make_it_a_write_hotspot(
    mariadb_ps, make_server, new_schema, admin_client, monkeypatch, settings
):
    """Rows with id % 4 == 1 go to p1, one batch per poll, polls five minutes apart:
    p1 takes all the writes in every slot, which is a finding for a HASH table. Rows
    changed not read: judged on disk writes, standing in."""
    settings.PARTDASH_READ_TABLESTATS = "off"
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "CREATE TABLE orders (id INT PRIMARY KEY, v VARCHAR(1000)) "
        "PARTITION BY HASH(id) PARTITIONS 4",
        "INSERT INTO orders SELECT seq, REPEAT('o', 1000) FROM seq_1_to_2000",
        "ANALYZE TABLE orders",
    )
    flush_to_disk(mariadb_ps, schema, "orders")
    before = file_writes(mariadb_ps, schema, "orders")
    server = make_server(mariadb_ps)
    poll_as_of(server, monkeypatch, hours_ago=BATCHES * SLOT_HOURS)
    for batch in range(BATCHES):
        first = 1000 + batch * BATCH_ROWS
        run(
            mariadb_ps,
            schema,
            f"INSERT INTO orders SELECT (seq + {first}) * 4 + 1, REPEAT('o', 1000) "
            f"FROM seq_1_to_{BATCH_ROWS}",
        )
        flush_to_disk(mariadb_ps, schema, "orders")
        poll_as_of(server, monkeypatch, hours_ago=(BATCHES - 1 - batch) * SLOT_HOURS)
    after = file_writes(mariadb_ps, schema, "orders")

    written = {name: after[name] - before.get(name, 0) for name in after}
    total = sum(written.values())
    assert written["p1"] >= BATCHES * BATCH_ROWS * 1000 and written["p1"] / total > 0.99
    orders = api_tables(admin_client, server)[(schema, "orders")]
    assert orders["hotspots"] == ["p1"]
    (finding,) = [f for f in orders["findings"] if f["kind"] == "hotspot"]
    assert finding["message"].startswith(
        f"p1 takes {written['p1'] / total:.0%} of the disk writes (page flushes, standing in"
    )
    assert f"hot in {BATCHES} of {BATCHES} slots with writes" in finding["message"]
    detail = admin_client.get(f"/api/v1/tables/{orders['id']}/").json()
    assert detail["hotspot_detail"] == [
        {
            "partition": "p1",
            "kind": "write",
            "share": pytest.approx(written["p1"] / total, abs=1e-3),
            "slots_hot": BATCHES,
            "slots_active": BATCHES,
        }
    ]
    for name, partition in api_partitions(admin_client, orders).items():
        assert partition["is_hotspot"] is (name == "p1"), name
        assert partition["write_share"] == pytest.approx(written[name] / total, abs=1e-3), name


def test_the_runway_of_an_idle_table_counts_down_as_days_pass(
    mariadb, make_server, new_schema, admin_client, monkeypatch
):
    """Days left depend on the date, not only on the partitions' figures: a table nobody
    writes to still runs out of runway."""
    schema = new_schema(mariadb)
    old, today, tomorrow, day2 = utc_days_from_today(mariadb, -30, 0, 1, 2)
    run(
        mariadb,
        schema,
        "CREATE TABLE idle (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        "PARTITION BY RANGE (TO_DAYS(d)) ("
        f"PARTITION p_old VALUES LESS THAN ({old}), "
        f"PARTITION p_prev VALUES LESS THAN ({today}), "
        f"PARTITION p_today VALUES LESS THAN ({tomorrow}), "
        f"PARTITION p_last VALUES LESS THAN ({day2}), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        "INSERT INTO idle SELECT seq, UTC_DATE() - INTERVAL 40 DAY FROM seq_1_to_100",
        "ANALYZE TABLE idle",
    )
    server = make_server(mariadb)
    for days_ago in (5, 4):  # polled then, as every day since: the figures never changed
        poll_as_of(server, monkeypatch, hours_ago=days_ago * 24)
        then = api_tables(admin_client, server)[(schema, "idle")]
        assert then["runway"]["days_left"] == days_until(mariadb, day2) + days_ago
        assert [f["severity"] for f in then["findings"]] == ["warning"]

    assert poll_server(server).ok  # today: nothing changed on the server but the date
    days_left = days_until(mariadb, day2)
    assert days_left < RUNWAY_CRITICAL_DAYS
    idle = api_tables(admin_client, server)[(schema, "idle")]
    assert idle["runway"]["days_left"] == days_left
    assert idle["runway"]["oldest_partition_age_days"] == -days_until(mariadb, old)
    assert [(f["kind"], f["severity"]) for f in idle["findings"]] == [("runway", "critical")]


def test_a_partition_failure_rate_covers_the_same_window_as_its_table(
    mariadb_ps, make_server, new_schema, admin_client
):
    """Incompressible rows first, compressible ones since: the table's rate is the recent
    one, and each partition's must be too (they are shown side by side)."""
    schema = new_schema(mariadb_ps)
    run(
        mariadb_ps,
        schema,
        COMPRESSED.format(name="mixed"),
        f"INSERT INTO mixed SELECT seq, {INCOMPRESSIBLE} FROM seq_1_to_500",
    )
    before = cmp_per_partition(mariadb_ps, schema, "mixed")
    server = polled(make_server, mariadb_ps)
    run(
        mariadb_ps,
        schema,
        "INSERT INTO mixed SELECT seq + 500, REPEAT('a', 3000) FROM seq_1_to_1000",
        "ANALYZE TABLE mixed",
    )
    assert poll_server(server).ok
    after = cmp_per_partition(mariadb_ps, schema, "mixed")

    mixed = api_tables(admin_client, server)[(schema, "mixed")]
    table_rate, _ = window_rate(before, after)
    lifetime = window_rate({}, after)[0]
    assert lifetime > table_rate + 0.05  # what was built: the old failures dominate totals
    assert mixed["compression"]["failure_rate"] == pytest.approx(table_rate, abs=1e-4)
    for name, partition in api_partitions(admin_client, mixed).items():
        own, _ = window_rate({name: before[name]}, {name: after[name]})
        assert partition["compression"]["failure_rate"] == pytest.approx(own, abs=1e-4), name
