"""Builders for the rows partdash stores, written straight to the database: no MariaDB.

Two kinds. Rows one at a time (`server`, `table`, `partition`, `snapshot`, `alert`,
`silence`, `notification`), with the values a poll of the tests' private MariaDB 10.11
stores wherever a test does not say otherwise. And `poll`: what a poll of a server
holding some tables (`hash_table`, `range_table`, `subpartitioned`) stores, through
partdash's own store, analysis and alert evaluation (the stages `poll_server` runs after
collecting), so every figure the API and the pages derive (health, findings, history,
the recent activity behind hotspots and heatmaps) is the one a real poll of those tables
gives. The tables are plain values: a test changes their rows between polls, as writes
and an ANALYZE TABLE would.
"""

from dataclasses import dataclass, field
from datetime import date, timedelta
from itertools import count
from uuid import uuid4

from django.conf import settings
from django.utils import timezone

from partdash.alerts import windows
from partdash.alerts.models import Alert, MaintenanceWindow, Notification, Silence
from partdash.collector.collect import Collection, PartitionFigures, table_key
from partdash.lib.quoting import account
from partdash.metrics.models import (
    SAMPLED_FIGURES,
    Partition,
    PartitionedTable,
    PartitionSample,
    ServerSnapshot,
)
from partdash.metrics.store import partition_key
from partdash.mysql.catalogue import (
    CMP_PER_INDEX,
    FILE_IO,
    INNODB_CMP,
    INNODB_TABLE_STATS,
    TABLESPACES,
    Shortfall,
    privilege_shortfall,
    setting_shortfall,
)
from partdash.mysql.choices import Flavor
from partdash.mysql.dialects import MARIADB
from partdash.mysql.names import PartitionName, identity
from partdash.mysql.sources.definitions import PartitionDefinition, TableDefinition
from partdash.mysql.sources.server_facts import ServerFacts
from partdash.polling import service
from partdash.servers.models import Server, ServerGroup
from tests.health.builders import to_days

_serial = count(1)
_space_ids = count(5)  # InnoDB's first file-per-table tablespace ids go to system tables

# As the private servers of tests/services.py answer a poll (Debian 12's MariaDB).
MARIADB_VERSION = "10.11.19-MariaDB-0+deb12u1"
VARIABLES = {
    "innodb_buffer_pool_size": "67108864",
    "innodb_cmp_per_index_enabled": "OFF",
    "innodb_file_per_table": "ON",
    "innodb_page_size": "16384",
    "innodb_stats_persistent": "ON",
    "lower_case_table_names": "0",
    "open_files_limit": "20000",
    "performance_schema": "OFF",
    "table_definition_cache": "400",
    "table_open_cache": "2000",
}
STATUS = {
    "open_tables": "22",
    "opened_tables": "29",
    "performance_schema_file_handles_lost": "0",
    "performance_schema_file_instances_lost": "0",
    "uptime": "60",
}
PAGE = 16384
ZIP_PAGE = 8192  # ROW_FORMAT=COMPRESSED's default KEY_BLOCK_SIZE
ROWS_PER_PAGE = 500  # short rows (an INT and a few characters) in a 16 KiB page
FILE_OVERHEAD_PAGES = 3  # a file-per-table tablespace's header pages; 4 pages at least

RUNWAY_FIX = {
    "advice": "Add monthly partitions before rows land in the catch-all.",
    "sql": "ALTER TABLE `shop`.`orders` REORGANIZE PARTITION `p_max` INTO (...)",
    "safety": "copies",
    "rows": 1200,
    "bytes": 5 << 20,
}


# --- rows one at a time -----------------------------------------------------------------


def server(name: str | None = None, password: str = "", enabled: bool = False, **fields) -> Server:
    """A registered server, never polled. Saving it queues no poll even when `enabled`
    (that is set afterwards, without the save signal): no Celery worker of a later test
    polls a server of this one."""
    name = name or f"db{next(_serial)}"
    fields = {"host": "127.0.0.1", "user": "monitor", **fields}
    made = Server(name=name, enabled=False, **fields)
    made.set_password(password)
    made.save()
    if enabled:
        Server.objects.filter(pk=made.pk).update(enabled=True)
        made.enabled = True
    return made


