"""Each skew fix, run on a real MariaDB as the API gives it (the statement, then the
ANALYZE its advice ends with), evens the table at the next poll, and that poll shows the
rows where COUNT(*) finds them; and "a few values" is said where a few values do hold
the rows, which no count spreads."""

import re

import pytest

from partdash.lib.quoting import identifier
from tests.health.test_fixes_on_mariadb import api_table, finding, partition_names, poll
from tests.services import MariaDB
from tests.sql import run

pytestmark = pytest.mark.django_db

# InnoDB's row estimates sample 20 pages per partition: a few percent off at these sizes.
ESTIMATE_TOLERANCE = 0.05
_ANALYZE = re.compile(r"then run (ALTER TABLE .* ANALYZE PARTITION ALL)\.$")


def counts(instance: MariaDB, schema: str) -> dict[str, int]:
    """COUNT(*) of each partition of t: the truth the polled figures are held to."""
    return {
        name: run(instance, schema, f"SELECT COUNT(*) FROM t PARTITION ({identifier(name)})")[0][0]
        for name in partition_names(instance, schema, "t")
    }


def polled_rows(client, server, schema: str) -> dict[str, int]:
    table = api_table(client, server, schema, "t")
    response = client.get(f"/api/v1/tables/{table['id']}/partitions/")
    assert response.status_code == 200
    return {p["name"]: p["rows"] for p in response.json()}


def run_fix(instance: MariaDB, schema: str, fix: dict, sql: str | None = None) -> None:
    """The statement (the fix's own unless given), then the ANALYZE its advice names."""
    analyze = _ANALYZE.search(fix["advice"])
    assert analyze, fix["advice"]
    run(instance, schema, sql or fix["sql"], analyze[1])


def polled(instance: MariaDB, new_schema, make_server, *statements: str):
    """A new schema holding table t built by `statements` and analysed, polled once."""
    schema = new_schema(instance)
    run(instance, schema, *statements, "ANALYZE TABLE t")
    server = make_server(instance)
    poll(server)
    return schema, server


def assert_even_and_counted(client, server, instance: MariaDB, schema: str) -> None:
    """No skew finding any more, and every partition's rows as COUNT(*) has them."""
    table = api_table(client, server, schema, "t")
    assert finding(table, "skew") is None, table["skew"]
    assert table["skew"]["max_mean_ratio"] <= table["skew"]["threshold"]
    truth, shown = counts(instance, schema), polled_rows(client, server, schema)
    assert shown.keys() == truth.keys()
    for name, exact in truth.items():
        assert shown[name] == pytest.approx(exact, rel=ESTIMATE_TOLERANCE, abs=50), name


# The 2,000 ids in steps of 4 plus 50 stray ones, times 8 so that the table is
# judged (at least 1,000 rows per partition on average): the stray ids (2.4%) in p1 are
# far over the tenth of the mean that once made p1 "hold rows" and hid the stride.
STRAY = "INSERT INTO t SELECT seq * 8 + 1 FROM seq_1_to_400"
HASH_8 = "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH(id) PARTITIONS 8"

SPREADABLE = {
    "hash stride with stray ids": (
        HASH_8,
        ["INSERT INTO t SELECT seq * 4 FROM seq_1_to_16000", STRAY],
        "ADD PARTITION (PARTITION `p8`, PARTITION `p9`, PARTITION `p10`)",
    ),
    # PARTITIONS 1 would name the new partition p4: "Duplicate partition name p4".
    "hash named p1..p4": (
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH(id) "
        "(PARTITION p1, PARTITION p2, PARTITION p3, PARTITION p4)",
        ["INSERT INTO t SELECT seq * 2 FROM seq_1_to_16000"],
        "ADD PARTITION (PARTITION `p5`)",
    ),
    "key over an even count": (
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY KEY(id) PARTITIONS 8",
        ["INSERT INTO t SELECT seq * 4 FROM seq_1_to_16000"],
        "ADD PARTITION (PARTITION `p8`, PARTITION `p9`, PARTITION `p10`)",
    ),
    "linear hash stride": (
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY LINEAR HASH(id) PARTITIONS 8",
        ["INSERT INTO t SELECT seq * 4 FROM seq_1_to_16000"],
        "PARTITION BY HASH (`id`) (PARTITION `p0`, PARTITION `p1`, PARTITION `p2`, "
        "PARTITION `p3`, PARTITION `p4`, PARTITION `p5`, PARTITION `p6`, PARTITION `p7`, "
        "PARTITION `p8`, PARTITION `p9`, PARTITION `p10`)",
    ),
    "linear key, consecutive ids": (
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY LINEAR KEY(id) PARTITIONS 8",
        ["INSERT INTO t SELECT seq FROM seq_1_to_16000"],
        "PARTITION BY KEY (`id`) (PARTITION `p0`, PARTITION `p1`, PARTITION `p2`, "
        "PARTITION `p3`, PARTITION `p4`, PARTITION `p5`, PARTITION `p6`, PARTITION `p7`, "
        "PARTITION `p8`, PARTITION `p9`, PARTITION `p10`)",
    ),
}


