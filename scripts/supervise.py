"""`make up`'s foreground part: run Redis (when none answers), the demo step, a Celery
worker, Celery beat and gunicorn; restart a worker or beat that dies, with backoff, saying
why, and a worker that is alive but stalled (no answer to a ping, or nothing consumed
while tasks wait, for PARTDASH_WORKER_STALL_SECONDS), hard if it must; stop everything
when the web server or Redis dies, or when a worker or beat keeps dying at start-up; on
Ctrl-C stop them all, in order, within 10 s, and exit 0.

scripts/up.sh sets everything up, then runs this with the virtualenv's Python.

Each process runs in a session of its own, its output in var/log/NAME.log, so the
terminal's Ctrl-C reaches this supervisor alone. It used to reach every process of the
group at once: the Celery worker then got a second signal from up.sh's trap, which
means a cold shutdown (its pool killed: "SIGKILL! Perhaps out of memory?"), and make,
seeing its child die of a signal, failed. Here each process gets one TERM and a deadline.
"""

import argparse
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the virtualenv's
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
TICK = 0.1

# Seconds a process may take to stop after its TERM, then it is killed with its children.
# The worker's warm shutdown waits for running polls; web, beat and worker stop together,
# then Redis, so a stop takes at most WORKER_GRACE + REDIS_GRACE (under the 10 s promised).
WORKER_GRACE = 6.0
WEB_GRACE = 4.0  # gunicorn gets --graceful-timeout 3
BEAT_GRACE = 3.0
REDIS_GRACE = 2.0

# A worker or beat that dies is started again after BACKOFF_FIRST seconds, doubled for each
# death in a row up to BACKOFF_CAP. A run that lasts STABLE seconds ends the row; a row of
# GIVE_UP deaths, each within STABLE seconds of its start, stops everything (a process
# that cannot start, such as a missing module, is reported rather than retried forever).
BACKOFF_FIRST = 1.0
BACKOFF_CAP = 60.0
STABLE = 60.0
GIVE_UP = 5

# A stalled worker gets this long to end after its TERM (and CONT) before it is killed
# with its pool: its warm shutdown would wait for tasks that may never end.
STALLED_GRACE = 3.0
DEFAULT_STALL = 120.0


def say(message: str) -> None:
    with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
        print(f"\033[1m==> {message}\033[0m", flush=True)


def error(message: str) -> None:
    with contextlib.suppress(OSError):
        print(f"error: {message}", file=sys.stderr, flush=True)


class Stop(Exception):
    """The user asked to stop (Ctrl-C, or TERM/HUP/QUIT)."""


class Died(Exception):
    """A process exited, or did not come up: the message says which and why."""


STOP_MASK = sum(1 << (number - 1) for number in STOP_SIGNALS)  # as /proc's SigBlk


class ParentMake:
    """The `make` this runs under, when it does. A service manager signals the PID it
    started, make's: on SIGINT (HUP, QUIT) make forwards nothing, assuming its children
    got it from the terminal too, and waits for them for ever; so a SIGINT to `make up`
    alone stopped nothing. make handles such a signal with the signal blocked until it
    exits, which /proc shows (SigBlk): seen here, it is a request to stop. (On SIGTERM
    make sends its children a TERM as well.)"""

    def __init__(self, pid: int) -> None:
        self.status = Path(f"/proc/{pid}/status")

    @classmethod
    def of_this_process(cls) -> "ParentMake | None":
        parent = os.getppid()
        try:
            name = Path(f"/proc/{parent}/comm").read_text().strip()
        except OSError:  # not Linux: a SIGINT to make alone stops nothing, as before
            return None
        return cls(parent) if name in ("make", "gmake") else None

    def signalled(self) -> bool:
        """Whether make is handling a stop signal (and waits for this process to end)."""
        try:
            fields = dict(line.split(":", 1) for line in self.status.read_text().splitlines())
        except (OSError, ValueError):  # make is gone: nothing waits for this process
            return False
        return bool(int(fields.get("SigBlk", "0"), 16) & STOP_MASK)