def table(on: Server, schema: str = "shop", name: str = "orders", **fields) -> PartitionedTable:
    fields = {"method": "RANGE", "partition_count": 4, "first_seen_at": timezone.now(), **fields}
    return PartitionedTable.objects.create(server=on, schema=schema, name=name, **fields)


def partition(of: PartitionedTable, name: str, ordinal: int, **fields) -> Partition:
    """One partition of `of` with its latest figures, keyed as the store keys it; a small
    file-per-table tablespace of 16 KiB pages unless told otherwise."""
    fields = {
        "page_size": PAGE,
        "rows": 0,
        "data_bytes": PAGE,
        "index_bytes": 0,
        "file_bytes": 4 * PAGE,
        "allocated_bytes": 4 * PAGE,
        "space_id": next(_space_ids),
        "stats_updated_at": timezone.now().replace(microsecond=0),
        **fields,
    }
    key = partition_key(name, fields.get("subpartition", ""))
    return Partition.objects.create(table=of, key=key, name=name, ordinal=ordinal, **fields)


def snapshot(on: Server, ago: timedelta = timedelta(0), **fields) -> ServerSnapshot:
    """One stored poll of `on`, `ago` ago, with what a poll of a private MariaDB
    (performance_schema OFF) reads; `pressure` is empty unless given (`poll` has it
    analysed)."""
    made = snapshot_row(on, ago, **fields)
    made.save()
    return made


def snapshot_row(on: Server, ago: timedelta = timedelta(0), **fields) -> ServerSnapshot:
    """`snapshot`, unsaved: thousands are stored with one bulk_create."""
    variables = {**VARIABLES, **fields.pop("variables", {})}
    sources, shortfalls = _sources_read(ServerFacts(variables), compressed=False)
    fields = {
        "taken_at": timezone.now() - ago,
        "poll_id": uuid4().hex,
        "flavor": Flavor.MARIADB,
        "version": MARIADB_VERSION,
        "variables": variables,
        "status_counters": dict(STATUS),
        "sources": sources,
        "warnings": [shortfall.as_dict() for shortfall in shortfalls],
        "files_cover_partitions": True,
        "seconds": 0.05,
        **fields,
    }
    return ServerSnapshot(server=on, **fields)


def latest_from_samples(of: PartitionedTable) -> None:
    """Each partition's latest figures as its samples leave them, as the store keeps
    them (a figure never sampled stays as built)."""
    for partition in of.partitions.all():
        latest = {}
        for name in SAMPLED_FIGURES:
            value = (
                PartitionSample.objects.filter(partition=partition, **{f"{name}__isnull": False})
                .order_by("-snapshot__taken_at")
                .values_list(name, flat=True)
                .first()
            )
            if value is not None:
                latest[name] = value
        Partition.objects.filter(pk=partition.pk).update(**latest)


def sample(of: Partition, at: ServerSnapshot, **figures) -> PartitionSample:
    """What poll `at` stored of partition `of`: the `figures` that changed (the others
    NULL: unchanged). Unsaved, so a test can store hundreds with one bulk_create."""
    return PartitionSample(partition=of, snapshot=at, **figures)


def alert(
    on: Server,
    rule: str = "runway",
    state: str = Alert.State.FIRING,
    of: PartitionedTable | None = None,
    ago: timedelta = timedelta(hours=1),
    **fields,
) -> Alert:
    """An alert on a table (`of`), or the server's own one (no table)."""
    now = timezone.now()
    where = {"partitioned_table": of, "schema": of.schema, "table": of.name} if of else {}
    fired = {"fired_at": now - ago, "notified_at": now - ago} if state != "pending" else {}
    resolved = {"resolved_at": now} if state == Alert.State.RESOLVED else {}
    fields = {
        "severity": "critical",
        "value": 3.0,
        "threshold": 14.0,
        "message": f"{rule} on {of or on}",
        **where,
        **fired,
        **resolved,
        **fields,
    }
    return Alert.objects.create(server=on, rule=rule, state=state, started_at=now - ago, **fields)