@pytest.mark.parametrize("case", SPREADABLE)
def test_the_skew_fix_evens_the_table_and_the_next_poll_counts_its_rows(
    case, mariadb, new_schema, make_server, admin_client
):
    create, inserts, statement = SPREADABLE[case]
    schema, server = polled(mariadb, new_schema, make_server, create, *inserts)
    skew = finding(api_table(admin_client, server, schema, "t"), "skew")
    assert skew is not None
    assert skew["fix"]["sql"] == f"ALTER TABLE `{schema}`.`t` {statement}"
    assert not skew["fix"]["advice"].startswith("A few values")

    total = run(mariadb, schema, "SELECT COUNT(*) FROM t")[0][0]
    run_fix(mariadb, schema, skew["fix"])
    poll(server)
    assert_even_and_counted(admin_client, server, mariadb, schema)
    assert run(mariadb, schema, "SELECT COUNT(*) FROM t")[0][0] == total


def test_a_few_values_holding_most_rows_are_said_so_and_no_count_spreads_them(
    mariadb, new_schema, make_server, admin_client
):
    schema, server = polled(
        mariadb,
        new_schema,
        make_server,
        "CREATE TABLE t (id INT NOT NULL, tenant INT NOT NULL, PRIMARY KEY (id, tenant)) "
        "PARTITION BY HASH(tenant) PARTITIONS 8",
        "INSERT INTO t SELECT seq, seq % 800 FROM seq_1_to_8000",  # 800 tenants, 10 rows each
        "INSERT INTO t SELECT seq, 3 FROM seq_8001_to_15000",  # tenant 3: 7,000 rows, in p3
        "INSERT INTO t SELECT seq, 6 FROM seq_15001_to_22000",  # tenant 6: 7,000 rows, in p6
    )
    fix = finding(api_table(admin_client, server, schema, "t"), "skew")["fix"]
    assert fix["sql"] is None and fix["advice"].startswith("A few values")
    distinct = run(mariadb, schema, "SELECT COUNT(DISTINCT tenant) FROM t PARTITION (p3)")
    assert distinct[0][0] == 100  # tenant 3 and 99 small ones: a few values hold the rows

    # True: the prime count that evens a stride leaves this table skewed.
    run(
        mariadb,
        schema,
        "ALTER TABLE t ADD PARTITION (PARTITION p8, PARTITION p9, PARTITION p10)",
        "ANALYZE TABLE t",
    )
    poll(server)
    assert finding(api_table(admin_client, server, schema, "t"), "skew") is not None


def test_the_values_of_a_big_list_default_partition_get_partitions_of_their_own(
    mariadb, new_schema, make_server, admin_client
):
    schema, server = polled(
        mariadb,
        new_schema,
        make_server,
        "CREATE TABLE t (id INT NOT NULL, r INT NOT NULL) PARTITION BY LIST (r) ("
        "PARTITION p1 VALUES IN (1, 2), PARTITION p2 VALUES IN (3, 4), "
        "PARTITION p3 VALUES IN (5, 6), PARTITION pdefault DEFAULT)",
        "INSERT INTO t SELECT seq, seq % 6 + 1 FROM seq_1_to_3000",  # 1,000 in each list
        "INSERT INTO t SELECT seq, seq % 3 + 7 FROM seq_1_to_9000",  # 7, 8, 9: DEFAULT
    )
    fix = finding(api_table(admin_client, server, schema, "t"), "skew")["fix"]
    assert fix["advice"].startswith("`pdefault` is the DEFAULT partition")

    # As the advice says: its query names the values, its statement gives each its own.
    query = re.search(r"SELECT .*? LIMIT \d+", fix["advice"])[0]
    values = [value for value, _ in run(mariadb, schema, query)]
    assert sorted(values) == [7, 8, 9]
    template = re.search(r"ALTER TABLE .*? DEFAULT\)", fix["advice"])[0]
    new = ", ".join(f"PARTITION `p_{v}` VALUES IN ({v})" for v in values)
    statement = template.replace("PARTITION `p_<value>` VALUES IN (<value>), ...", new)
    run_fix(mariadb, schema, fix, statement)
    poll(server)
    assert_even_and_counted(admin_client, server, mariadb, schema)
    assert counts(mariadb, schema)["pdefault"] == 0


def test_extra_rows_all_in_one_partition_are_told_apart_by_the_advice_query(
    mariadb, new_schema, make_server, admin_client
):
    # As the ground-truth table: ids in steps of 8 in p0, the others spread over p1..p7.
    steps_of_8 = "INSERT INTO t SELECT seq * 8 FROM seq_1_to_8000"
    others = "INSERT INTO t SELECT seq * 8 + seq % 7 + 1 FROM seq_1_to_8000"
    schema, server = polled(mariadb, new_schema, make_server, HASH_8, steps_of_8, others)
    fix = finding(api_table(admin_client, server, schema, "t"), "skew")["fix"]
    assert fix["sql"] is None  # steps of 8, or a few values: only a query tells

    check = re.search(
        r"SELECT COUNT\(\*\), COUNT\(DISTINCT .*?\) FROM .*? PARTITION \(`p0`\)", fix["advice"]
    )
    rows, distinct = run(mariadb, schema, check[0])[0]
    assert rows == distinct == 8000  # a value per row: steps, so the statement given helps
    statement = re.search(r"run (ALTER TABLE .*? ADD PARTITION \(.*?\))\.", fix["advice"])[1]
    run_fix(mariadb, schema, fix, statement)
    poll(server)
    assert_even_and_counted(admin_client, server, mariadb, schema)
