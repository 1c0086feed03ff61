"""Each fix a finding carries, run on a real MariaDB as the API gives it, clears the
finding at the next poll: runway for every interval, bound encoding and naming (with and
without rows in the catch-all, and without a catch-all), stale statistics, fragmentation,
HASH skew and the table cache; compression's statement runs and changes what it says.
The rows in the catch-all are counted with COUNT(*) after the fix, not taken from the
statistics partdash reads."""

from datetime import date, datetime, timedelta

import pytest

from partdash.health import pressure
from partdash.health.findings import RUNWAY_HORIZON_DAYS, RUNWAY_WARNING_DAYS
from partdash.lib.quoting import identifier
from partdash.polling.service import poll_server
from tests.services import MariaDB
from tests.sql import run

pytestmark = pytest.mark.django_db


def poll(server) -> None:
    report = poll_server(server)
    assert report.ok, report.error


def api_table(client, server, schema: str, name: str) -> dict:
    response = client.get(f"/api/v1/servers/{server.pk}/tables/")
    assert response.status_code == 200
    (table,) = [t for t in response.json() if (t["schema"], t["name"]) == (schema, name)]
    return table


def finding(table: dict, kind: str) -> dict | None:
    return next((f for f in table["findings"] if f["kind"] == kind), None)


def count(instance: MariaDB, schema: str, table: str, partition: str | None = None) -> int:
    where = f" PARTITION ({identifier(partition)})" if partition else ""
    return run(instance, schema, f"SELECT COUNT(*) FROM {identifier(table)}{where}")[0][0]


def partition_names(instance: MariaDB, schema: str, table: str) -> list[str]:
    rows = instance.execute(
        "SELECT DISTINCT PARTITION_NAME, PARTITION_ORDINAL_POSITION FROM "
        "information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
        "ORDER BY PARTITION_ORDINAL_POSITION",
        (schema, table),
    )
    return [row[0] for row in rows]


def utc_today(instance: MariaDB) -> date:
    return instance.execute("SELECT UTC_DATE()")[0][0]


def to_days(day: date) -> str:
    return f"TO_DAYS('{day:%Y-%m-%d}')"