def silence(hours: float = 4, starts_ago: float = 0, **fields) -> Silence:
    """A silence in force from `starts_ago` hours ago for `hours` hours."""
    starts_at = timezone.now() - timedelta(hours=starts_ago)
    return Silence.objects.create(
        starts_at=starts_at, ends_at=starts_at + timedelta(hours=hours), **fields
    )


def window_now(server: Server, minutes: int = 30) -> MaintenanceWindow:
    """A daily maintenance window of the server whose occurrence began this minute (UTC),
    planned: its silence is in force."""
    now = timezone.now()
    window = MaintenanceWindow.objects.create(
        name="now",
        rrule=f"FREQ=DAILY;BYHOUR={now.hour};BYMINUTE={now.minute}",
        duration_minutes=minutes,
        timezone="UTC",
        server=server,
    )
    windows.plan(window)
    return window


def notification(on: Server, error: str = "", attempts: int = 1, **fields) -> Notification:
    serial = next(_serial)
    sent = {} if error else {"sent_at": timezone.now()}
    return Notification.objects.create(
        server=on,
        evaluation=f"eval-{serial}",
        message_id=f"<partdash-{serial}@test>",
        recipients="dba@example.com",
        subject=f"[partdash] {on.name}: FIRING runway shop.orders",
        attempts=attempts,
        last_error=error,
        **{**sent, **fields},
    )


# --- tables as a server holds them, and polls of them -----------------------------------


