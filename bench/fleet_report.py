"""The fleet benchmark's table: per server, then the verdicts, then the readers."""

from fleet_processes import MEMORY_EVERY

LATENESS_TARGET = 5.0  # seconds, healthy servers' p95

SERVER_COLUMNS = [("server", -11), ("kind", -10), ("partitions", 10), ("polls", 5)]
SERVER_COLUMNS += [("failed", 6), ("late p50", 8), ("p95", 7), ("max", 7), ("took max", 8)]
SERVER_COLUMNS += [("by worker", -1)]
READER_COLUMNS = [("endpoint", -46), ("requests", 8), ("p50 ms", 8), ("p95 ms", 8)]
READER_COLUMNS += [("errors", 6), ("5xx", 4)]


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_table(columns: list[tuple[str, int]], rows: list[list], indent: str) -> None:
    """Columns as (header, width): a negative width aligns left."""
    for cells in [[header for header, _ in columns], *rows]:
        line = " ".join(
            f"{cell!s:<{-width}}" if width < 0 else f"{cell!s:>{width}}"
            for cell, (_, width) in zip(cells, columns, strict=True)
        )
        print(indent + line.rstrip())


def server_row(name: str, figures: dict) -> list:
    late = figures["lateness"]
    workers = ", ".join(f"{w.split('@')[0]} {n}" for w, n in sorted(figures["by_worker"].items()))
    return [
        name,
        figures["kind"],
        figures["partitions"] or "-",
        figures["polls"],
        figures["failed"],
        *(seconds(late[figure]) for figure in ("p50", "p95", "max")),
        seconds(figures["duration"]["max"]),
        workers,
    ]


def print_report(result: dict) -> bool:
    """The whole table; True when every target is met."""
    setup, fleet = result["setup"], result["fleet"]
    print(
        f"\nfleet load: {setup['servers']} servers polled every {setup['interval']} s for "
        f"{setup['minutes']:g} min; {setup['store']} store; {setup['workers']} worker(s) x "
        f"{setup['concurrency']}"
    )
    rows = [server_row(name, figures) for name, figures in fleet["servers"].items()]
    print_table(SERVER_COLUMNS, rows, "  ")
    print(
        f"  healthy servers' lateness p95 ({fleet['healthy_lateness_samples']} polls): "
        f"{seconds(fleet['healthy_lateness_p95'])} s "
        f"[target < {LATENESS_TARGET:g} s: {verdict(fleet['healthy_pass'])}] (beat "
        f"dispatches due polls every {setup['dispatch_seconds']:g} s)"
    )
    memory_ok = print_memory(result["memory"])
    shared_ok = print_sharing(fleet, result["snapshots"])
    readers_ok = print_readers(result["readers"])
    return fleet["healthy_pass"] and memory_ok and shared_ok and readers_ok


def print_memory(memory: dict) -> bool:
    print(
        f"  worker memory (RSS, main + children, every {MEMORY_EVERY:g} s): first after "
        f"{memory.get('warm_up_s', 0):g} s {memory.get('first_mb', 0):.0f} MB, max "
        f"{memory.get('max_mb', 0):.0f} MB, last {memory.get('last_mb', 0):.0f} MB "
        f"[flat, last <= 1.2 x first: {verdict(memory.get('flat', False))}]"
    )
    return memory.get("flat", False)


def print_sharing(fleet: dict, snapshots: dict) -> bool:
    """Polls per worker, overlapping polls of one server, duplicated snapshots."""
    duplicated = snapshots["closer_than_half_an_interval"] + snapshots["not_from_a_logged_poll"]
    shared = ", ".join(
        f"{worker} {count}" for worker, count in sorted(fleet["polls_by_worker"].items())
    )
    print(
        f"  polls per worker: {shared}; polls of one server overlapping: {fleet['overlaps']} "
        f"[target 0: {verdict(fleet['overlaps'] == 0)}] ({fleet['skipped_lock_held']} "
        f"skipped: the poll lock was held); snapshots {snapshots['stored']} for "
        f"{snapshots['successful_polls']} successful polls, duplicated {duplicated} "
        f"[target 0: {verdict(duplicated == 0)}]"
    )
    return fleet["overlaps"] == 0 and duplicated == 0


def print_readers(figures: dict) -> bool:
    if "error" in figures:
        print(f"  readers: not run: {figures['error']}")
        return False
    print(f"  readers: {figures['clients']} clients for {figures['seconds']:g} s during polling")
    rows = [
        [
            label,
            row["requests"],
            f"{row.get('median_ms', 0):.1f}",
            f"{row.get('p95_ms', 0):.1f}",
            row["errors"],
            row["5xx"],
        ]
        for label, row in figures["endpoints"].items()
    ]
    print_table(READER_COLUMNS, rows, "    ")
    server_errors = sum(row["5xx"] for row in figures["endpoints"].values())
    print(f"    5xx in all: {server_errors} [target 0: {verdict(server_errors == 0)}]")
    return server_errors == 0
