"""The fleet benchmark's table: per server, then the verdicts, then the readers."""

from fleet_processes import MEMORY_EVERY

LATENESS_TARGET = 5.0  # seconds, healthy servers' p95


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_report(result: dict) -> bool:
    setup, fleet, memory = result["setup"], result["fleet"], result["memory"]
    print(
        f"\nfleet load: {setup['servers']} servers polled every {setup['interval']} s for "
        f"{setup['minutes']:g} min; {setup['store']} store; {setup['workers']} worker(s) x "
        f"{setup['concurrency']}"
    )
    print(
        f"  {'server':<11} {'kind':<10} {'partitions':>10} {'polls':>5} {'failed':>6} "
        f"{'late p50':>8} {'p95':>7} {'max':>7} {'took max':>8}  by worker"
    )
    for name, figures in fleet["servers"].items():
        late = figures["lateness"]
        workers = ", ".join(
            f"{w.split('@')[0]} {n}" for w, n in sorted(figures["by_worker"].items())
        )
        print(
            f"  {name:<11} {figures['kind']:<10} {figures['partitions'] or '-':>10} "
            f"{figures['polls']:>5} {figures['failed']:>6} {seconds(late['p50']):>8} "
            f"{seconds(late['p95']):>7} {seconds(late['max']):>7} "
            f"{seconds(figures['duration']['max']):>8}  {workers}"
        )
    print(
        f"  healthy servers' lateness p95 ({fleet['healthy_lateness_samples']} polls): "
        f"{seconds(fleet['healthy_lateness_p95'])} s "
        f"[target < {LATENESS_TARGET:g} s: {verdict(fleet['healthy_pass'])}] (beat "
        f"dispatches due polls every {setup['dispatch_seconds']:g} s)"
    )
    print(
        f"  worker memory (RSS, main + children, every {MEMORY_EVERY:g} s): first after "
        f"{memory.get('warm_up_s', 0):g} s {memory.get('first_mb', 0):.0f} MB, max "
        f"{memory.get('max_mb', 0):.0f} MB, last {memory.get('last_mb', 0):.0f} MB "
        f"[flat, last <= 1.2 x first: {verdict(memory.get('flat', False))}]"
    )
    snapshots = result["snapshots"]
    duplicated = snapshots["closer_than_half_an_interval"] + snapshots["not_from_a_logged_poll"]
    shared = ", ".join(
        f"{worker} {count}" for worker, count in sorted(fleet["polls_by_worker"].items())
    )
    print(
        f"  polls per worker: {shared}; polls of one server overlapping: {fleet['overlaps']} "
        f"[target 0: {verdict(fleet['overlaps'] == 0)}]; snapshots {snapshots['stored']} for "
        f"{snapshots['successful_polls']} successful polls, duplicated {duplicated} "
        f"[target 0: {verdict(duplicated == 0)}]"
    )
    readers_ok = print_readers(result["readers"])
    return (
        fleet["healthy_pass"]
        and memory.get("flat", False)
        and fleet["overlaps"] == 0
        and duplicated == 0
        and readers_ok
    )


def print_readers(figures: dict) -> bool:
    if "error" in figures:
        print(f"  readers: not run: {figures['error']}")
        return False
    print(f"  readers: {figures['clients']} clients for {figures['seconds']:g} s during polling")
    print(
        f"    {'endpoint':<46} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6} {'5xx':>4}"
    )
    server_errors = 0
    for label, row in figures["endpoints"].items():
        server_errors += row["5xx"]
        print(
            f"    {label:<46} {row['requests']:>8} {row.get('median_ms', 0):>8.1f} "
            f"{row.get('p95_ms', 0):>8.1f} {row['errors']:>6} {row['5xx']:>4}"
        )
    print(f"    5xx in all: {server_errors} [target 0: {verdict(server_errors == 0)}]")
    return server_errors == 0
