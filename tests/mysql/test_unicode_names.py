"""Every name, in every language, against a real MariaDB: the filename encoding agrees
with the server character by character, and schemas, tables, partitions and
subpartitions named in accented Latin, Greek, Cyrillic and CJK, with spaces, hyphens,
dots, `#`, `#P#`, `@`, `$`, quotes and backticks, are polled (as root and through the
README's least-privilege account) with every figure, named exactly as information_schema
names them, and linked by the API and the pages.

What the server was seen to do (MariaDB 10.11): tablespace names, performance_schema file
paths and INNODB_SYS_TABLESTATS spell names in the filename encoding (`#` as `@0023`, so
only the separators are `#`); mysql.innodb_table_stats and INNODB_CMP_PER_INDEX spell
them decoded, `#` and all."""

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from uuid import uuid4

import pytest

from partdash.lib.quoting import identifier, qualified, string_literal
from partdash.metrics.models import Partition, PartitionedTable
from partdash.mysql.filename_charset import DECODE
from partdash.mysql.names import decode_filename, encode_filename, split_tablespace
from partdash.polling.service import poll_server
from partdash.servers.choices import ServerStatus
from tests.conftest import PAGE_READY_MS, log_in
from tests.services import MariaDB

pytestmark = pytest.mark.django_db


def sql(instance: MariaDB, *statements: str) -> tuple:
    """Run statements in one root session; return the last one's rows."""
    with closing(instance.connect()) as conn, conn.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        return cursor.fetchall()


# -- 1. the encoding, character by character ---------------------------------------------

# Every character of the table, ASCII, and a sweep of the rest of the Basic Multilingual
# Plane (written in hex): CJK, Hangul, Arabic, Hebrew, symbols, private use...
CHARACTERS = sorted(
    set(DECODE.values())
    | {chr(code) for code in range(1, 128)}
    | {chr(code) for code in range(0x80, 0x10000, 61) if not 0xD800 <= code <= 0xDFFF}
    | set("\u00a0×÷\u1ff4ẞſǅ中文한글עבריתالعربية☃\ufeff\ufffd\uffff")
)
# 40 characters written in hex take 200 bytes: file names stop at 255.
PER_NAME = 40


def test_the_encoding_agrees_with_the_server_for_every_character_of_its_table(
    mariadb_ps, new_schema
):
    schema = new_schema(mariadb_ps)
    # `_` last: a name may not end with a space.
    names = ["".join(CHARACTERS[i : i + PER_NAME]) + "_" for i in range(0, len(CHARACTERS), 40)]
    sql(mariadb_ps, *(f"CREATE TABLE {qualified(schema, name)} (id INT)" for name in names))

    tablespaces = {
        row[0]
        for row in sql(
            mariadb_ps,
            "SELECT NAME FROM information_schema.INNODB_SYS_TABLESPACES "
            f"WHERE NAME LIKE {string_literal(schema + '/%')}",
        )
    }
    assert tablespaces == {f"{schema}/{encode_filename(name)}" for name in names}
    decoded = {decode_filename(tablespace.split("/")[1]) for tablespace in tablespaces}
    listed = sql(
        mariadb_ps,
        "SELECT TABLE_NAME FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA = {string_literal(schema)}",
    )
    assert decoded == set(names) == {row[0] for row in listed}


# -- 2. polling tables with such names ------------------------------------------------------

LATIN, GREEK, CYRILLIC, CJK = (
    "café-événements",
    "Ελληνικά.σχήμα",
    "Кириллица #1",
    "数据 'q' @x`b`",
)


@dataclass(frozen=True)
class Table:
    schema: str
    name: str
    partitioning: str
    rows: int  # ids 1..rows

    @property
    def qualified(self) -> str:
        return qualified(self.schema, self.name)

    def statements(self) -> list[str]:
        """Create it and write ids 1..rows (the sequence engine's table, in any schema)."""
        return [
            f"CREATE TABLE {self.qualified} (id INT PRIMARY KEY) {self.partitioning}",
            f"INSERT INTO {self.qualified} SELECT seq "
            f"FROM {qualified(self.schema, f'seq_1_to_{self.rows}')}",
        ]


