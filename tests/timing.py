"""Longest tests first, and what each test took (a pytest plugin: `-p tests.timing`).

`make test` runs each pass on several pytest-xdist workers with `--dist loadgroup`: the
scheduler (`ModuleScheduling`) hands out one module (or one `xdist_group`) at a time,
whole, in collection order, to whichever worker is free, so a module's fixtures are built
once. Collected longest first, by the seconds its tests took in an earlier run
(`tests/durations.json`), the minutes-long units start at once instead of last, so no
worker is left with one of them when the rest are done (longest processing time first).
A unit counts as the sum of its tests; a test not in the file counts as `UNKNOWN_SECONDS`.

With PARTDASH_TEST_TIMES naming a file, the run writes each test's seconds (setup, call
and teardown) there as JSON; `scripts/slowest.py` prints the slowest and, with `--save`,
folds them into `tests/durations.json`. Why a test that passed on its rerun failed
first (its traceback and the end of its captured output) goes to `reruns-STORE.json`
beside it, a JSON line a rerun. With PARTDASH_TEST_CPU=1 as well, it writes
beside it (`cpu-STORE.json`) the CPU seconds each test cost its worker's process tree
(the worker, and the servers, Celery processes and browser it started), which is what
bounds a run on two cores; `scripts/slowest.py --cpu` prints the costliest.
"""

import json
import os
from collections import defaultdict
from pathlib import Path

import psutil
import pytest
from xdist.scheduler import LoadGroupScheduling

DURATIONS = Path(__file__).with_name("durations.json")
UNKNOWN_SECONDS = 1.0


def plain_nodeid(nodeid: str) -> str:
    """The test's id without the `@group` pytest-xdist's loadgroup appends to it."""
    return nodeid.split("@")[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def group_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return marker.kwargs.get("name") or (marker.args[0] if marker.args else "default")


def unit_of(item: pytest.Item) -> str:
    """What is scheduled together: the test's xdist group, else its module."""
    group = group_of(item)
    return f"@{group}" if group else item.nodeid.split("::")[0]


@pytest.hookimpl(trylast=True)  # after pytest-xdist's, which marks grouped tests' ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fail_if_not_grouped(config, items)
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}

    def seconds(item: pytest.Item) -> float:
        return known.get(plain_nodeid(item.nodeid), UNKNOWN_SECONDS)

    # A unit is an xdist group (weighed by its sum: one worker runs it whole) or a module
    # (weighed by its longest test). Units go longest first, each unit's tests together,
    # longest first: a worker then takes a module's tests one after another, so its
    # module-scoped fixtures (a migrated store, a MariaDB with its tables) are built once
    # per worker rather than each time the worker came back to the module.
    weight: dict[str, float] = defaultdict(float)
    for item in items:
        weight[unit_of(item)] += seconds(item)

    def longest_first(item: pytest.Item) -> tuple[float, str, float]:
        unit = unit_of(item)
        return (-weight[unit], unit, 0.0 if group_of(item) else -seconds(item))

    items.sort(key=longest_first)  # stable: a group's tests keep their file order


class ModuleScheduling(LoadGroupScheduling):
    """`--dist loadgroup` with a module, rather than a test, as the unit an ungrouped test
    is handed out in, and the units in collection order (longest first, above) rather
    than by their number of tests (pytest-xdist's `loadscopereorder`). Under pytest-xdist's
    own loadgroup every ungrouped test was a unit of its own: a module's tests went to
    whichever workers were free, and each of those built the module's fixtures again (a
    MariaDB, a Celery worker and beat, a migrated store), and the groups, ordered by
    their number of tests, went before the longest modules."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # a grouped test: pytest-xdist's rule
            return nodeid.split("@")[-1]
        return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log) -> LoadGroupScheduling | None:
    if config.getoption("dist") != "loadgroup":
        return None
    config.option.loadscopereorder = False
    return ModuleScheduling(config, log)


LOADGROUP_BROKEN = (
    "--dist loadgroup did not group this test: pytest-xdist no longer marks grouped tests'"
    " ids with this pytest (pytest-dev/pytest-xdist#1386); pin a pytest it works with"
)


def fail_if_not_grouped(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker under `--dist loadgroup`: each grouped test's id carries
    its group, else the groups are not kept together. pytest 9.2 silently broke that
    (make up's tests built three clones, and the timed fault tests ran beside each
    other): every grouped test then errs, saying why (`pytest_runtest_setup`)."""
    if getattr(config.option, "loadgroup", False):
        for item in items:
            if group_of(item) and "@" not in item.nodeid:
                item.stash[NOT_GROUPED] = True


NOT_GROUPED = pytest.StashKey[bool]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.stash.get(NOT_GROUPED, False):
        pytest.fail(LOADGROUP_BROKEN, pytrace=False)


def tree_cpu() -> float:
    """CPU seconds of this process, its descendants, and the children it reaped."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:4])  # user, system, children's user and system
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:4])
        except psutil.Error:
            pass  # gone meanwhile: its parent's children's times have it
    return total


class CpuMeter:
    """In the process that runs the tests: each test's CPU seconds, on its teardown
    report (`user_properties`, which pytest-xdist carries to the controller)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        item.stash[CPU_AT_START] = tree_cpu()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        if call.when == "teardown" and CPU_AT_START in item.stash:
            cpu = tree_cpu() - item.stash[CPU_AT_START]
            outcome.get_result().user_properties.append(("cpu_seconds", cpu))


CPU_AT_START = pytest.StashKey[float]()


class Stopwatch:
    """Each test's seconds, summed over its phases, as the reports arrive (in the
    controller under pytest-xdist: the reports of every worker)."""

    def __init__(self, path: Path):
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = plain_nodeid(report.nodeid)
        self.seconds[nodeid] += report.duration
        for name, value in report.user_properties:
            if name == "cpu_seconds":
                self.cpu[nodeid] = value
        if report.outcome == "rerun":  # (pytest-rerunfailures: the attempt that failed)
            keep_rerun(self.path.with_name(self.path.name.replace("times-", "reruns-")), report)

    def pytest_sessionfinish(self) -> None:
        write(self.path, self.seconds)
        if self.cpu:
            write(self.path.with_name(self.path.name.replace("times-", "cpu-")), self.cpu)


# Of each captured section (stdout, stderr, log) of a failed attempt, its last characters.
RERUN_SECTION_CHARS = 20_000


def keep_rerun(path: Path, report: pytest.TestReport) -> None:
    """Append why a test's first attempt failed (its traceback and the end of what it
    captured) to `path` as a JSON line: the summary lists a test that passed on its rerun
    as RERUN only, and its failure would otherwise be lost."""
    sections = {name: text[-RERUN_SECTION_CHARS:] for name, text in report.sections}
    entry = {
        "test": report.nodeid,
        "when": report.when,
        "seconds": round(report.duration, 2),
        "failure": report.longreprtext,
        "captured": sections,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(json.dumps(entry) + "\n")


def write(path: Path, seconds: dict[str, float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rounded = {nodeid: round(s, 2) for nodeid, s in sorted(seconds.items())}
    path.write_text(json.dumps(rounded, indent=0) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get("PARTDASH_TEST_TIMES")
    if not path:
        return
    if os.environ.get("PARTDASH_TEST_CPU") == "1":
        config.pluginmanager.register(CpuMeter(), "partdash-cpu-meter")
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        config.pluginmanager.register(Stopwatch(Path(path)), "partdash-stopwatch")