def months_before(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    return date(index // 12, index % 12 + 1, 1)


# -- runway: one table per interval, encoding and naming ---------------------------------


def daily_to_days(today: date) -> tuple[str, list[str]]:
    """Daily by TO_DAYS, p<first day>, ended ten days ago: 300 rows in pmax."""
    days = [today - timedelta(days=n) for n in (13, 12, 11)]
    parts = ", ".join(
        f"PARTITION p{d:%Y%m%d} VALUES LESS THAN ({to_days(d + timedelta(1))})" for d in days
    )
    return (
        "CREATE TABLE t (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        f"PARTITION BY RANGE (TO_DAYS(d)) ({parts}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
        [
            "INSERT INTO t SELECT seq, UTC_DATE() - INTERVAL 12 DAY FROM seq_1_to_100",
            "INSERT INTO t SELECT seq, UTC_DATE() - INTERVAL seq % 9 DAY FROM seq_1_to_300",
        ],
    )


def monthly_to_days(today: date) -> tuple[str, list[str]]:
    """Monthly by TO_DAYS, p<yyyymm>, ended last month: pmax empty."""
    months = [months_before(today, n) for n in (4, 3, 2)]
    parts = ", ".join(
        f"PARTITION p{m:%Y%m} VALUES LESS THAN ({to_days(months_before(m, -1))})" for m in months
    )
    return (
        "CREATE TABLE t (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        f"PARTITION BY RANGE (TO_DAYS(d)) ({parts}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
        [f"INSERT INTO t SELECT seq, '{months[0]:%Y-%m-%d}' FROM seq_1_to_50"],
    )


def yearly_by_year(today: date) -> tuple[str, list[str]]:
    """Yearly by YEAR(), p<year>, no catch-all: last bound 1 January this year."""
    years = [today.year - 3, today.year - 2, today.year - 1]
    parts = ", ".join(f"PARTITION p{y} VALUES LESS THAN ({y + 1})" for y in years)
    return (
        "CREATE TABLE t (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        f"PARTITION BY RANGE (YEAR(d)) ({parts})",
        [f"INSERT INTO t SELECT seq, '{years[-1]}-06-01' FROM seq_1_to_50"],
    )


def daily_to_seconds(today: date) -> tuple[str, list[str]]:
    """Daily by TO_SECONDS on a DATETIME, `day_<yyyy_mm_dd>` of the last day, ended
    yesterday: 200 rows of today in the catch-all."""
    days = [today - timedelta(days=n) for n in (3, 2, 1)]
    parts = ", ".join(
        f"PARTITION day_{d - timedelta(1):%Y_%m_%d} VALUES LESS THAN "
        f"(TO_SECONDS('{d:%Y-%m-%d} 00:00:00'))"
        for d in days
    )
    return (
        "CREATE TABLE t (id INT NOT NULL, ts DATETIME NOT NULL, PRIMARY KEY (id, ts)) "
        f"PARTITION BY RANGE (TO_SECONDS(ts)) ({parts}, "
        "PARTITION `catch all` VALUES LESS THAN MAXVALUE)",
        ["INSERT INTO t SELECT seq, UTC_TIMESTAMP() - INTERVAL seq SECOND FROM seq_1_to_200"],
    )


def daily_unix_timestamp(today: date) -> tuple[str, list[str]]:
    """Daily by UNIX_TIMESTAMP on a TIMESTAMP, ordinals p001.., five days left."""
    days = [today + timedelta(days=n) for n in (2, 3, 4, 5)]
    epoch = [
        int((datetime(d.year, d.month, d.day) - datetime(1970, 1, 1)).total_seconds()) for d in days
    ]
    parts = ", ".join(f"PARTITION p{i:03d} VALUES LESS THAN ({e})" for i, e in enumerate(epoch, 1))
    return (
        "CREATE TABLE t (id INT NOT NULL, ts TIMESTAMP NOT NULL, PRIMARY KEY (id, ts)) "
        f"PARTITION BY RANGE (UNIX_TIMESTAMP(ts)) ({parts}, "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)",
        ["INSERT INTO t SELECT seq, UTC_TIMESTAMP() FROM seq_1_to_20"],
    )


def monthly_columns(today: date) -> tuple[str, list[str]]:
    """Monthly RANGE COLUMNS on a DATE, p_<yyyy>_<mm>, no catch-all, ended last month."""
    months = [months_before(today, n) for n in (3, 2, 1)]
    parts = ", ".join(
        f"PARTITION p_{m:%Y_%m} VALUES LESS THAN ('{months_before(m, -1):%Y-%m-%d}')"
        for m in months
    )
    return (
        "CREATE TABLE t (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        f"PARTITION BY RANGE COLUMNS (d) ({parts})",
        [f"INSERT INTO t SELECT seq, '{months[1]:%Y-%m-%d}' FROM seq_1_to_50"],
    )


def id_steps(today: date) -> tuple[str, list[str]]:
    """Ids in steps of 1,000, p0..p3, AUTO_INCREMENT: 1,500 rows past the last bound."""
    parts = ", ".join(f"PARTITION p{i} VALUES LESS THAN ({(i + 1) * 1000})" for i in range(4))
    return (
        "CREATE TABLE t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT) "
        f"PARTITION BY RANGE (id) ({parts}, PARTITION pmax VALUES LESS THAN MAXVALUE)",
        ["INSERT INTO t (v) SELECT seq FROM seq_1_to_5500"],
    )


# Each runway table is renamed to this after it is built: the fix must quote it.
# Non-ASCII, but none of it read across a quote by a CJK client charset (a name ending
# in 表 would be: gbk reads its last byte with the closing backtick; see fix_values).
ODD = "表 `t` día"
ODD_QUOTED = "`表 ``t`` día`"

RUNWAY_TABLES = {
    "daily TO_DAYS, rows in the catch-all": (daily_to_days, "pmax", ["p{:%Y%m%d}"]),
    "monthly TO_DAYS, empty catch-all": (monthly_to_days, "pmax", ["p{:%Y%m}"]),
    "yearly YEAR(), no catch-all": (yearly_by_year, None, ["p{:%Y}"]),
    "daily TO_SECONDS, rows in the catch-all": (daily_to_seconds, "catch all", ["day_{:%Y_%m_%d}"]),
    "daily UNIX_TIMESTAMP, five days left": (daily_unix_timestamp, "pmax", ["p005"]),
    "monthly RANGE COLUMNS, no catch-all": (monthly_columns, None, ["p_{:%Y_%m}"]),
    "id steps, rows in the catch-all": (id_steps, "pmax", ["p4", "p5"]),
}


@pytest.mark.parametrize("case", list(RUNWAY_TABLES))
def test_the_runway_fix_run_on_the_server_clears_the_finding(
    case, mariadb, new_schema, make_server, admin_client
):
    build, catchall, first_names = RUNWAY_TABLES[case]
    schema = new_schema(mariadb)
    today = utc_today(mariadb)
    create, inserts = build(today)
    run(mariadb, schema, create, *inserts, "ANALYZE TABLE t", f"RENAME TABLE t TO {ODD_QUOTED}")
    rows = count(mariadb, schema, ODD)
    in_catchall = count(mariadb, schema, ODD, catchall) if catchall else 0
    server = make_server(mariadb)
    poll(server)

    before = finding(api_table(admin_client, server, schema, ODD), "runway")
    assert before is not None, case
    fix = before["fix"]
    assert fix["sql"].startswith(f"ALTER TABLE `{schema}`.{ODD_QUOTED} ")
    expected = f"REORGANIZE PARTITION `{catchall}` INTO (" if catchall else "ADD PARTITION ("
    assert expected in fix["sql"], fix["sql"]
    # What it copies: the catch-all's rows (counted, not read from the statistics).
    if in_catchall:
        assert (fix["safety"], fix["rows"]) == ("copies", in_catchall) and fix["bytes"] > 0
    else:
        assert (fix["safety"], fix["rows"], fix["bytes"]) == ("instant", None, None)

    run(mariadb, schema, fix["sql"])
    poll(server)

    after = api_table(admin_client, server, schema, ODD)
    assert finding(after, "runway") is None, after["findings"]
    # Id ranges: no fill rate measured yet, so no days; the catch-all is empty.
    assert after["runway"]["days_left"] is None or after["runway"]["days_left"] > (
        RUNWAY_WARNING_DAYS
    )
    assert count(mariadb, schema, ODD) == rows
    names = partition_names(mariadb, schema, ODD)
    if catchall:
        assert names[-1] == catchall and count(mariadb, schema, ODD, catchall) == 0
        assert in_catchall == 0 or f"~{in_catchall:,} rows move" in fix["advice"]
    for pattern in first_names:
        assert pattern.format(_first_new_day(case, today)) in names, names


def _first_new_day(case: str, today: date) -> date:
    """The first day (or month, year) the first new partition is named after."""
    if case.startswith("daily TO_DAYS"):
        return today - timedelta(days=10)
    if case.startswith("daily TO_SECONDS"):
        return today - timedelta(days=1)  # named by its last day, ending today
    if case.startswith("monthly TO_DAYS"):
        return months_before(today, 1)
    if case.startswith("monthly RANGE COLUMNS"):
        return today.replace(day=1)
    return date(today.year, 1, 1)


def test_a_table_the_fix_reaches_far_enough_stays_clear_for_the_horizon(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    create, inserts = daily_to_days(utc_today(mariadb))
    run(mariadb, schema, create, *inserts, "ANALYZE TABLE t")
    server = make_server(mariadb)
    poll(server)
    fix = finding(api_table(admin_client, server, schema, "t"), "runway")["fix"]
    run(mariadb, schema, fix["sql"])
    poll(server)
    assert api_table(admin_client, server, schema, "t")["runway"]["days_left"] == (
        RUNWAY_HORIZON_DAYS
    )


# -- stale statistics ---------------------------------------------------------------------


def test_analyze_partition_clears_stale_statistics(
    mariadb, new_schema, make_server, admin_client, settings
):
    settings.PARTDASH_READ_TABLESTATS = "on"  # whatever the test server's cache
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE `odd ``name` (id INT PRIMARY KEY, v INT) STATS_AUTO_RECALC=0 "
        "PARTITION BY RANGE (id) (PARTITION `p 0` VALUES LESS THAN (10000), "
        "PARTITION p1 VALUES LESS THAN (20000), PARTITION p2 VALUES LESS THAN MAXVALUE)",
        "INSERT INTO `odd ``name` SELECT seq, 0 FROM seq_0_to_29999",
        "ANALYZE TABLE `odd ``name`",
        # Half of `p 0` changes, InnoDB does not recalculate (STATS_AUTO_RECALC=0).
        "UPDATE `odd ``name` SET v = 1 WHERE id < 5000",
    )
    server = make_server(mariadb)
    poll(server)
    stale = finding(api_table(admin_client, server, schema, "odd `name"), "staleness")
    assert stale is not None
    assert stale["fix"]["sql"] == f"ALTER TABLE `{schema}`.`odd ``name` ANALYZE PARTITION `p 0`"
    assert stale["fix"]["safety"] == "instant"

    run(mariadb, schema, stale["fix"]["sql"])
    poll(server)
    assert finding(api_table(admin_client, server, schema, "odd `name"), "staleness") is None


# -- fragmentation --------------------------------------------------------------------------


def test_rebuild_partition_then_analyze_clears_fragmentation(
    mariadb, new_schema, make_server, admin_client, monkeypatch
):
    """A 20 MiB partition with nine tenths of its rows deleted; the 64 MiB floor is
    lowered to 1 MiB so the test stays small (the quarter-of-the-file ratio is kept)."""
    monkeypatch.setattr(pressure, "FRAGMENTATION_MIN_BYTES", 1 << 20)
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(1000)) PARTITION BY RANGE (id) "
        "(PARTITION p0 VALUES LESS THAN (100000), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "INSERT INTO t SELECT seq, REPEAT('x', 900) FROM seq_1_to_20000",
        "INSERT INTO t SELECT 100000 + seq, REPEAT('x', 900) FROM seq_1_to_500",
        "DELETE FROM t WHERE id > 2000 AND id < 100000",
    )
    _analyzed_after_purge(mariadb, schema)
    server = make_server(mariadb)
    poll(server)
    fragmented = finding(api_table(admin_client, server, schema, "t"), "fragmentation")
    assert fragmented is not None
    fix = fragmented["fix"]
    assert fix["sql"] == f"ALTER TABLE `{schema}`.`t` REBUILD PARTITION `p0`"
    analyze = f"ALTER TABLE `{schema}`.`t` ANALYZE PARTITION `p0`"
    assert analyze in fix["advice"] and "blocks writes" in fix["advice"]
    file_before = _file_bytes(mariadb, schema, "p0")
    # It copies p0's rows (2,000 left; the statistics are sampled) and its pages.
    assert fix["safety"] == "copies" and 1500 <= fix["rows"] <= 2500
    assert fix["bytes"] > (2000 * 900) and fix["bytes"] <= file_before

    run(mariadb, schema, fix["sql"], analyze)
    poll(server)
    assert finding(api_table(admin_client, server, schema, "t"), "fragmentation") is None
    assert _file_bytes(mariadb, schema, "p0") < file_before / 4
    assert count(mariadb, schema, "t") == 2500


def _analyzed_after_purge(instance: MariaDB, schema: str) -> None:
    """ANALYZE once purge has freed the deleted rows' pages (the statistics count the
    pages still allocated to each index)."""
    for _ in range(40):
        run(instance, schema, "ANALYZE TABLE t")
        size = instance.execute(
            "SELECT clustered_index_size FROM mysql.innodb_table_stats "
            "WHERE database_name = %s AND table_name = 't#P#p0'",
            (schema,),
        )[0][0]
        if size * 16384 < _file_bytes(instance, schema, "p0") / 2:
            return
        run(instance, schema, "DO SLEEP(0.25)")
    raise AssertionError("purge did not free the deleted rows' pages")


def _file_bytes(instance: MariaDB, schema: str, partition: str) -> int:
    return instance.execute(
        "SELECT FILE_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = %s",
        (f"{schema}/t#P#{partition}",),
    )[0][0]


# -- skew, compression --------------------------------------------------------------------


def test_a_prime_partition_count_evens_a_strided_hash_table(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8",
        # Ids in steps of 4: HASH puts them all in p0 and p4.
        "INSERT INTO t SELECT seq * 4 FROM seq_1_to_16000",
        "ANALYZE TABLE t",
    )
    server = make_server(mariadb)
    poll(server)
    skew = finding(api_table(admin_client, server, schema, "t"), "skew")
    assert skew["fix"]["sql"] == (
        f"ALTER TABLE `{schema}`.`t` ADD PARTITION (PARTITION `p8`, PARTITION `p9`, "
        "PARTITION `p10`)"
    )
    analyze = f"ALTER TABLE `{schema}`.`t` ANALYZE PARTITION ALL"
    assert skew["fix"]["advice"].endswith(f"then run {analyze}.")
    assert skew["fix"]["safety"] == "copies"  # every row moves to the new count
    assert abs(skew["fix"]["rows"] - count(mariadb, schema, "t")) <= 1600  # sampled

    run(mariadb, schema, skew["fix"]["sql"], analyze)
    poll(server)
    assert finding(api_table(admin_client, server, schema, "t"), "skew") is None
    assert count(mariadb, schema, "t") == 16000


def test_the_key_block_size_statement_runs(mariadb, new_schema):
    from partdash.health.compression import Compression
    from partdash.health.fixes import TableFacts, compression_fix
    from partdash.health.partitions import PartitionState

    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE `c t` (id INT PRIMARY KEY, b BLOB) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4 "
        "PARTITION BY HASH(id) PARTITIONS 2",
        "INSERT INTO `c t` SELECT seq, RANDOM_BYTES(1000) FROM seq_1_to_200",
    )
    failing = Compression("row", 4.0, 0.4, "fails", True, True, 4096)
    table = TableFacts(schema, "c t", "HASH", "`id`", [PartitionState("p0")], datetime.now())
    fix = compression_fix(TableFacts(**{**_fields(table), "compression": failing}))
    run(mariadb, schema, fix.sql)
    options = mariadb.execute(
        "SELECT CREATE_OPTIONS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
        "AND TABLE_NAME = 'c t'",
        (schema,),
    )[0][0]
    assert "key_block_size=8" in options.lower() and count(mariadb, schema, "c t") == 200


