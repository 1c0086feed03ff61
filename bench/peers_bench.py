"""Issue 41 (4): partdash beside mysqld_exporter on the same server, in the same run.

Debian's `prometheus-mysqld-exporter` (0.14.0) scrapes the benchmark's server twice over,
each time with its built-in defaults off so the figures are the named collectors' alone:
its table collectors (every per-table and per-partition collector 0.14 has), then its
per-file collector (`perf_schema.file_instances`, filtered to include every file). Per
scrape: its time (median of several, after one to warm up), the series it emits, the
server's Opened_tables added and the exporter process's CPU. A floor read before each
scrape gives the ratio, as `make bench` gives partdash's. Printed beside partdash's
figures of the same run (given as poll_runner's JSON); written to var/bench/peers.json.

    peers_bench.py --port PORT --partdash FIGURES.json [--scrapes N] [--json OUT]
"""

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from fleet import connect  # noqa: E402

from tests.services import free_port, spawn, terminate, wait_for  # noqa: E402

EXPORTER = "/usr/bin/prometheus-mysqld-exporter"
USER = "peer_exporter"
# On by default in 0.14: off here, so a run's series and cost are its collectors' own.
DEFAULTS_OFF = [
    "--no-collect.global_status",
    "--no-collect.global_variables",
    "--no-collect.slave_status",
    "--no-collect.info_schema.innodb_cmp",
    "--no-collect.info_schema.innodb_cmpmem",
    "--no-collect.info_schema.query_response_time",
]
# Every collector of 0.14 with a series per table, index or partition (`--help`).
# tablestats reads TABLE_STATISTICS, which MariaDB fills only with userstat=ON (off by
# default, as on the benchmark's server); auto_increment.columns, only for such columns;
# innodb_tablespaces, the one a partition, fails on MariaDB 10.11 (`scrape_errors`).
TABLE_COLLECTORS = [
    "--collect.info_schema.tables",
    "--collect.info_schema.tablestats",
    "--collect.info_schema.innodb_tablespaces",
    "--collect.perf_schema.tableiowaits",
    "--collect.perf_schema.indexiowaits",
    "--collect.perf_schema.tablelocks",
    "--collect.auto_increment.columns",
]
# ".*", 0.14's default filter, given so that every file the server has is in, whatever
# the default of another version.
FILE_COLLECTOR = [
    "--collect.perf_schema.file_instances",
    "--collect.perf_schema.file_instances.filter=.*",
]


@dataclass
class Scrapes:
    """One exporter configuration's scrapes of the server (the first, a warm-up, apart)."""

    seconds: list[float]
    first_seconds: float
    series: int
    series_by_family: dict[str, int]
    opened_tables: list[int]
    cpu_seconds: list[float]
    errors: dict[str, int]  # failed scrapes by collector, the warm-up's included
    rss_mb: float  # the exporter's resident memory after its last scrape
    body: str = ""  # the last scrape's exposition, for the test; not written out

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def figures(self) -> dict:
        figures = asdict(self)
        del figures["body"]
        return figures | {
            "median_seconds": self.median,
            "opened_tables_median": statistics.median(self.opened_tables),
            "cpu_seconds_median": statistics.median(self.cpu_seconds),
        }


def grant_exporter(port: int) -> str:
    """The exporter's own account, with the grants its README asks for; its password."""
    password = secrets.token_hex(12)
    with closing(connect(port)) as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE OR REPLACE USER '{USER}'@'127.0.0.1' IDENTIFIED BY %s", (password,))
        cursor.execute(f"GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO '{USER}'@'127.0.0.1'")
    return password


def datadir(port: int) -> str:
    with closing(connect(port)) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@datadir")
        return cursor.fetchone()[0]


