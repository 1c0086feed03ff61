"""Print the slowest tests of `make test`'s passes; with --save, keep every test's seconds
in tests/durations.json, which orders the next run longest first (tests/timing.py).

    python scripts/slowest.py test-artifacts/times-sqlite.json test-artifacts/times-postgres.json
    python scripts/slowest.py --save test-artifacts/times-*.json
    python scripts/slowest.py --cpu test-artifacts/cpu-*.json   (after PARTDASH_TEST_CPU=1)
"""

import argparse
import json
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def read_passes(paths: list[Path]) -> dict[str, dict[str, float]]:
    """{pass name: {test id: seconds}}; a pass is named by its file (times-sqlite.json)."""
    return {
        path.stem.removeprefix("times-").removeprefix("cpu-"): json.loads(path.read_text())
        for path in paths
        if path.exists()
    }


def print_slowest(passes: dict[str, dict[str, float]], count: int, what: str) -> None:
    rows = [(s, name, nodeid) for name, times in passes.items() for nodeid, s in times.items()]
    rows.sort(reverse=True)
    for name, times in passes.items():
        print(f"{name}: {len(times)} tests, {sum(times.values()):.0f} s of {what} in all")
    print(f"the {min(count, len(rows))} tests of most {what} (setup, call and teardown):")
    width = max((len(name) for name in passes), default=0)
    for seconds, name, nodeid in rows[:count]:
        print(f"{seconds:8.1f}s  {name:<{width}}  {nodeid}")


def save(passes: dict[str, dict[str, float]]) -> None:
    """The longest each test took in any pass, to one decimal: what ordering needs."""
    longest: dict[str, float] = {}
    for times in passes.values():
        for nodeid, seconds in times.items():
            longest[nodeid] = max(longest.get(nodeid, 0.0), round(seconds, 1))
    DURATIONS.write_text(json.dumps(dict(sorted(longest.items())), indent=0) + "\n")
    print(f"wrote {len(longest)} tests' seconds to {DURATIONS}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("times", nargs="+", type=Path, help="times-STORE.json of a pass")
    parser.add_argument("--count", type=int, default=25)
    parser.add_argument("--save", action="store_true", help="write tests/durations.json")
    parser.add_argument("--cpu", action="store_true", help="the files are CPU seconds")
    args = parser.parse_args()
    passes = read_passes(args.times)
    if args.save:
        save(passes)
    else:
        print_slowest(passes, args.count, "CPU time" if args.cpu else "test time")


if __name__ == "__main__":
    main()