def _fields(table) -> dict:
    return {name: getattr(table, name) for name in table.__dataclass_fields__}


# -- server pressure ------------------------------------------------------------------------


def test_set_global_table_open_cache_clears_the_pressure(
    mariadb_factory, new_schema, make_server, admin_client
):
    instance = mariadb_factory.get({"table_open_cache": 40})
    schema = new_schema(instance)
    run(instance, schema, "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 60")
    try:
        server = make_server(instance)
        poll(server)
        (found,) = cache_findings(admin_client, server)
        sql = found["fix"]["sql"]
        assert sql.startswith("SET GLOBAL table_open_cache = ")
        assert found["fix"]["safety"] == "instant"
        assert f"table_open_cache = {sql.rsplit(' ', 1)[1]}" in found["fix"]["advice"]

        instance.execute(sql)
        poll(server)
        assert cache_findings(admin_client, server) == []
    finally:
        instance.execute("SET GLOBAL table_open_cache = 40")


def cache_findings(client, server) -> list[dict]:
    """The server's own findings on table_open_cache, from the fleet's list."""
    findings = client.get("/api/v1/findings/?limit=500").json()
    return [
        f
        for f in findings
        if f["server_id"] == server.pk
        and f["table_id"] is None
        and "table_open_cache=" in f["message"]
    ]