@contextmanager
def exporter(port: int, flags: list[str], directory: Path) -> Iterator[tuple[str, int]]:
    """mysqld_exporter on 127.0.0.1 and a free port, reading the server through a private
    credentials file: its /metrics URL and its process id."""
    if not Path(EXPORTER).exists():
        raise SystemExit(f"{EXPORTER} is missing: Debian's prometheus-mysqld-exporter")
    credentials = directory / "exporter.cnf"
    credentials.touch(mode=0o600)
    credentials.write_text(
        f"[client]\nuser={USER}\npassword={grant_exporter(port)}\nhost=127.0.0.1\nport={port}\n"
    )
    listen = free_port()
    argv = [EXPORTER, f"--config.my-cnf={credentials}", f"--web.listen-address=127.0.0.1:{listen}"]
    process = spawn([*argv, *DEFAULTS_OFF, *flags], directory / "exporter.log")
    try:
        url = f"http://127.0.0.1:{listen}/metrics"
        if not wait_for(lambda: answers(f"http://127.0.0.1:{listen}/"), timeout=20):
            raise RuntimeError(
                f"mysqld_exporter did not answer: {(directory / 'exporter.log').read_text()}"
            )
        yield url, process.pid
    finally:
        terminate(process, timeout=10)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


def series_by_family(exposition: str) -> Counter[str]:
    """Samples per metric name in a Prometheus text exposition."""
    names = (line.split("{", 1)[0].split(" ", 1)[0] for line in exposition.splitlines())
    return Counter(name for name in names if name and not name.startswith("#"))


def scrape_errors(exposition: str) -> dict[str, int]:
    """The exporter's count of failed scrapes by collector: 0.14's innodb_tablespaces asks
    MariaDB's INNODB_SYS_TABLESPACES for a SPACE_TYPE it does not have (10.11), and fails."""
    prefix = 'mysql_exporter_scrape_errors_total{collector="'
    lines = (line for line in exposition.splitlines() if line.startswith(prefix))
    return {line[len(prefix) :].split('"')[0]: int(float(line.split()[-1])) for line in lines}


def opened_tables(port: int) -> int:
    with closing(connect(port)) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Opened_tables'")
        return int(cursor.fetchone()[1])


def scrape(url: str, port: int, pid: int) -> tuple[float, int, float, str]:
    """One scrape: seconds, Opened_tables added, the exporter's CPU seconds, the body."""
    process = psutil.Process(pid)
    opened, cpu = opened_tables(port), sum(process.cpu_times()[:2])
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=1800) as answer:
        body = answer.read().decode()
    seconds = time.monotonic() - started
    return seconds, opened_tables(port) - opened, sum(process.cpu_times()[:2]) - cpu, body


def scrapes(
    port: int, flags: list[str], count: int, before_each: Callable[[], None] = lambda: None
) -> Scrapes:
    """A warm-up scrape, then `count` scrapes, `before_each` called before each of them."""
    with tempfile.TemporaryDirectory(prefix="partdash-peer-") as directory:
        with exporter(port, flags, Path(directory)) as (url, pid):
            first_seconds = scrape(url, port, pid)[0]
            taken = []
            for _ in range(count):
                before_each()
                taken.append(scrape(url, port, pid))
            rss_mb = psutil.Process(pid).memory_info().rss / 2**20
    families = series_by_family(taken[-1][3])
    return Scrapes(
        seconds=[seconds for seconds, *_ in taken],
        first_seconds=first_seconds,
        series=sum(families.values()),
        series_by_family=dict(families.most_common()),
        opened_tables=[opened for _, opened, *_ in taken],
        cpu_seconds=[cpu for _, _, cpu, _ in taken],
        errors=scrape_errors(taken[-1][3]),
        rss_mb=rss_mb,
        body=taken[-1][3],
    )


def file_collector_flags(port: int) -> list[str]:
    """The per-file collector, its file names relative to the server's data directory."""
    return [*FILE_COLLECTOR, f"--collect.perf_schema.file_instances.remove_prefix={datadir(port)}"]


