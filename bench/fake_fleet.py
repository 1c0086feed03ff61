"""A fleet of wire-level fake MariaDB servers serving generated catalogues (issue 41's
simulated fleet): every server a port of its own, all of them in this one asyncio
process, each answering exactly the statements a partdash poll sends (recorded from
the general log of a real MariaDB 10.11 polled by partdash) from a catalogue made up
from its number:

- sizes spread geometrically from 10 to 20,000 partitions (1,000 servers: about
  2,630,000 partitions), in tables of 10 to 365 partitions, HASH and RANGE;
- every `--interval` seconds a share of each server's partitions is written
  (`--changing`, 2% by default: their file grows a page, their rows, statistics time
  and modified counter move), so consecutive polls see what a busy fleet shows;
- about a tenth of the tables with a finding (one partition six times the others);
- a few servers slow (every wide read answered `--slow-seconds` late), a few down
  (the port refuses connections), one that restarts every `--reset-minutes`: its
  uptime and status counters start again from zero.

performance_schema is OFF on every server, as MariaDB ships it: file I/O and statement
digests are read as empty, as partdash reads them there. The tablespace list's bucket
aggregates (`partdash.mysql.incremental`) are computed here as MariaDB computes them:
the first 64 bits of SHA1(CONCAT_WS(',', ...)) XORed per bucket of 8 space ids.

`python bench/fake_fleet.py --servers 1000 --json FILE` listens, writes FILE (a JSON
list of {name, port, partitions, tables, kind}) once every port listens, and serves
until TERM or Ctrl-C. Sent a SIGUSR1 it prints what it answered so far.
"""

import argparse
import array
import asyncio
import hashlib
import json
import math
import re
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fake_mysql import (  # noqa: E402
    COM_QUERY,
    COM_QUIT,
    EOF_PACKET,
    LONGLONG,
    OK,
    VAR_STRING,
    column_definition,
    greeting,
    lenenc,
    top_level_columns,
)

VERSION = "10.11.6-MariaDB-log"
SCHEMA = "app"
PAGE = 16384
BUCKET_ROWS = 8  # SPACE DIV 8, as partdash.mysql.incremental buckets the tablespaces
TABLE_SIZES = (10, 24, 64, 128, 365)
SMALLEST, LARGEST = 10, 20_000


def text(value: object) -> bytes:
    return lenenc(str(value).encode())


def result_set(names: list[str], rows: list[tuple]) -> list[bytes]:
    """The packets of a text-protocol result set (EOF-terminated, as a client without
    CLIENT_DEPRECATE_EOF reads it); a column's type from its first non-null value."""
    kinds = []
    for index in range(len(names)):
        first = next((row[index] for row in rows if row[index] is not None), None)
        kinds.append(LONGLONG if isinstance(first, int) else VAR_STRING)
    packets = [bytes([len(names)])]
    packets += [column_definition(name, kind) for name, kind in zip(names, kinds, strict=True)]
    packets.append(EOF_PACKET)
    for row in rows:
        packets.append(b"".join(b"\xfb" if v is None else text(v) for v in row))
    packets.append(EOF_PACKET)
    return packets


def error(code: int, message: str) -> list[bytes]:
    return [b"\xff" + struct.pack("<H", code) + b"#HY000" + message.encode()]


def select_list(sql: str) -> list[str]:
    """The top-level expressions of a SELECT's column list, as its column names."""
    end = sql.find(" FROM ")
    return top_level_columns(sql[len("SELECT ") : end if end > 0 else len(sql)])


@dataclass
class Table:
    name: str
    method: str  # HASH or RANGE
    first: int  # index of its first partition in the server's arrays
    count: int