class Supervisor:
    """Stop requests arrive as signals, to this process or to the make it runs under
    (`ParentMake`), and are noticed between ticks."""

    def __init__(self, handle_signals: bool = True) -> None:
        self.stop_requested = False
        self.make = ParentMake.of_this_process() if handle_signals else None
        for number in STOP_SIGNALS if handle_signals else ():
            signal.signal(number, self._request_stop)

    def _request_stop(self, number: int, frame: object) -> None:
        self.stop_requested = True

    def check(self) -> None:
        if self.make is not None and not self.stop_requested and self.make.signalled():
            say("make was asked to stop")
            self.stop_requested = True
        if self.stop_requested:
            raise Stop

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check()
            time.sleep(TICK)
        self.check()


def _die_with_parent() -> None:
    """In the child: get a TERM if the supervisor dies without stopping it (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Process:
    """One supervised process: its command, its log, how long it may take to stop."""

    def __init__(
        self, name: str, argv: list[str], log_dir: Path, grace: float, restart: bool = False
    ) -> None:
        self.name = name
        self.argv = argv
        self.log = log_dir / f"{name}.log"
        self.grace = grace
        self.restart = restart  # started again when it dies (with backoff), else fatal
        self.popen: subprocess.Popen | None = None
        self.log_offset = 0
        self.started_at = 0.0
        self.deaths = 0  # in a row, each soon after its start
        self.restart_at: float | None = None  # while waiting to be started again

    def start(self) -> "Process":
        self.restart_at = None
        self.started_at = time.monotonic()
        self.log_offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the terminal's Ctrl-C is the supervisor's alone
                preexec_fn=_die_with_parent,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def status(self) -> int | None:
        """The exit status once the process has exited, else None."""
        return None if self.popen is None else self.popen.poll()

    def terminate(self) -> None:
        if self.status() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def kill_group(self) -> None:
        """Kill what is left of the process and its children (a worker's pool, gunicorn's
        workers): they share its process group."""
        if self.popen is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=2)

    def output(self) -> str:
        """What this run wrote to its log."""
        with self.log.open("rb") as log:
            log.seek(self.log_offset)
            return log.read().decode(errors="replace")

    def reason(self) -> str:
        """Why it died, from what this run wrote to its log."""
        try:
            return reason(self.output())
        except OSError as failure:
            return f"its log cannot be read ({failure.strerror})"

    def exited(self) -> str:
        """ "worker exited (status 1)", "worker exited (status -9: killed)"."""
        status = self.status()
        if status is not None and status < 0:
            name = signal.strsignal(-status) or signal.Signals(-status).name
            return f"{self.name} exited (status {status}: {name.lower()})"
        return f"{self.name} exited (status {status})"

    def describe_exit(self) -> str:
        return f"{self.exited()}: {self.reason()}; see {shown(self.log)}"

    def describe_restart(self, delay: float) -> str:
        """Why it is started again: the exception of its last traceback when there is one
        (a SIGKILL leaves none, and the last line of its log would be no reason)."""
        try:
            exception = traceback_exception(self.output())
        except OSError:
            exception = None
        why = f": {exception}" if exception else ""
        return f"{self.exited()}{why}; restarting in {delay:g} s; see {shown(self.log)}"

    def restart_stalled(self, why: str) -> str:
        """Stop a worker that is alive but stalled (hard if a warm stop does not end it)
        and start it again at once; the message says why."""
        killed = liveness().stop_hard(self.pid, STALLED_GRACE, lambda: self.status() is not None)
        self.kill_group()  # what is left of its pool
        how = f"killed: it did not stop within {STALLED_GRACE:g} s of its TERM" if killed else ""
        self.restart_at = time.monotonic()
        stopped = f" ({how})" if how else ""
        return f"{self.name} stalled: {why}; restarting it{stopped}; see {shown(self.log)}"

    def tend(self, now: float) -> str | None:
        """Start it again when its backoff has passed; when it has just died, schedule
        that and say so (the message), or raise Died when it is not to be restarted or
        keeps dying at start-up."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.start()
            return None
        if self.status() is None:
            if self.deaths and now - self.started_at >= STABLE:
                self.deaths = 0
            return None
        if not self.restart:
            raise Died(self.describe_exit())
        self.deaths = self.deaths + 1 if now - self.started_at < STABLE else 1
        if self.deaths >= GIVE_UP:
            say(f"{self.name} died {self.deaths} times in a row at start-up: giving up")
            raise Died(self.describe_exit())
        delay = min(BACKOFF_CAP, BACKOFF_FIRST * 2 ** (self.deaths - 1))
        message = self.describe_restart(delay)
        self.kill_group()  # a killed worker's pool children
        self.restart_at = now + delay
        return message