TABLES = [
    Table(LATIN, "café-événements", "PARTITION BY HASH (id) PARTITIONS 4", 200),
    # Two tables whose names differ only in case: two tables on Linux.
    Table(LATIN, "É", "PARTITION BY HASH (id) PARTITIONS 2", 10),
    Table(LATIN, "é", "PARTITION BY HASH (id) PARTITIONS 3", 30),
    Table(LATIN, "a#P#b", "PARTITION BY KEY (id) PARTITIONS 2", 20),
    # `#P#` in both the table's and a partition's name: its statistics row is
    # `x#p#y#P#p#P#q`, which only the tablespace list reads right.
    Table(LATIN, "x#p#y", "PARTITION BY HASH (id) (PARTITION `p#P#q`, PARTITION `Ünï`)", 20),
    Table(
        GREEK,
        "Παραγγελίες 2024",
        "PARTITION BY RANGE (id) (PARTITION `Ιανουάριος` VALUES LESS THAN (10), "
        "PARTITION `ΟΔΟΣ` VALUES LESS THAN (20), PARTITION `ΜΈΓΙΣΤΟ` VALUES LESS THAN MAXVALUE)",
        30,
    ),
    # Compressed: INNODB_CMP_PER_INDEX spells `συμπίεση#P#α#P#1` too.
    Table(
        GREEK,
        "συμπίεση",
        "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4 "
        "PARTITION BY HASH (id) (PARTITION `α#P#1`, PARTITION `Β`)",
        200,
    ),
    Table(
        CYRILLIC,
        "Заказы.архив",
        "PARTITION BY RANGE (id) SUBPARTITION BY HASH (id) ("
        "PARTITION `Зима` VALUES LESS THAN (10) (SUBPARTITION `Январь`, SUBPARTITION `Февраль`),"
        " PARTITION `Лето` VALUES LESS THAN MAXVALUE (SUBPARTITION `Июль`, SUBPARTITION `Август`))",
        40,
    ),
    Table(
        CJK, '订单 "表" $5', "PARTITION BY HASH (id) (PARTITION `分区一`, PARTITION `分区二`)", 20
    ),
    Table(
        CJK,
        "it's `tick` @home",
        "PARTITION BY RANGE (id) (PARTITION `P-0` VALUES LESS THAN (5), "
        "PARTITION `p.1` VALUES LESS THAN MAXVALUE)",
        10,
    ),
]
SCHEMAS = sorted({table.schema for table in TABLES})


@pytest.fixture(scope="module")
def named_tables(mariadb_ps: MariaDB) -> Iterator[list[Table]]:
    """The tables above, written to (statistics analysed, pages flushed to their files so
    every partition has I/O), for the module's tests; dropped after them."""
    drop = [f"DROP DATABASE IF EXISTS {identifier(schema)}" for schema in SCHEMAS]
    sql(
        mariadb_ps,
        *drop,
        *(f"CREATE DATABASE {identifier(schema)}" for schema in SCHEMAS),
        *(statement for table in TABLES for statement in table.statements()),
        f"ANALYZE TABLE {', '.join(t.qualified for t in TABLES)}",
        f"FLUSH TABLES {', '.join(t.qualified for t in TABLES)} FOR EXPORT",
        "UNLOCK TABLES",
    )
    yield TABLES
    sql(mariadb_ps, *drop)


def information_schema(instance: MariaDB, table: Table) -> list[tuple[str, str]]:
    return list(
        sql(
            instance,
            "SELECT PARTITION_NAME, IFNULL(SUBPARTITION_NAME, '') "
            "FROM information_schema.PARTITIONS "
            f"WHERE TABLE_SCHEMA = {string_literal(table.schema)} "
            f"AND TABLE_NAME = {string_literal(table.name)} ORDER BY PARTITION_ORDINAL_POSITION, "
            "SUBPARTITION_ORDINAL_POSITION",
        )
    )


def count(instance: MariaDB, table: Table, partition: Partition) -> int:
    part = partition.subpartition or partition.name
    return sql(instance, f"SELECT COUNT(*) FROM {table.qualified} PARTITION ({identifier(part)})")[
        0
    ][0]