@dataclass
class Part:
    """One partition (or subpartition) as the cheap sources read it: rows and pages from
    mysql.innodb_table_stats, its file from INNODB_SYS_TABLESPACES, and its file's
    cumulative I/O from performance_schema (read only where that is ON)."""

    name: str
    rows: int = 0
    description: str | None = None  # a RANGE or LIST bound as PARTITIONS spells it
    subpartition: str = ""
    data_pages: int | None = None  # None: ROWS_PER_PAGE rows a page
    index_pages: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    modified: int = 0  # MODIFIED_COUNTER (read where PARTDASH_READ_TABLESTATS=on)
    space_id: int = field(default_factory=lambda: next(_space_ids))

    def pages(self) -> int:
        return self.data_pages or max(1, -(-self.rows // ROWS_PER_PAGE))


@dataclass
class Table:
    """A partitioned table on a monitored server: its definition as PARTITIONS gives it
    and its partitions in definition order."""

    schema: str
    name: str
    method: str
    expression: str
    parts: list[Part]
    subpartition_method: str = ""
    subpartition_expression: str = ""
    compressed: bool = False  # ROW_FORMAT=COMPRESSED

    def part(self, name: str) -> Part:
        (found,) = [p for p in self.parts if p.name == name]
        return found

    @property
    def create_options(self) -> str:
        """As information_schema.TABLES.CREATE_OPTIONS says it."""
        return "row_format=COMPRESSED partitioned" if self.compressed else "partitioned"


def hash_table(schema: str, name: str, rows: list[int], method: str = "HASH", **fields) -> Table:
    """A HASH (or KEY) table on `id` with these rows in p0, p1, ..."""
    parts = [Part(f"p{i}", n) for i, n in enumerate(rows)]
    return Table(schema, name, method, "`id`", parts, **fields)


def range_table(
    schema: str, name: str, bounds: list[tuple[str, str, int]], expression: str = "`id`"
) -> Table:
    """A RANGE table: (partition, bound as PARTITIONS spells it, rows) in order; a bound
    `MAXVALUE` makes the catch-all; `day_bound` spells a TO_DAYS one."""
    parts = [Part(part, rows, description) for part, description, rows in bounds]
    return Table(schema, name, "RANGE", expression, parts)


def subpartitioned(
    schema: str, name: str, bounds: list[tuple[str, str, int]], subpartitions: int
) -> Table:
    """RANGE on `y` subpartitioned by HASH on `id`: each partition's rows spread evenly
    over its subpartitions, named as MariaDB names them (p2024sp0, ...)."""
    parts = [
        Part(part, rows // subpartitions, description, f"{part}sp{n}")
        for part, description, rows in bounds
        for n in range(subpartitions)
    ]
    return Table(schema, name, "RANGE", "`y`", parts, "HASH", "`id`")


def day_bound(day: date) -> str:
    """A `VALUES LESS THAN (TO_DAYS(day))` bound as PARTITIONS spells it."""
    return str(to_days(day))


def poll(
    server: Server,
    *tables: Table,
    hidden: tuple[Table, ...] = (),
    ungranted: tuple[str, ...] = (),
    **variables,
) -> ServerSnapshot:
    """Store what a successful poll of `server` reads when it holds `tables`, its
    settings being VARIABLES with `variables` instead. `hidden`: tables the account
    cannot see in information_schema; `ungranted`: the sources it may not read (keys of
    `catalogue` sources that list no partitions: file_io, innodb_cmp, cmp_per_index).
    The statistics are as of the poll (as after an ANALYZE TABLE). Returns the poll's
    snapshot; `server` is refreshed."""
    service.MEMORIES.forget(server.pk)  # read the previous poll back, whatever was held
    collection = _collection(server, {**VARIABLES, **variables}, tables, hidden, ungranted)
    # What `poll_server` does once it has collected: the same two functions, so that what
    # is stored cannot drift from what a poll stores.
    result, failed, _ = service._store_analyse_evaluate(server, collection, uuid4().hex, 0.05)
    assert failed is None, failed
    service._record_success(server, collection, result.snapshot.taken_at)
    server.record_tls(False)  # the private servers offer no TLS
    server.refresh_from_db()
    return result.snapshot


def _sources_read(
    facts: ServerFacts, compressed: bool, ungranted: tuple[str, ...] = ()
) -> tuple[dict[str, bool], list[Shortfall]]:
    """Whether a poll reads each source, and its shortfalls in the poll's order, as
    `collect` records them: a source not granted or whose required setting is OFF is
    not read; one read with its optional setting OFF gives less (`_check_settings`)."""
    wanted = [TABLESPACES, INNODB_TABLE_STATS, FILE_IO, INNODB_CMP]
    if compressed or facts.is_on(CMP_PER_INDEX.setting):
        wanted.append(CMP_PER_INDEX)
    off = {s.key: s.setting in facts.variables and not facts.is_on(s.setting) for s in wanted}
    sources, shortfalls = {}, []
    for source in wanted:
        if source.key in ungranted:
            shortfalls.append(privilege_shortfall(source, facts.account, MARIADB))
        if off[source.key] and source.setting_required:
            shortfalls.append(setting_shortfall(source))
        sources[source.key] = source.key not in ungranted and not (
            off[source.key] and source.setting_required
        )
    shortfalls += [setting_shortfall(s) for s in wanted if sources[s.key] and off[s.key]]
    return sources, shortfalls


def _collection(server: Server, variables: dict, tables, hidden, ungranted) -> Collection:
    now = timezone.now()
    facts = ServerFacts(
        variables=variables,
        status=dict(STATUS),
        clock=int(now.timestamp()),
        account=account(f"{server.user}@%"),
    )
    collection = Collection(Flavor.MARIADB, MARIADB_VERSION, MARIADB, facts)
    every = (*tables, *hidden)
    compressed = any(t.compressed for t in every)
    collection.sources, collection.shortfalls = _sources_read(facts, compressed, ungranted)
    # Rows changed: read where switched on (the counters of `Part.modified`), off where
    # off; by default not said, so a table is judged on what its figures hold.
    mode = settings.PARTDASH_READ_TABLESTATS
    if mode != "auto":
        collection.tablestats_plan = "read" if mode == "on" else "off"
        if mode == "on":
            collection.sources["tablestats"] = True
    zipped = sum(p.pages() for t in every if t.compressed for p in t.parts)
    collection.innodb_cmp = [
        {
            "page_size": size,
            **dict.fromkeys(("compress_ops", "compress_ops_ok"), zipped * (size == ZIP_PAGE)),
            **dict.fromkeys(("compress_time", "uncompress_ops", "uncompress_time"), 0),
        }
        for size in (1024, 2048, 4096, 8192, 16384)
    ]
    for each in every:
        for part in each.parts:
            figures = _figures(each, part, now, collection.sources)
            collection.partitions[figures.key] = figures
    collection.stats_watermark = facts.clock
    collection.files_cover_partitions = True
    # Definitions are read for new or changed tables, hidden ones excepted (PARTITIONS
    # shows the account nothing of them).
    known, signatures = service.known_signatures(server), collection.sign()
    for each in tables:
        key = table_key(each.schema, each.name)
        if known.get(key) != signatures[key]:
            collection.definitions[key] = _definition(each)
    collection.hidden = {table_key(t.schema, t.name) for t in hidden}
    collection.finish()
    return collection


def _figures(of: Table, part: Part, now, read: dict[str, bool]) -> PartitionFigures:
    name = PartitionName(of.schema, of.name, part.name, part.subpartition)
    key, _path, slot = identity(name)
    page = ZIP_PAGE if of.compressed else PAGE
    pages = part.pages() + part.index_pages
    file_bytes = max(4, pages + FILE_OVERHEAD_PAGES) * page
    figures = PartitionFigures(
        name,
        key,
        slot,
        rows=part.rows,
        clustered_pages=part.pages(),
        other_pages=part.index_pages,
        data_bytes=part.pages() * page,
        index_bytes=part.index_pages * page,
        stats_updated_at=now.replace(microsecond=0),
        space_id=part.space_id,
        file_bytes=file_bytes,
        allocated_bytes=file_bytes,
        page_size=page,
        row_format="Compressed" if of.compressed else "",
    )
    if read[FILE_IO.key]:
        figures.read_bytes, figures.write_bytes = part.read_bytes, part.write_bytes
        figures.read_ops, figures.write_ops = part.read_bytes // PAGE, part.write_bytes // PAGE
    if read.get("tablestats"):
        figures.modified_counter = part.modified
    if read.get(CMP_PER_INDEX.key) and of.compressed:
        figures.compress_ops = figures.compress_ops_ok = part.pages()
        figures.compress_time = figures.uncompress_ops = figures.uncompress_time = 0
    return figures


def _definition(of: Table) -> TableDefinition:
    ordinals: dict[str, int] = {}
    partitions = []
    for part in of.parts:
        ordinal = ordinals.setdefault(part.name, len(ordinals) + 1)
        within = sum(1 for p in partitions if p.name == part.name) + 1
        partitions.append(
            PartitionDefinition(
                part.name,
                part.subpartition,
                ordinal,
                within if part.subpartition else None,
                part.description,
            )
        )
    return TableDefinition(
        of.schema,
        of.name,
        of.method,
        of.expression,
        of.subpartition_method,
        of.subpartition_expression,
        of.create_options,
        partitions,
    )


# --- a fleet in bulk ------------------------------------------------------------------

FLEET_STATUSES = ["ok", "degraded", "unreachable", "never"]


def _skew_finding(score: float) -> dict:
    return {"kind": "skew", "severity": "warning", "score": score, "message": "", "fix": None}


def fleet_of(size: int) -> list[Server]:
    """`size` servers, in bulk: every fourth status in turn, tags `even`/`odd` (and
    `all`), two tables each with a finding; every tenth server a firing critical alert,
    every tenth after it a firing warning; the first half in group `half`."""
    servers = Server.objects.bulk_create(
        Server(
            name=f"db{n:04}",
            host=f"10.0.{n // 250}.{n % 250}",
            user="monitor",
            status=FLEET_STATUSES[n % 4],
            tags=f"{'even' if n % 2 == 0 else 'odd'}, all",
        )
        for n in range(size)
    )
    now = timezone.now()
    tables = PartitionedTable.objects.bulk_create(
        PartitionedTable(
            server=server,
            schema="shop",
            name=f"t{k}",
            method="RANGE",
            partition_count=4,
            first_seen_at=now,
            score=n + k + 1,
            health={"findings": [_skew_finding(n + k + 1)]},
        )
        for n, server in enumerate(servers)
        for k in range(2)
    )
    alerts = [
        Alert(
            server=servers[n],
            partitioned_table=tables[2 * n],
            rule="skew",
            severity="critical" if n % 10 == 0 else "warning",
            state=Alert.State.FIRING,
            started_at=now,
            fired_at=now,
        )
        for n in range(size)
        if n % 10 in (0, 1)
    ]
    Alert.objects.bulk_create(alerts)
    half = ServerGroup.objects.create(name="half", kind="replicas")
    half.servers.set(servers[: size // 2])
    return servers
