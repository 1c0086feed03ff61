"""Runway on a real MariaDB, as the API gives it: RANGE tables without a catch-all (a
`year` column, ids) get the days until inserts past the last bound fail and the ADD
PARTITION that clears the finding, run here and polled again; integer bounds that spell
months keep calendar names; cyclic tables (HOUR, MINUTE, SECOND, DAYOFYEAR, DAY) get no
runway finding, and every unknown runway says why."""

import re
from datetime import date

import pymysql
import pytest

from partdash.health.findings import RUNWAY_HORIZON_DAYS, RUNWAY_WARNING_DAYS
from partdash.polling.service import poll_server
from tests.services import MariaDB
from tests.sql import run

pytestmark = pytest.mark.django_db

NO_PARTITION = 1526  # ER_NO_PARTITION_FOR_GIVEN_VALUE: "Table has no partition for value"


def poll(server) -> None:
    report = poll_server(server)
    assert report.ok, report.error


def api_tables(client, server) -> dict[str, dict]:
    response = client.get(f"/api/v1/servers/{server.pk}/tables/")
    assert response.status_code == 200
    return {t["name"]: t for t in response.json()}


def runway_finding(table: dict) -> dict | None:
    return next((f for f in table["findings"] if f["kind"] == "runway"), None)


def utc_today(instance: MariaDB) -> date:
    return instance.execute("SELECT UTC_DATE()")[0][0]


def insert_fails(instance: MariaDB, schema: str, statement: str) -> bool:
    try:
        run(instance, schema, statement)
    except pymysql.err.OperationalError as error:
        assert error.args[0] == NO_PARTITION, error
        return True
    return False


def test_a_year_column_without_a_catchall_runs_on_the_calendar_and_its_fix_clears_it(
    mariadb, new_schema, make_server, admin_client
):
    schema = new_schema(mariadb)
    year = utc_today(mariadb).year
    years = [year - 3, year - 2, year - 1]
    parts = ", ".join(f"PARTITION p{y} VALUES LESS THAN ({y + 1})" for y in years)
    run(
        mariadb,
        schema,
        "CREATE TABLE sales (id INT NOT NULL, `year` SMALLINT NOT NULL, PRIMARY KEY (id, `year`)) "
        f"PARTITION BY RANGE (`year`) ({parts})",
        f"INSERT INTO sales SELECT seq, {year - 1} FROM seq_1_to_100",
        "ANALYZE TABLE sales",
    )
    this_year = f"INSERT INTO sales VALUES (1, {year})"
    assert insert_fails(mariadb, schema, this_year)  # the ground truth: the runway is gone
    server = make_server(mariadb)
    poll(server)

    table = api_tables(admin_client, server)["sales"]
    runway = table["runway"]
    assert runway["bound_kind"] == "date" and runway["last_bound"] == f"{year}-01-01"
    assert runway["days_left"] == 0 and runway["has_catchall"] is False
    finding = runway_finding(table)
    assert finding["severity"] == "critical"
    assert f"inserts past the last bound ({year}-01-01) fail" in finding["message"]
    sql = finding["fix"]["sql"]
    assert sql.startswith(f"ALTER TABLE `{schema}`.`sales` ADD PARTITION (")
    assert f"PARTITION `p{year}` VALUES LESS THAN ({year + 1})" in sql

    run(mariadb, schema, sql)
    poll(server)

    after = api_tables(admin_client, server)["sales"]
    assert runway_finding(after) is None, after["findings"]
    last = date.fromisoformat(after["runway"]["last_bound"])
    assert after["runway"]["days_left"] == (last - utc_today(mariadb)).days >= RUNWAY_HORIZON_DAYS
    assert not insert_fails(mariadb, schema, this_year)


def test_an_id_range_without_a_catchall_runs_out_at_its_growth_and_its_fix_clears_it(
    mariadb, new_schema, make_server, admin_client
):
    """Ids 1 to 3,000 over four partitions of 1,000 ids, no AUTO_INCREMENT read (the
    default): the id reached is estimated from the rows, the growth from the rows added
    between two polls (20 in the window of an hour: 480 a day)."""
    schema = new_schema(mariadb)
    parts = ", ".join(f"PARTITION p{i} VALUES LESS THAN ({(i + 1) * 1000})" for i in range(4))
    run(
        mariadb,
        schema,
        "CREATE TABLE events (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT) "
        f"PARTITION BY RANGE (id) ({parts})",
        "INSERT INTO events (v) SELECT seq FROM seq_1_to_3000",
        "ANALYZE TABLE events",
    )
    server = make_server(mariadb)
    poll(server)
    first = api_tables(admin_client, server)["events"]["runway"]
    assert first["days_left"] is None
    assert first["reason"].startswith("id range: no growth measured yet")
    assert first["current_id"] == 3001 and first["current_id_from"] == "rows"

    twenty = "INSERT INTO events (v) SELECT seq FROM seq_1_to_20"
    run(mariadb, schema, twenty, "ANALYZE TABLE events")
    poll(server)

    table = api_tables(admin_client, server)["events"]
    runway = table["runway"]
    next_id = run(mariadb, schema, "SELECT MAX(id) + 1 FROM events")[0][0]
    assert runway["current_id"] == next_id == 3021
    assert runway["fill_rate_per_day"] == 480
    assert runway["days_left"] == round((4000 - next_id) / 480, 1) == 2.0
    finding = runway_finding(table)
    assert finding["severity"] == "critical"
    assert finding["message"].startswith(
        "2 days left before inserts past the last bound (4,000) fail"
    )
    # 980 ids left: the 1,000 more rows the next two days bring would not fit
    assert insert_fails(mariadb, schema, "INSERT INTO events (v) SELECT seq FROM seq_1_to_1000")
    sql = finding["fix"]["sql"]
    assert sql.startswith(f"ALTER TABLE `{schema}`.`events` ADD PARTITION (")
    assert "PARTITION `p4` VALUES LESS THAN (5000)" in sql

    run(mariadb, schema, sql)
    poll(server)

    after = api_tables(admin_client, server)["events"]
    assert runway_finding(after) is None, after["findings"]
    assert after["runway"]["days_left"] >= RUNWAY_HORIZON_DAYS
    assert not insert_fails(mariadb, schema, "INSERT INTO events (v) SELECT seq FROM seq_1_to_1000")