def stored(server, table: Table) -> PartitionedTable:
    return PartitionedTable.objects.get(server=server, schema=table.schema, name=table.name)


def partitions(server, table: Table) -> list[Partition]:
    return list(stored(server, table).partitions.filter(dropped_at=None))


def figures(server) -> dict[tuple, tuple]:
    return {
        (t.schema, t.name, p.name, p.subpartition): (
            p.rows,
            p.data_bytes,
            p.file_bytes,
            p.compress_ops,
        )
        for t in TABLES
        for p in partitions(server, t)
    }


def test_a_root_poll_reads_every_figure_of_every_named_partition(
    mariadb_ps, make_server, named_tables
):
    server = make_server(mariadb_ps)
    report = poll_server(server)
    server.refresh_from_db()

    assert report.ok and report.warnings == []
    assert (server.status, server.last_error) == (ServerStatus.OK, "")
    for table in named_tables:
        live = partitions(server, table)
        assert [(p.name, p.subpartition) for p in live] == information_schema(mariadb_ps, table)
        assert stored(server, table).partition_count == len(live)
        for partition in live:
            where = (table.schema, table.name, partition.name, partition.subpartition)
            assert partition.rows == count(mariadb_ps, table, partition), where
            assert partition.data_bytes and partition.file_bytes, where
            assert partition.write_ops and partition.write_bytes, where
            assert partition.read_ops is not None, where
            if "COMPRESSED" in table.partitioning:
                assert partition.compress_ops, where
    upper, lower = (stored(server, t) for t in named_tables[1:3])
    assert (upper.name, upper.partition_count, lower.name, lower.partition_count) == (
        "É",
        2,
        "é",
        3,
    )

    # Nothing changed: the next poll finds every table where it left it.
    again = poll_server(server)
    assert again.ok and again.warnings == []
    assert (again.definitions_read, again.stored) == (0, 0)


def test_the_api_serves_the_names_as_the_server_spells_them(
    mariadb_ps, make_server, named_tables, admin_client
):
    server = make_server(mariadb_ps)
    assert poll_server(server).ok

    listed = admin_client.get(f"/api/v1/servers/{server.pk}/tables/").json()
    by_name = {(t["schema"], t["name"]): t for t in listed}
    for table in named_tables:
        row = by_name[(table.schema, table.name)]
        assert row["id"] == stored(server, table).pk
        assert row["rows"] == table.rows and row["file_bytes"] > 0
        served = admin_client.get(f"/api/v1/tables/{row['id']}/partitions/").json()
        assert [(p["name"], p["subpartition"]) for p in served] == information_schema(
            mariadb_ps, table
        )
        assert all(p["file_bytes"] and p["rows"] is not None for p in served)


def partitioned_schemas(instance: MariaDB) -> list[str]:
    rows = sql(
        instance,
        "SELECT DISTINCT TABLE_SCHEMA FROM information_schema.PARTITIONS "
        "WHERE PARTITION_NAME IS NOT NULL",
    )
    return [row[0] for row in rows]