def compare(port: int, partdash: dict, count: int) -> dict:
    """Both exporter configurations, a floor read before each scrape (in a process of its
    own, as poll_runner reads it); the figures, partdash's beside them."""
    from poll_runner import floor_process, floor_seconds

    from partdash.mysql.connection import Target

    target = Target(host="127.0.0.1", port=port, user="root")
    reader = floor_process()
    reader.submit(floor_seconds, target).result()  # (its first read: imports, warm-up)
    floors: dict[str, list[float]] = {"tables": [], "files": []}
    peers = {}
    for name, flags in (("tables", TABLE_COLLECTORS), ("files", file_collector_flags(port))):

        def read_floor(into: list[float] = floors[name]) -> None:
            into.append(reader.submit(floor_seconds, target).result())

        peers[name] = scrapes(port, flags, count, read_floor).figures() | {
            "floor_seconds": floors[name],
            "floor_median": statistics.median(floors[name]),
        }
    reader.shutdown()
    return {"partdash": partdash, "peers": peers, "file_instances_lost": files_lost(port)}


def files_lost(port: int) -> int:
    """Files performance_schema could not instrument (its file instances were full)."""
    with closing(connect(port)) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Performance_schema_file_instances_lost'")
        return int(cursor.fetchone()[1])


LABELS = {"tables": "mysqld_exporter table collectors", "files": "mysqld_exporter file collector"}


def rows(figures: dict) -> list[tuple[str, float, float, str, str, str]]:
    """(label, seconds, the floor read beside, series, Opened_tables, CPU s) a line."""
    ours = figures["partdash"]
    floor = ours["floor_median"]
    naive = statistics.median(seconds for seconds, _ in ours["naive"])
    naive_opened = statistics.median(opened for _, opened in ours["naive"])
    lines = [
        (
            "partdash quiet poll (3q, median of 5)",
            ours["quiet_median"],
            ours["quiet_floor_median"],
            "",
            str(max(ours["quiet_opened_tables"])),
            "",
        ),
        (
            "partdash steady-state poll (3, median of 5)",
            ours["poll_median"],
            floor,
            "",
            str(max(ours["opened_tables_per_poll"][3:])),
            "",
        ),
        (
            "naive information_schema.PARTITIONS (2, median of 3)",
            naive,
            floor,
            "",
            f"+{naive_opened:.0f}",
            "",
        ),
    ]
    for name, peer in figures["peers"].items():
        lines.append(
            (
                f"{LABELS[name]} (median of {len(peer['seconds'])})",
                peer["median_seconds"],
                peer["floor_median"],
                f"{peer['series']:,}",
                f"+{peer['opened_tables_median']:.0f}",
                f"{peer['cpu_seconds_median']:.2f}",
            )
        )
    return lines


def report(figures: dict) -> None:
    """One line a figure: seconds, the ratio to the floor read beside it, and the rest."""
    print(f"\nbeside the peers: the same {figures['partdash']['partitions_seen']:,} partitions")
    print(
        f"{'':<52} {'seconds':>8} {'x floor':>8} {'series':>9} {'Opened_tables':>13} {'CPU s':>6}"
    )
    for label, seconds, floor, series, opened, cpu in rows(figures):
        ratio = f"{seconds / floor:.2f}x"
        print(f"{label:<52} {seconds:>8.2f} {ratio:>8} {series:>9} {opened:>13} {cpu:>6}")
    for name, peer in figures["peers"].items():
        families = list(peer["series_by_family"].items())[:4]
        print(
            f"  {LABELS[name]}: first scrape {peer['first_seconds']:.2f} s, "
            f"{peer['rss_mb']:.0f} MB resident; failed scrapes "
            f"{peer['errors'] or 'none'}; series: "
            + ", ".join(f"{family} {count:,}" for family, count in families)
        )
    print(
        f"  floor beside partdash's polls {figures['partdash']['floor_median']:.2f} s; "
        f"performance_schema file instances lost: {figures['file_instances_lost']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--partdash", type=Path, required=True, help="poll_runner's figures")
    parser.add_argument("--scrapes", type=int, default=5)
    parser.add_argument("--json", type=Path, default=HERE.parent / "var" / "bench" / "peers.json")
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partdash.settings")
    os.environ.setdefault("DEBUG", "1")  # (the floor's process: settings, no store)
    figures = compare(options.port, json.loads(options.partdash.read_text()), options.scrapes)
    report(figures)
    options.json.parent.mkdir(parents=True, exist_ok=True)
    options.json.write_text(json.dumps(figures, indent=1))
    print(f"  figures in {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