def test_month_names_stay_on_the_calendar_and_their_fix_clears_the_finding(
    mariadb, new_schema, make_server, admin_client
):
    """The two tables of MariaDB's suite named p200912 and p201103: integer YYYYMM bounds
    (continued every 15 months, named by the last month each holds) and YEAR() bounds the
    names do not spell (a continuation `p` and the first year, that collides with none)."""
    schema = new_schema(mariadb)
    run(
        mariadb,
        schema,
        "CREATE TABLE months (id INT NOT NULL, ym INT NOT NULL, PRIMARY KEY (id, ym)) "
        "PARTITION BY RANGE (ym) (PARTITION p200912 VALUES LESS THAN (201001), "
        "PARTITION p201103 VALUES LESS THAN (201104))",
        "CREATE TABLE years (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
        "PARTITION BY RANGE (YEAR(d)) (PARTITION p200912 VALUES LESS THAN (2009), "
        "PARTITION p201103 VALUES LESS THAN (2011))",
        "INSERT INTO months SELECT seq, 201005 FROM seq_1_to_10",
        "INSERT INTO years SELECT seq, '2010-05-01' FROM seq_1_to_10",
        "ANALYZE TABLE months, years",
    )
    server = make_server(mariadb)
    poll(server)
    tables = api_tables(admin_client, server)
    fixes = {}
    for name in ("months", "years"):
        assert tables[name]["runway"]["days_left"] == 0, tables[name]["runway"]
        fixes[name] = runway_finding(tables[name])["fix"]["sql"]
    month_names = re.findall(r"PARTITION `(\w+)`", fixes["months"])
    assert month_names[:2] == ["p201206", "p201309"]
    assert all(re.fullmatch(r"p(\d{4})(0[1-9]|1[0-2])", n) for n in month_names), month_names
    assert "PARTITION `p201206` VALUES LESS THAN (201207)" in fixes["months"]
    year_names = re.findall(r"PARTITION `(\w+)`", fixes["years"])
    assert year_names[:2] == ["p2011", "p2013"]
    assert "PARTITION `p2011` VALUES LESS THAN (2013)" in fixes["years"]

    run(mariadb, schema, fixes["months"], fixes["years"])
    poll(server)

    after = api_tables(admin_client, server)
    for name in ("months", "years"):
        assert runway_finding(after[name]) is None, after[name]["findings"]
        assert after[name]["runway"]["days_left"] > RUNWAY_WARNING_DAYS


CYCLIC = {
    "by_hour": ("HOUR(ts)", 12, "HOUR()"),
    "by_minute": ("MINUTE(ts)", 30, "MINUTE()"),
    "by_second": ("SECOND(ts)", 30, "SECOND()"),
    "by_day_of_year": ("DAYOFYEAR(ts)", 100, "DAYOFYEAR()"),
    "by_day": ("DAY(ts)", 15, "DAYOFMONTH()"),  # MariaDB stores DAY() as dayofmonth()
}


def test_cyclic_tables_have_no_runway_finding_and_say_why(
    mariadb, new_schema, make_server, admin_client
):
    """Rows every 7 hours, 13 minutes and 37 seconds over a year: each catch-all holds the values
    past its bound, as designed, and always will."""
    schema = new_schema(mariadb)
    statements = []
    for name, (expression, bound, _cyclic) in CYCLIC.items():
        statements += [
            f"CREATE TABLE {name} (id INT NOT NULL, ts DATETIME NOT NULL, "
            f"PRIMARY KEY (id, ts)) PARTITION BY RANGE ({expression}) ("
            f"PARTITION p0 VALUES LESS THAN ({bound}), PARTITION pmax VALUES LESS THAN MAXVALUE)",
            f"INSERT INTO {name} SELECT seq, '2026-01-01' + INTERVAL seq * 26017 SECOND "
            "FROM seq_1_to_1200",
        ]
    run(mariadb, schema, *statements, f"ANALYZE TABLE {', '.join(CYCLIC)}")
    server = make_server(mariadb)
    poll(server)

    tables = api_tables(admin_client, server)
    for name, (_expression, _bound, cyclic) in CYCLIC.items():
        in_catchall = run(mariadb, schema, f"SELECT COUNT(*) FROM {name} PARTITION (pmax)")[0][0]
        assert in_catchall > 0
        runway = tables[name]["runway"]
        assert runway["catchall_rows"] > 0, (name, runway)
        assert runway["cyclic"] == cyclic, (name, runway)
        assert runway["days_left"] is None
        assert runway["reason"].startswith(f"cyclic partitioning ({cyclic})")
        assert runway_finding(tables[name]) is None, (name, tables[name]["findings"])