def test_the_least_privilege_account_sees_every_named_table_as_root_does(
    mariadb_ps, make_server, named_tables
):
    """README's GRANTs, SHOW VIEW on every schema with partitioned tables."""
    user, password = f"mon_{uuid4().hex[:8]}", uuid4().hex
    account = f"{string_literal(user)}@'%'"
    sql(
        mariadb_ps,
        f"CREATE USER {account} IDENTIFIED BY {string_literal(password)}",
        f"GRANT PROCESS ON *.* TO {account}",
        f"GRANT SELECT ON mysql.innodb_table_stats TO {account}",
        f"GRANT SELECT ON performance_schema.* TO {account}",
        *(
            f"GRANT SHOW VIEW ON {identifier(schema)}.* TO {account}"
            for schema in partitioned_schemas(mariadb_ps)
        ),
    )
    try:
        root = make_server(mariadb_ps, name="as-root")
        monitor = make_server(mariadb_ps, name="as-monitor")
        monitor.user = user
        monitor.set_password(password)
        monitor.save()
        assert poll_server(root).ok
        report = poll_server(monitor)
    finally:
        sql(mariadb_ps, f"DROP USER {account}")

    monitor.refresh_from_db()
    assert report.ok and report.warnings == []
    assert monitor.status == ServerStatus.OK
    assert figures(monitor) == figures(root)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_server_page_links_every_named_table_to_its_page(
    built_frontend, page, live_server, admin_user, mariadb_ps, make_server, named_tables
):
    server = make_server(mariadb_ps)
    assert poll_server(server).ok
    log_in(page, live_server)
    page.goto(f"{live_server.url}/servers/{server.pk}/?page_size=100")
    page.wait_for_selector("#server-page[data-ready]", state="attached", timeout=PAGE_READY_MS)

    for table in named_tables:
        pk = stored(server, table).pk
        link = page.locator(f"#tables tbody tr[data-id='{pk}'] a.table-link")
        assert link.inner_text() == f"{table.schema}.{table.name}"
        assert link.get_attribute("href") == f"/tables/{pk}/"
    assert page.console_errors == []

    # One link clicked (the server page's own navigation); every other table's page opened
    # at its link's address, checked above: drawing the server page again before each
    # click cost 1.8 s of this test's 8.7 s of CPU, for links that differ only in address.
    first = stored(server, named_tables[0]).pk
    page.locator(f"#tables tbody tr[data-id='{first}'] a.table-link").click()
    for index, table in enumerate(named_tables):
        pk = stored(server, table).pk
        if index:
            page.goto(f"{live_server.url}/tables/{pk}/")
        page.wait_for_url(f"{live_server.url}/tables/{pk}/")
        page.wait_for_selector("#table-page[data-ready]", state="attached", timeout=PAGE_READY_MS)
        assert page.locator("#table-name").inner_text() == f"{table.schema}.{table.name}"
        assert page.title().startswith(f"{table.schema}.{table.name} ")
    assert page.console_errors == []


def test_tablespace_names_of_the_named_tables_split_into_their_names(mariadb_ps, named_tables):
    """The source the others are matched against, read directly."""
    rows = sql(
        mariadb_ps,
        "SELECT NAME FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE '%#P#%'",
    )
    seen = {split_tablespace(row[0]) for row in rows}
    for table in named_tables:
        for partition, sub in information_schema(mariadb_ps, table):
            assert (table.schema, table.name, partition, sub) in seen


def test_in_memory_statistics_reach_named_partitions_and_never_a_cut_name(
    mariadb_ps, make_server, settings
):
    """INNODB_SYS_TABLESTATS spells names encoded and cuts them at 64 characters: a cut
    `...#P#p10` reads `...#P#p1`, another partition's name."""
    settings.PARTDASH_READ_TABLESTATS = "on"
    schema = f"stats_ü_{uuid4().hex[:6]}"
    prefix = f"{encode_filename(schema)}/"
    # The long table's name for p10 is 65 characters, cut to its p1's 64.
    long_name = "Ω" + "x" * (65 - len(prefix) - len(encode_filename("Ω")) - len("#P#p10"))
    short = Table(schema, "Ü#1", "STATS_AUTO_RECALC=0 PARTITION BY HASH (id) PARTITIONS 2", 9)
    long = Table(
        schema,
        long_name,
        "STATS_AUTO_RECALC=0 PARTITION BY RANGE (id) ("
        "PARTITION p1 VALUES LESS THAN (10), PARTITION p10 VALUES LESS THAN MAXVALUE)",
        100,
    )
    sql(
        mariadb_ps,
        f"CREATE DATABASE {identifier(schema)}",
        *short.statements(),
        *long.statements(),
    )
    try:
        server = make_server(mariadb_ps)
        assert poll_server(server).ok
        changed = {
            (t.name, p.name): (p.modified_counter, count(mariadb_ps, t, p))
            for t in (short, long)
            for p in partitions(server, t)
        }
    finally:
        sql(mariadb_ps, f"DROP DATABASE {identifier(schema)}")

    assert changed[("Ü#1", "p0")] == (4, 4) and changed[("Ü#1", "p1")] == (5, 5)
    assert changed[(long_name, "p1")][0] in (0, 9)  # never p10's 91
    assert changed[(long_name, "p10")][0] in (0, 91)