def liveness():
    """`partdash/lib/liveness.py`, loaded by its path: the Django project stays out of
    this process (importing `partdash` would load Celery's app and Django's settings)."""
    module = sys.modules.get("partdash_liveness")
    if module is None:
        path = ROOT / "partdash" / "lib" / "liveness.py"
        spec = importlib.util.spec_from_file_location("partdash_liveness", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["partdash_liveness"] = module
        spec.loader.exec_module(module)
    return module


def seconds(value: str | None, default: float) -> float:
    """A number of seconds read from the environment (Django's settings are not loaded
    here); the default where it is unset or not a number."""
    try:
        return float(value or default)
    except ValueError:
        return default


def stall_seconds() -> float:
    return seconds(os.environ.get("PARTDASH_WORKER_STALL_SECONDS"), DEFAULT_STALL)


def longest_task() -> float:
    """How long a running task may be at work: a poll's hard time limit (at most
    PARTDASH_POLL_TIME_LIMIT), and liveness's margin."""
    return liveness().longest_task(seconds(os.environ.get("PARTDASH_POLL_TIME_LIMIT"), 300.0))


class WorkerLiveness:
    """Checks a running worker every few seconds through the broker (a ping, the queue,
    its record of tasks; `partdash.lib.liveness`) and restarts it once it has failed for
    the stall limit. While the broker itself does not answer, nothing is judged: the
    broker's own death is fatal, and its restart is waited for."""

    def __init__(self, process: Process, node: str, broker: str, stall: float) -> None:
        self.process = process
        self.node = node
        self.broker = broker
        self.stall = stall
        self.every = max(1.0, min(stall / 6, 15.0))
        self.probe = None
        self.watch = None
        self.run_started = None  # the run of the process being watched
        self.next_check = 0.0

    def check(self, now: float) -> str | None:
        """The restart message when the worker was found stalled and restarted."""
        if self.process.status() is not None or self.process.restart_at is not None:
            return None
        if now < self.next_check:
            return None
        self.next_check = now + self.every
        module = liveness()
        wall = time.time()
        if self.run_started != self.process.started_at:  # a new run: a new watch
            self.run_started = self.process.started_at
            self.watch = module.WorkerWatch(self.stall, since=wall)
        if self.probe is None:
            self.probe = module.BrokerProbe(self.broker, longest_task())
        try:
            seen = self.probe.observe(self.node, self.watch, wall)
        except module.redis.exceptions.RedisError:
            self.watch.broker_down(wall)
            return None
        why = self.watch.verdict(seen, wall)
        return self.process.restart_stalled(why) if why else None

    def close(self) -> None:
        if self.probe is not None:
            self.probe.close()


def traceback_exception(output: str) -> str | None:
    """The exception the last traceback in `output` ends with ("ModuleNotFoundError: No
    module named 'packaging'"), if any: gunicorn, for one, logs a worker's traceback and
    then more lines of its own."""
    lines = output.splitlines()
    tracebacks = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if tracebacks:
        # The frames are indented; the exception is the first line that is not.
        for line in lines[tracebacks[-1] + 1 :]:
            if line.strip() and not line[0].isspace():
                return line.strip()
    return None


def reason(output: str) -> str:
    """The exception of the last traceback in `output`, else its last line."""
    exception = traceback_exception(output)
    if exception:
        return exception
    last = [line.strip() for line in output.splitlines() if line.strip()]
    return last[-1] if last else "it wrote nothing"


def shown(path: Path) -> str:
    """`path` relative to the repository when it is inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def stop(supervised: list[Process]) -> None:
    """Stop processes together: one TERM each, then a kill once their grace has passed."""
    running = [process for process in supervised if process.status() is None]
    for process in running:
        process.terminate()
    started = time.monotonic()
    while any(process.status() is None for process in running):
        for process in running:
            if process.status() is None and time.monotonic() - started > process.grace:
                process.kill_group()
        time.sleep(TICK)
    for process in supervised:
        process.kill_group()  # stragglers of a process that exited first


@contextlib.contextmanager
def terminal_foreground() -> Iterator[None]:
    """Make this process's own group the terminal's foreground group while it runs.

    A Ctrl-C goes to the foreground group, which was make's: make would die of it after
    this process exits, so `make up` could never end with status 0 after a requested
    stop. Ctrl-Z is ignored meanwhile (it would stop this process while the shell waits
    on make). Nothing changes without a controlling terminal."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR)
    except OSError:
        yield
        return
    previous = os.getpgrp()
    took = False
    try:
        if os.tcgetpgrp(tty) == previous:
            if previous != os.getpid():
                os.setpgid(0, 0)
            with ignoring(signal.SIGTTOU):  # a background group may not set the foreground
                os.tcsetpgrp(tty, os.getpgrp())
            signal.signal(signal.SIGTSTP, signal.SIG_IGN)
            took = True
        yield
    finally:
        if took:
            with ignoring(signal.SIGTTOU), contextlib.suppress(OSError):
                os.tcsetpgrp(tty, previous)
        os.close(tty)


@contextlib.contextmanager
def ignoring(number: int) -> Iterator[None]:
    handler = signal.signal(number, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(number, handler)


def accepts(port: int) -> bool:
    """Does something accept TCP connections on 127.0.0.1:`port`?"""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


# Credentials come by the environment, which only this user (and root) can read, never by
# the command line: `ps -ef` shows every process's arguments to every user.
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
DEFAULT_DEMO_DSN = "mysql://root@127.0.0.1:3306/"


def broker_url() -> str:
    return os.environ.get("CELERY_BROKER_URL") or DEFAULT_BROKER


def demo_dsn() -> str:
    return os.environ.get("PARTDASH_DEMO_DSN") or DEFAULT_DEMO_DSN


def without_password(url: str) -> str:
    """`url` as it may be shown: `redis://:secret@host/0` becomes `redis://:***@host/0`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    credentials, _, host = parts.netloc.rpartition("@")
    user = credentials.partition(":")[0]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


class MakeUp:
    """The processes of `make up`, started in order and stopped in reverse."""

    def __init__(self, options: argparse.Namespace, supervisor: Supervisor) -> None:
        self.options = options
        self.supervisor = supervisor
        self.var = Path(options.var)
        self.log_dir = self.var / "log"
        self.redis: Process | None = None
        self.services: list[Process] = []  # worker, beat, web
        self.liveness: WorkerLiveness | None = None

    def process(self, name: str, argv: list[str], grace: float, restart: bool = False) -> Process:
        return Process(name, argv, self.log_dir, grace, restart)

    def run(self) -> int:
        """Start everything, then watch; the status `make up` exits with."""
        try:
            self.start_redis()
            self.register_demo()
            self.start_services()
            self.watch()
        except Stop:
            say("stopping")
            self.stop()
            return 0
        except Died as died:
            error(str(died))
            self.stop()
            return 1
        except BaseException:
            self.stop()
            raise

    def start_redis(self) -> None:
        broker = broker_url()
        if redis_answers(broker):
            return
        port = urlsplit(broker).port or 6379
        say(f"no Redis answers at {without_password(broker)}: starting one on port {port}")
        redis_dir = self.var / "redis"
        redis_dir.mkdir(mode=0o700, exist_ok=True)
        listen = ["--bind", "127.0.0.1", "--port", str(port), "--daemonize", "no"]
        no_persistence = ["--dir", str(redis_dir), "--save", "", "--appendonly", "no"]
        argv = ["redis-server", *listen, *no_persistence]
        self.redis = self.process("redis", argv, REDIS_GRACE).start()
        self.wait_for(lambda: redis_answers(broker), f"Redis to answer on port {port}")

    def register_demo(self) -> None:
        """Create the demo schema and register it, in the foreground (its messages are the
        user's), but in a session of its own so that a Ctrl-C stops it cleanly."""
        # The DSN goes by the environment (PARTDASH_DEMO_DSN), never the command line: any
        # user of the machine can read every process's arguments (`ps -ef`).
        command = [sys.executable, "manage.py", "demo", "--register", "demo", "--if-missing"]
        demo = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            while demo.poll() is None:
                self.supervisor.sleep(TICK)
        finally:
            if demo.poll() is None:
                demo.terminate()
                demo.wait()
        if demo.returncode != 0:
            say(
                f"no MySQL/MariaDB at {without_password(demo_dsn())}: no demo server "
                "(set PARTDASH_DEMO_DSN to use one)"
            )

    def start_services(self) -> None:
        # glibc gives each thread of a process its own memory arenas: 8 wide history
        # answers at once took the web process to 265 MB against 151 MB with two arenas
        # (bench/wide_history_bench.py, docs/benchmarks.md). Inherited by every service.
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        logs = shown(self.log_dir)
        say(f"starting the Celery worker, Celery beat and the web server (logs in {logs}/)")
        celery = [str(BIN / "celery"), "-A", "partdash"]
        node = f"worker@{socket.gethostname()}"  # the name its liveness check pings
        worker = ["worker", "--loglevel=INFO", f"--concurrency={self.options.workers}"]
        worker += ["--hostname", node]
        # Mingle (asking the other workers for revoked tasks, which partdash never revokes)
        # costs a second at each start, a stalled worker's restart included; gossip
        # (events between workers) serves nothing here either.
        worker += ["--without-mingle", "--without-gossip"]
        beat = ["beat", "--loglevel=INFO", f"--schedule={self.var / 'celerybeat-schedule'}"]
        bind = f"127.0.0.1:{self.options.port}"
        web = [str(BIN / "gunicorn"), "partdash.wsgi", "--bind", bind, "--workers", "2"]
        # Requests in flight get 3 s when stopping (gunicorn's default is 30).
        web += ["--threads", "4", "--graceful-timeout", "3"]
        web += ["--access-logfile", "-", "--error-logfile", "-"]
        web += ["--no-control-socket"]  # one per user in ~/.gunicorn: two instances would clash
        self.services = [
            self.process("worker", [*celery, *worker], WORKER_GRACE, restart=True),
            self.process("beat", [*celery, *beat], BEAT_GRACE, restart=True),
            self.process("web", web, WEB_GRACE),
        ]
        self.liveness = WorkerLiveness(self.services[0], node, broker_url(), stall_seconds())
        for service in self.services:
            service.start()
        port = int(self.options.port)
        self.wait_for(lambda: accepts(port), f"the web server to answer on port {port}")
        say(
            f"partdash is at http://127.0.0.1:{port}/ (admin: http://127.0.0.1:{port}/admin/); "
            "Ctrl-C stops"
        )

    def supervised(self) -> list[Process]:
        return [*self.services, *([self.redis] if self.redis else [])]

    def check_alive(self) -> None:
        """Restart a worker or beat that died (after its backoff), saying why; raise Died
        when another process died, or one keeps dying at start-up."""
        now = time.monotonic()
        for process in self.supervised():
            message = process.tend(now)
            if message:
                say(message)
        stalled = self.liveness.check(now) if self.liveness else None
        if stalled:
            say(stalled)

    def wait_for(self, condition, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            self.check_alive()
            if time.monotonic() > deadline:
                raise Died(f"timed out after {timeout:.0f} s waiting for {what}")
            self.supervisor.sleep(TICK)

    def watch(self) -> None:
        """Until a process exits (Died) or a stop is requested (Stop)."""
        while True:
            self.check_alive()
            self.supervisor.sleep(TICK)

    def stop(self) -> None:
        if self.liveness is not None:
            self.liveness.close()
        stop(self.services)
        if self.redis is not None:
            stop([self.redis])  # last: the worker hands unfinished tasks back to it


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--var", required=True, help="partdash's var/ directory")
    parser.add_argument("--port", required=True, help="the web server's port")
    parser.add_argument("--workers", default="4", help="the Celery worker's concurrency")
    return parser.parse_args()


def main() -> int:
    options = parse_arguments()
    supervisor = Supervisor()
    with terminal_foreground():
        return MakeUp(options, supervisor).run()


if __name__ == "__main__":
    sys.exit(main())