@dataclass
class Catalogue:
    """One fake server's catalogue and counters; partition i's figures derive from its
    number and how many times it was written (`writes[i]`)."""

    number: int
    name: str
    partitions: int
    kind: str = "healthy"  # healthy, slow, down, resetting
    tables: list[Table] = field(default_factory=list)
    writes: array.array = field(default_factory=lambda: array.array("I"))
    updated: array.array = field(default_factory=lambda: array.array("I"))
    modified: array.array = field(default_factory=lambda: array.array("I"))
    started: float = field(default_factory=time.time)
    tick: int = 0
    handler_writes: int = 0
    dirty: set = field(default_factory=set)
    aggregates: dict = field(default_factory=dict)

    def build(self, now: float) -> "Catalogue":
        size = TABLE_SIZES[self.number % len(TABLE_SIZES)]
        first = 0
        while first < self.partitions:
            count = min(size, self.partitions - first)
            method = "RANGE" if len(self.tables) % 3 == 0 else "HASH"
            self.tables.append(Table(f"t{len(self.tables):04d}", method, first, count))
            first += count
        self.writes = array.array("I", bytes(4 * self.partitions))
        self.modified = array.array("I", bytes(4 * self.partitions))
        self.updated = array.array("I", [int(now) - 86400] * self.partitions)
        self.dirty = set(range(self.buckets()))
        return self

    def buckets(self) -> int:
        return (self.partitions + 10 + BUCKET_ROWS - 1) // BUCKET_ROWS + 1

    def advance(self, now: float, interval: float, share: float) -> None:
        """Write `share` of the partitions once per interval elapsed since the last look."""
        tick = int(now // interval)
        if self.tick == 0:
            self.tick = tick
        if self.kind == "resetting" and now - self.started > RESET_SECONDS:
            self.started, self.handler_writes = now, 0
            self.modified = array.array("I", bytes(4 * self.partitions))
        while self.tick < tick:
            self.tick += 1
            changed = max(1, int(self.partitions * share))
            step = max(1, self.partitions // changed)
            offset = (self.tick * 7919 + self.number) % step
            for index in range(offset, self.partitions, step):
                self.writes[index] += 1
                self.modified[index] += 100
                self.updated[index] = int(now)
                self.dirty.add((index + 10) // BUCKET_ROWS)
            self.handler_writes += 100 * changed

    # -- the rows partdash reads ---------------------------------------------------------

    def partition_names(self):
        """(index, table, partition name) for every partition, in space id order."""
        for table in self.tables:
            for ordinal in range(table.count):
                yield table.first + ordinal, table, f"p{ordinal}"

    def rows_of(self, index: int, table: Table) -> int:
        """Even within a table but for a few: HASH spreads rows, RANGE tables keep their
        last three partitions (two ahead, MAXVALUE) empty; one table in ten has a
        partition six times the others (skew), so about a tenth of the tables has a
        finding, as on a fleet looked after."""
        ordinal = index - table.first
        number = int(table.name[1:])
        if table.method == "RANGE" and ordinal >= table.count - 3 and table.count > 3:
            return 0
        base = 2000 + (number * 7919 % 40) * 500
        if number % 10 == 7 and ordinal == 0:
            base *= 6
        return base + (index * 2654435761 % 61) - 30 + 100 * self.writes[index]

    def tablespace(self, index: int, table: Table, partition: str) -> tuple:
        pages = 6 + self.rows_of(index, table) // 100
        return (
            f"{SCHEMA}/{table.name}#P#{partition}",
            index + 10,
            pages * PAGE,
            pages * PAGE,
            PAGE,
            0,
            "Dynamic",
        )

    def tablespaces(self, buckets: set[int] | None) -> list[tuple]:
        return [
            ((index + 10) // BUCKET_ROWS, *self.tablespace(index, table, partition))
            for index, table, partition in self.partition_names()
            if buckets is None or (index + 10) // BUCKET_ROWS in buckets
        ]

    def tablespace_aggregates(self) -> str:
        if self.dirty:
            fresh: dict[int, list[int]] = {}
            for bucket, *row in self.tablespaces(self.dirty):
                line = ",".join(str(value) for value in row).encode()
                fresh.setdefault(bucket, []).append(int(hashlib.sha1(line).hexdigest()[:16], 16))
            for bucket in self.dirty:
                self.aggregates.pop(bucket, None)
            for bucket, hashes in fresh.items():
                xor = 0
                for value in hashes:
                    xor ^= value
                self.aggregates[bucket] = f"{bucket} {len(hashes)} {xor}"
            self.dirty = set()
        return ",".join(self.aggregates[bucket] for bucket in sorted(self.aggregates))

    def table_stats(self, since: int) -> list[tuple]:
        return [
            (
                SCHEMA,
                f"{table.name}#P#{partition}",
                self.rows_of(index, table),
                5 + self.rows_of(index, table) // 100,
                1,
                self.updated[index],
            )
            for index, table, partition in self.partition_names()
            if self.updated[index] >= since
        ]

    def tablestats(self) -> list[tuple]:
        return [
            (f"{SCHEMA}/{table.name}#P#{partition}", self.modified[index], 0)
            for index, table, partition in self.partition_names()
            if self.modified[index] > 0
        ]

    def definitions(self, table_name: str) -> list[tuple]:
        table = next((t for t in self.tables if t.name == table_name), None)
        if table is None:
            return []
        rows = []
        for ordinal in range(table.count):
            bound = str((ordinal + 1) * 1_000_000) if table.method == "RANGE" else None
            if table.method == "RANGE" and ordinal == table.count - 1:
                bound = "MAXVALUE"
            rows.append(
                (f"p{ordinal}", None, ordinal + 1, None, table.method, None, "`id`", None, bound)
            )
        return rows

    def status(self, now: float) -> dict[str, str]:
        uptime = int(now - self.started)
        return {
            "Uptime": str(uptime),
            "Opened_tables": str(self.partitions + uptime // 10),
            "Open_tables": str(min(400, self.partitions)),
            "Handler_write": str(self.handler_writes),
            "Handler_update": str(self.handler_writes // 2),
            "Handler_delete": "0",
            "Performance_schema_file_handles_lost": "0",
            "Performance_schema_file_instances_lost": "0",
        }

    def variables(self) -> dict[str, str]:
        return {
            "innodb_buffer_pool_size": str(1 << 30),
            "table_open_cache": "2000",
            "table_definition_cache": "400",
            "open_files_limit": "32768",
            "innodb_file_per_table": "ON",
            "performance_schema": "OFF",
            "innodb_cmp_per_index_enabled": "OFF",
            "innodb_stats_persistent": "ON",
            "innodb_stats_auto_recalc": "ON",
            "innodb_page_size": str(PAGE),
            "lower_case_table_names": "0",
        }


RESET_SECONDS = 600.0
WIDE = ("INNODB_SYS_TABLESPACES", "innodb_table_stats", "information_schema.PARTITIONS")
NAMED = re.compile(r"'([^']*)'")


class Answers:
    """Each statement partdash sends, answered from a catalogue."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.counts: dict[str, int] = {}
        self.unknown: dict[str, int] = {}

    def answer(self, catalogue: Catalogue, sql: str) -> list[bytes]:
        now = time.time()
        catalogue.advance(now, self.options.interval, self.options.changing)
        for prefix, method in ROUTES:
            if sql.startswith(prefix) or (prefix.startswith(" ") and prefix in sql):
                self.counts[prefix] = self.counts.get(prefix, 0) + 1
                return method(self, catalogue, sql, now)
        self.unknown[sql[:200]] = self.unknown.get(sql[:200], 0) + 1
        return error(1064, "the simulated server does not know this statement")

    def ok(self, catalogue, sql, now):
        return [OK]

    def version(self, catalogue, sql, now):
        return result_set(["VERSION()"], [(VERSION,)])

    def show(self, catalogue, sql, now):
        known = catalogue.status(now) if " STATUS " in sql else catalogue.variables()
        rows = [(name, known[name]) for name in NAMED.findall(sql) if name in known]
        return result_set(["Variable_name", "Value"], rows)

    def clock(self, catalogue, sql, now):
        return result_set(select_list(sql), [(int(now), "monitor@%")])

    def aggregates(self, catalogue, sql, now):
        if "INNODB_SYS_TABLESPACES" not in sql:
            return result_set(select_list(sql), [(None, 0, 67108864)])
        joined = catalogue.tablespace_aggregates()
        buckets = joined.count(",") + 1 if joined else 0
        return result_set(select_list(sql), [(joined, buckets, 67108864)])

    def tablespaces(self, catalogue, sql, now):
        wanted = None
        if match := re.search(r"AND SPACE DIV 8 IN \(([^)]*)\)", sql):
            wanted = {int(bucket) for bucket in match.group(1).split(",")}
        return result_set(select_list(sql), catalogue.tablespaces(wanted))

    def table_stats(self, catalogue, sql, now):
        match = re.search(r"FROM_UNIXTIME\((\d+)\)", sql)
        rows = catalogue.table_stats(int(match.group(1)) if match else 0)
        return result_set(select_list(sql), rows)

    def dictionary(self, catalogue, sql, now):
        return result_set(["COUNT(*)"], [(catalogue.partitions + 10,)])

    def tablestats(self, catalogue, sql, now):
        return result_set(select_list(sql), catalogue.tablestats())

    def definitions(self, catalogue, sql, now):
        names = NAMED.findall(sql)
        return result_set(select_list(sql), catalogue.definitions(names[1]))

    def options_of(self, catalogue, sql, now):
        return result_set(["CREATE_OPTIONS"], [("partitioned",)])

    def empty(self, catalogue, sql, now):
        return result_set(select_list(sql), [])


ROUTES = [
    ("SET ", Answers.ok),
    ("USE ", Answers.ok),
    ("SELECT VERSION()", Answers.version),
    ("SHOW GLOBAL ", Answers.show),
    ("SELECT UNIX_TIMESTAMP(), CURRENT_USER()", Answers.clock),
    ("SELECT GROUP_CONCAT(b, ' ', n, ' ', x", Answers.aggregates),
    ("SELECT SPACE DIV 8, NAME", Answers.tablespaces),
    ("SELECT database_name, table_name, n_rows", Answers.table_stats),
    ("SELECT COUNT(*) FROM information_schema.INNODB_SYS_TABLES", Answers.dictionary),
    ("SELECT NAME, MODIFIED_COUNTER", Answers.tablestats),
    ("SELECT PARTITION_NAME, SUBPARTITION_NAME", Answers.definitions),
    ("SELECT CREATE_OPTIONS", Answers.options_of),
    (" performance_schema.", Answers.empty),
    (" information_schema.INNODB_CMP", Answers.empty),
    (" information_schema.TABLES WHERE TABLE_TYPE", Answers.empty),
]


async def read_packet(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    header = await reader.readexactly(4)
    length = int.from_bytes(header[:3], "little")
    return header[3], await reader.readexactly(length)


def write_packets(writer: asyncio.StreamWriter, packets: list[bytes], sequence: int) -> None:
    for packet in packets:
        sequence = (sequence + 1) % 256
        writer.write(len(packet).to_bytes(3, "little") + bytes([sequence]) + packet)


async def converse(catalogue: Catalogue, answers: Answers, reader, writer) -> None:
    try:
        write_packets(writer, [greeting("mysql_native_password", False)], -1)
        sequence, _ = await read_packet(reader)  # the client's handshake response
        write_packets(writer, [OK], sequence)
        await writer.drain()
        while True:
            sequence, payload = await read_packet(reader)
            command = payload[0]
            if command == COM_QUIT:
                break
            if command != COM_QUERY:
                write_packets(writer, [OK], sequence)
                await writer.drain()
                continue
            sql = payload[1:].decode("utf-8", "replace")
            if catalogue.kind == "slow" and any(name in sql for name in WIDE):
                await asyncio.sleep(answers.options.slow_seconds)
            write_packets(writer, answers.answer(catalogue, sql), sequence)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def kind_of(number: int, servers: int) -> str:
    """A few slow, a few down, one restarting; spread over the sizes."""
    if number == servers // 2:
        return "resetting"
    if number % 97 == 13:
        return "slow"
    if number % 211 == 17:
        return "down"
    return "healthy"


def catalogues(servers: int, now: float, largest: int = LARGEST) -> list[Catalogue]:
    made = []
    for number in range(servers):
        share = number / max(1, servers - 1)
        partitions = round(SMALLEST * math.exp(share * math.log(largest / SMALLEST)))
        made.append(
            Catalogue(number, f"sim{number:04d}", partitions, kind_of(number, servers)).build(now)
        )
    return made


async def serve(options: argparse.Namespace) -> None:
    answers = Answers(options)
    fleet = catalogues(options.servers, time.time(), options.largest)
    listing, refusing = [], []
    for catalogue in fleet:
        if catalogue.kind == "down":  # bound, never listening: connections are refused
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            refusing.append(sock)
            port = sock.getsockname()[1]
        else:
            server = await asyncio.start_server(
                lambda r, w, c=catalogue: converse(c, answers, r, w), "127.0.0.1", 0, backlog=64
            )
            port = server.sockets[0].getsockname()[1]
        listing.append(
            {
                "name": catalogue.name,
                "port": port,
                "partitions": catalogue.partitions,
                "tables": len(catalogue.tables),
                "kind": catalogue.kind,
            }
        )
    options.json.write_text(json.dumps(listing))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    loop.add_signal_handler(
        signal.SIGUSR1,
        lambda: print(json.dumps({"answered": answers.counts, "unknown": answers.unknown})),
    )
    total = sum(c.partitions for c in fleet)
    print(f"fake fleet: {len(fleet)} servers, {total:,} partitions, listening", flush=True)
    await stop.wait()
    print(json.dumps({"answered": answers.counts, "unknown": answers.unknown}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between writes")
    parser.add_argument("--changing", type=float, default=0.02, help="share written per interval")
    parser.add_argument("--largest", type=int, default=LARGEST, help="partitions, at most")
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    parser.add_argument("--reset-minutes", type=float, default=10.0)
    parser.add_argument("--json", type=Path, required=True)
    options = parser.parse_args(argv)
    global RESET_SECONDS
    RESET_SECONDS = options.reset_minutes * 60
    asyncio.run(serve(options))


if __name__ == "__main__":
    main()
