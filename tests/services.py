"""Private, throwaway MariaDB and Redis servers for tests.

Nothing here imports Django: the helpers only start server processes, wait until they answer
and tear them down again.

* :class:`MariaDB` runs one ``mariadbd`` with its own data directory, TCP port (on
  127.0.0.1), unix socket and server options.  Data directories are copied from a template
  that ``mariadb-install-db`` fills once per process (per test session), so starting an
  instance costs about half a second.
* :class:`MariaDBFactory` hands out instances cached by their option set, so tests asking for
  the same options share one server.
* :class:`RedisServer` runs one ``redis-server`` without persistence.

Every file lives under one per-process directory (``<tmp>/partdash-services-XXXX``).  Cleanup
has three layers: the owners' ``stop()`` calls, an :mod:`atexit` hook that stops whatever is
still running and removes the directory, and (for a test run that was killed outright) a
reaper that, when the next session starts, kills the servers and removes the directories of
sessions whose owning process is gone.  Servers spawned from the main thread additionally get
``PR_SET_PDEATHSIG`` so the kernel kills them when the test process dies.
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import psutil
import pymysql
import pymysql.connections
import redis

MARIADB_INSTALL_DB = "/usr/bin/mariadb-install-db"
MARIADBD = "/usr/sbin/mariadbd"
REDIS_SERVER = "/usr/bin/redis-server"

LOCALHOST = "127.0.0.1"
SESSION_PREFIX = "partdash-services-"

OptionValue = str | int | float | bool | None
"""A server option value; ``True``/``False`` become ``ON``/``OFF``, ``None`` a bare flag."""

Options = Mapping[str, OptionValue]
OptionKey = frozenset[tuple[str, str | None]]

DEFAULT_MARIADB_OPTIONS: dict[str, str | None] = {
    "innodb_buffer_pool_size": "64M",
    "innodb_log_file_size": "8M",
    "innodb_flush_log_at_trx_commit": "2",
    "innodb_doublewrite": "OFF",
    "skip_log_bin": None,
    "skip_name_resolve": None,
    "character_set_server": "utf8mb4",
    "collation_server": "utf8mb4_unicode_ci",
}
"""Options every instance gets unless the test overrides them (small, fast, disposable)."""

TEMPLATE_OPTIONS = frozenset(
    {"innodb_page_size", "lower_case_table_names", "innodb_undo_tablespaces"}
)
"""Options fixed when a data directory is created; each distinct set gets its own template."""

MANAGED_OPTIONS = frozenset(
    {"datadir", "port", "socket", "bind_address", "pid_file", "log_error", "tmpdir", "user"}
)
"""Options the helpers set themselves; tests may not override them."""

_PORT_ATTEMPTS = 5
_POLL_INTERVAL = 0.05
_LOG_TAIL_LINES = 40
_PR_SET_PDEATHSIG = 1


class ServiceStartError(RuntimeError):
    """A server process did not come up (the message carries the tail of its logs)."""


class _PortTakenError(Exception):
    """The server lost the race for its port; retry with another one."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def free_port(host: str = LOCALHOST) -> int:
    """Return a TCP port on ``host`` that is free right now (bind to port 0, then release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def stop_processes(
    processes: list[subprocess.Popen], how: signal.Signals, grace: float = 20
) -> None:
    """Send `how` to each process (a Celery worker: SIGTERM warm shutdown, SIGQUIT cold;
    beat stops on either), wait for each, kill what is still there after `grace` s."""
    for process in processes:
        process.send_signal(how)
    for process in processes:
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def stopped_after(service):
    """`service` (anything with a `process`) for a `with` block, stopped (SIGTERM, then
    SIGKILL after 10 s) when the block ends."""
    try:
        yield service
    finally:
        stop_processes([service.process], signal.SIGTERM, grace=10)


def normalize_options(options: Options | None) -> dict[str, str | None]:
    """Normalise server options: ``--table-open-cache`` -> ``table_open_cache``, values to str."""
    normalized: dict[str, str | None] = {}
    for name, value in (options or {}).items():
        normalized[name.strip().lstrip("-").replace("-", "_").lower()] = _option_value(value)
    return normalized


def option_key(options: Options | None) -> OptionKey:
    """Hashable identity of an option set; equal for equivalent spellings."""
    return frozenset(normalize_options(options).items())


def render_options(options: Mapping[str, str | None]) -> list[str]:
    """Turn normalised options into ``--name=value`` / ``--name`` command-line arguments."""
    args = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        args.append(flag if value is None else f"{flag}={value}")
    return args


def _option_value(value: OptionValue) -> str | None:
    """Render one option value (booleans as ``ON``/``OFF``, ``None`` kept for bare flags)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def celery_command(*args: str) -> list[str]:
    """`celery -A partdash ARGS` in this interpreter, at INFO; a worker started as `make up`
    starts it (scripts/supervise.py): without mingle and gossip, a second less each start."""
    command = [sys.executable, "-m", "celery", "-A", "partdash", *args, "--loglevel=INFO"]
    if args[0] == "worker":
        command += ["--without-mingle", "--without-gossip"]
    return command


def log_tail(*paths: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of each existing file, labelled, for error messages."""
    parts = []
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        tail = "\n".join(text.splitlines()[-lines:])
        parts.append(f"--- {path} (tail) ---\n{tail}")
    return "\n".join(parts) if parts else "(no log output)"


def wait_for(
    probe: Callable[[], bool], *, timeout: float, interval: float = _POLL_INTERVAL
) -> bool:
    """Call ``probe`` until it returns true or ``timeout`` seconds pass; return the outcome."""
    deadline = time.monotonic() + timeout
    while True:
        if probe():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def answers_ready(url: str) -> bool:
    """Whether ``url``/-/ready answers 200: a Prometheus or an Alertmanager is up."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


def _pdeathsig_preexec() -> Callable[[], None] | None:
    """Return a ``preexec_fn`` making the child die with this thread, or ``None``.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child exits, so it is only
    used for servers started from the main thread (which lives as long as the process).
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return preexec


def spawn(argv: Sequence[str], output: Path) -> subprocess.Popen[bytes]:
    """Start a server process in its own session, stdout/stderr appended to ``output``."""
    with output.open("ab") as sink:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal Ctrl-C reaches pytest, not the servers
            preexec_fn=_pdeathsig_preexec(),
        )


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop ``proc`` with SIGTERM, escalating to SIGKILL after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def _tmp_base() -> Path:
    """Directory for session roots; short enough for unix socket paths (108 bytes max)."""
    base = Path(tempfile.gettempdir())
    return base if len(str(base)) <= 40 else Path("/tmp")


# --------------------------------------------------------------------------------------------
# Per-process session: root directory, templates, registry of live servers
# --------------------------------------------------------------------------------------------


class _Session:
    """Per-process bookkeeping shared by every server started through this module."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._root: Path | None = None
        self._counter = itertools.count(1)
        self._templates: dict[OptionKey, Path] = {}
        self._live: dict[int, _ManagedServer] = {}

    @property
    def root(self) -> Path:
        """The session directory, created (and stale sessions reaped) on first use."""
        with self._lock:
            if self._root is None:
                reap_stale_sessions()
                self._root = Path(tempfile.mkdtemp(prefix=SESSION_PREFIX, dir=_tmp_base()))
                _write_owner(self._root)
                atexit.register(self.shutdown)
            return self._root

    def new_dir(self, kind: str) -> Path:
        """Create and return a fresh sub-directory such as ``mariadb-3``."""
        with self._lock:
            path = self.root / f"{kind}-{next(self._counter)}"
        path.mkdir()
        return path

    def template(self, init_options: Mapping[str, str | None]) -> Path:
        """Return a pristine data directory for ``init_options``, building it once."""
        key = frozenset(init_options.items())
        with self._lock:
            if key not in self._templates:
                self._templates[key] = _install_db(self.new_dir("template") / "data", init_options)
            return self._templates[key]

    def track(self, server: _ManagedServer) -> None:
        """Remember a running server so :meth:`shutdown` can stop it."""
        with self._lock:
            self._live[id(server)] = server

    def untrack(self, server: _ManagedServer) -> None:
        """Forget a server that has been stopped."""
        with self._lock:
            self._live.pop(id(server), None)

    def shutdown(self) -> None:
        """Stop every server still running and delete the session directory (atexit hook)."""
        with self._lock:
            servers = list(self._live.values())
            root, self._root = self._root, None
            self._templates.clear()
        for server in servers:
            try:
                server.stop()
            except Exception:  # best effort at interpreter exit
                server.kill()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def _write_owner(root: Path) -> None:
    """Record this process (pid and start time) as the owner of ``root``."""
    me = psutil.Process()
    partial = root / "owner.partial"  # renamed whole: a reaper never reads it half-written
    partial.write_text(f"{me.pid} {me.create_time()!r}\n")
    partial.rename(root / "owner")


def _owner_alive(root: Path) -> bool:
    """Whether the process that created session directory ``root`` still runs."""
    try:
        pid_text, created_text = (root / "owner").read_text().split()
        owner = psutil.Process(int(pid_text))
        # Within 2 s, not to the tick: a create time is the boot time plus ticks, and the
        # boot time the kernel reports moves when the clock is adjusted. A process that
        # reused the pid within those 2 s is the one risk taken.
        return abs(owner.create_time() - float(created_text)) < 2.0
    except FileNotFoundError:
        # Either being created right now or very broken: only reap it once it is old.
        return time.time() - root.stat().st_mtime < 60
    except (ValueError, OSError, psutil.Error):
        return False


def _servers_under(root: Path) -> Iterable[psutil.Process]:
    """Server processes whose command line points into ``root``."""
    marker = str(root)
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] not in {"mariadbd", "redis-server"}:
            continue
        if any(marker in arg for arg in proc.info["cmdline"] or ()):
            yield proc


def reap_stale_sessions() -> None:
    """Kill servers of, and delete, session directories whose owning process is gone."""
    for root in _tmp_base().glob(f"{SESSION_PREFIX}*"):
        try:
            if _owner_alive(root):
                continue
        except OSError:
            continue
        for proc in _servers_under(root):
            try:
                proc.kill()
            except psutil.Error:
                pass
        shutil.rmtree(root, ignore_errors=True)


_SESSION = _Session()


def shutdown_all() -> None:
    """Stop every server started by this module and delete all their files."""
    _SESSION.shutdown()


# --------------------------------------------------------------------------------------------
# Shared process handling
# --------------------------------------------------------------------------------------------


class _ManagedServer:
    """Common lifecycle of one server process living in its own directory."""

    host = LOCALHOST
    kind = "server"

    def __init__(self, *, startup_timeout: float, shutdown_timeout: float) -> None:
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self.base_dir = _SESSION.new_dir(self.kind)
        self.output_log = self.base_dir / "output.log"
        self.port = 0
        self.startup_seconds: float | None = None
        """Wall-clock seconds the last :meth:`start` took (``None`` before the first)."""
        self._proc: subprocess.Popen[bytes] | None = None

    # -- public -------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """Process id of the running server, if any."""
        return self._proc.pid if self.is_running and self._proc else None

    @property
    def is_running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> Self:
        """Start the server (no-op when running) and wait until it answers."""
        if self.is_running:
            return self
        began = time.monotonic()
        self._prepare()
        ports = [self.port] if self.port else []
        for attempt in range(_PORT_ATTEMPTS):
            self.port = ports[attempt] if attempt < len(ports) else free_port()
            try:
                self._launch()
                break
            except _PortTakenError:
                self._reap()
        else:
            raise ServiceStartError(f"{self.kind}: no free port after {_PORT_ATTEMPTS} tries")
        self.startup_seconds = time.monotonic() - began
        return self

    def kill(self) -> None:
        """SIGKILL the server (simulates a crash); its files are kept for :meth:`start`."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        self._reap()

    def stop(self) -> None:
        """Shut the server down gracefully (SIGKILL if that hangs) and delete its files."""
        self._shutdown()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def restart(self) -> Self:
        """Graceful stop keeping the files (or recover after :meth:`kill`), then start."""
        self._shutdown()
        return self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.is_running else "stopped"
        return f"<{type(self).__name__} {self.host}:{self.port} {state}>"

    # -- for subclasses -----------------------------------------------------------------------

    def _prepare(self) -> None:
        """Create whatever files the server needs before its first start."""
        self.base_dir.mkdir(parents=True, exist_ok=True)

    def _command(self) -> list[str]:
        """The command line for the current :attr:`port`."""
        raise NotImplementedError

    def _log_files(self) -> tuple[Path, ...]:
        """Files whose tails explain a failed start."""
        return (self.output_log,)

    def _is_ready(self) -> bool:
        """Whether the running server answers requests."""
        raise NotImplementedError

    def _after_ready(self) -> None:
        """Hook run once the server answers (e.g. to create users)."""

    # -- internals ----------------------------------------------------------------------------

    def _launch(self) -> None:
        """Spawn the server and wait for it; raise :class:`_PortTakenError` on a port race."""
        self._proc = spawn(self._command(), self.output_log)
        _SESSION.track(self)
        if not wait_for(self._ready_or_dead, timeout=self.startup_timeout):
            self.kill()
            raise self._start_error(f"not ready after {self.startup_timeout:.0f} s")
        if not self.is_running:
            if self._port_was_taken():
                raise _PortTakenError
            code = self._proc.returncode
            self._reap()
            raise self._start_error(f"exited with status {code} during startup")
        try:
            self._after_ready()
        except BaseException:
            self.kill()
            raise

    def _ready_or_dead(self) -> bool:
        """Readiness probe that also ends the wait when the process died."""
        return not self.is_running or self._is_ready()

    def _port_was_taken(self) -> bool:
        """Whether the logs say the TCP port was already in use."""
        return "Address already in use" in log_tail(*self._log_files(), lines=10)

    def _start_error(self, what: str) -> ServiceStartError:
        """Build the start failure exception, with the log tails."""
        return ServiceStartError(
            f"{self.kind} on port {self.port} {what}\n{log_tail(*self._log_files())}"
        )

    def _shutdown(self) -> None:
        """Stop the process (if any) gracefully without touching its files."""
        if self._proc is not None:
            terminate(self._proc, self.shutdown_timeout)
        self._reap()

    def _reap(self) -> None:
        """Collect the exited process and forget it."""
        if self._proc is not None:
            self._proc.wait()
            self._proc = None
        _SESSION.untrack(self)


# --------------------------------------------------------------------------------------------
# MariaDB
# --------------------------------------------------------------------------------------------


def _install_db(datadir: Path, init_options: Mapping[str, str | None]) -> Path:
    """Run ``mariadb-install-db`` into ``datadir`` (root with an empty password, no test db)."""
    options = {
        "innodb_buffer_pool_size": DEFAULT_MARIADB_OPTIONS["innodb_buffer_pool_size"],
        "innodb_log_file_size": DEFAULT_MARIADB_OPTIONS["innodb_log_file_size"],
        **init_options,
    }
    # A temporary directory of its own: with the default (/tmp), a bootstrap running beside
    # another test process's was seen to lose its temporary table ("Unknown table
    # 'mysql.tmp_user_sys'").
    tmpdir = datadir.parent / "bootstrap-tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    argv = [
        MARIADB_INSTALL_DB,
        "--no-defaults",
        "--user=root",
        f"--datadir={datadir}",
        f"--tmpdir={tmpdir}",
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        "--skip-name-resolve",
        *render_options(options),
    ]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        output = "\n".join((result.stdout + result.stderr).splitlines()[-_LOG_TAIL_LINES:])
        raise ServiceStartError(f"mariadb-install-db failed ({result.returncode}):\n{output}")
    return datadir


class MariaDB(_ManagedServer):
    """One private ``mariadbd`` listening on 127.0.0.1 and on its own unix socket.

    ``options`` are extra server options such as ``{"performance_schema": "ON",
    "table_open_cache": 400}``; they override :data:`DEFAULT_MARIADB_OPTIONS`.  The server
    starts on :meth:`start` or when used as a context manager; user ``root`` has an empty
    password and every privilege, over TCP as well as the socket.
    """

    kind = "mariadb"

    def __init__(
        self,
        options: Options | None = None,
        *,
        startup_timeout: float = 30.0,
        shutdown_timeout: float = 30.0,
    ) -> None:
        self.options = normalize_options(options)
        """The test's own options (normalised), without the defaults."""
        if clash := MANAGED_OPTIONS & self.options.keys():
            raise ValueError(f"options managed by MariaDB cannot be set: {sorted(clash)}")
        super().__init__(startup_timeout=startup_timeout, shutdown_timeout=shutdown_timeout)
        self.datadir = self.base_dir / "data"
        self.socket = str(self.base_dir / "mysqld.sock")
        self.error_log = self.base_dir / "error.log"

    @property
    def key(self) -> OptionKey:
        """Identity of this instance's option set (see :func:`option_key`)."""
        return frozenset(self.options.items())

    @property
    def server_options(self) -> dict[str, str | None]:
        """All options passed to ``mariadbd``: defaults overridden by :attr:`options`."""
        return {**DEFAULT_MARIADB_OPTIONS, **self.options}

    @property
    def dsn(self) -> str:
        """``mysql://root@127.0.0.1:PORT/``."""
        return f"mysql://root@{self.host}:{self.port}/"

    def connect(
        self,
        user: str = "root",
        password: str = "",
        database: str | None = None,
        **kwargs: Any,
    ) -> pymysql.connections.Connection:
        """Open an autocommit PyMySQL connection over TCP; ``kwargs`` override the defaults.
        Without TLS unless ``kwargs`` ask for it: PyMySQL 1.2 otherwise tries it on every
        connection, building an SSL context that reads the system's CA bundle each time
        (the tests' own connections spent more CPU there than on anything else)."""
        params: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": user,
            "password": password,
            "database": database,
            "autocommit": True,
            "charset": "utf8mb4",
            "connect_timeout": 5,
        }
        params["ssl_disabled"] = not any(key.startswith("ssl") for key in kwargs)
        params.update(kwargs)
        return pymysql.connect(**params)

    def execute(self, sql: str, args: Any = None) -> tuple[tuple[Any, ...], ...]:
        """Run one statement as root on a fresh connection and return all rows."""
        with closing(self.connect()) as conn, conn.cursor() as cursor:
            cursor.execute(sql, args)
            return tuple(cursor.fetchall())

    # -- _ManagedServer hooks -----------------------------------------------------------------

    def _prepare(self) -> None:
        super()._prepare()
        if not self.datadir.exists():
            init = {k: v for k, v in self.options.items() if k in TEMPLATE_OPTIONS}
            shutil.copytree(_SESSION.template(init), self.datadir, symlinks=True)
            (self.base_dir / "tmp").mkdir(exist_ok=True)

    def _command(self) -> list[str]:
        return [
            MARIADBD,
            "--no-defaults",  # must come first: ignore /etc/mysql and ~/.my.cnf
            "--user=root",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--socket={self.socket}",
            f"--pid-file={self.base_dir / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.base_dir / 'tmp'}",
            *render_options(self.server_options),
        ]

    def _log_files(self) -> tuple[Path, ...]:
        return (self.error_log, self.output_log)

    def _port_was_taken(self) -> bool:
        tail = log_tail(*self._log_files(), lines=10)
        return "Address already in use" in tail or "Bind on TCP/IP port" in tail

    def _is_ready(self) -> bool:
        # Probe the socket, not TCP: after a lost port race TCP could reach someone else.
        try:
            conn = pymysql.connect(
                unix_socket=self.socket, user="root", connect_timeout=1, ssl_disabled=True
            )
        except pymysql.err.MySQLError:
            return False
        conn.close()
        return True

    def _after_ready(self) -> None:
        """Let root in over TCP from anywhere (the template only knows a few host names)."""
        with closing(
            pymysql.connect(unix_socket=self.socket, user="root", ssl_disabled=True)
        ) as conn:
            with conn.cursor() as cursor:
                cursor.execute("CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY ''")
                cursor.execute("GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION")
        (port,) = self.execute("SELECT @@port")[0]
        if int(port) != self.port:
            raise self._start_error(f"answered on TCP as port {port}")


class MariaDBFactory:
    """Hands out running :class:`MariaDB` instances, one per distinct option set.

    ``get()`` with equivalent options returns the same instance (use it from a session-scoped
    fixture); an instance found dead (e.g. after :meth:`MariaDB.kill`) is replaced by a fresh
    one.  Tests that kill or reconfigure a server should use a private :class:`MariaDB`.
    """

    def __init__(self, *, startup_timeout: float = 30.0, shutdown_timeout: float = 30.0) -> None:
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self._instances: dict[OptionKey, MariaDB] = {}
        self._lock = threading.Lock()

    @property
    def instances(self) -> list[MariaDB]:
        """The instances started so far."""
        with self._lock:
            return list(self._instances.values())

    def get(self, options: Options | None = None) -> MariaDB:
        """Return the running instance for ``options``, starting it if needed."""
        key = option_key(options)
        with self._lock:
            instance = self._instances.get(key)
            if instance is not None and instance.is_running:
                return instance
            if instance is not None:
                instance.stop()
            instance = MariaDB(
                options,
                startup_timeout=self.startup_timeout,
                shutdown_timeout=self.shutdown_timeout,
            )
            self._instances[key] = instance.start()
            return instance

    def stop_all(self) -> None:
        """Stop every instance of this factory and delete their files."""
        with self._lock:
            instances = list(self._instances.values())
            self._instances.clear()
        for instance in instances:
            instance.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()


# --------------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------------


class RedisServer(_ManagedServer):
    """One private ``redis-server`` on 127.0.0.1 without persistence (``--save ""``)."""

    kind = "redis"

    def __init__(
        self,
        extra_args: Sequence[str] = (),
        *,
        startup_timeout: float = 15.0,
        shutdown_timeout: float = 15.0,
    ) -> None:
        super().__init__(startup_timeout=startup_timeout, shutdown_timeout=shutdown_timeout)
        self.extra_args = list(extra_args)
        self.log_file = self.base_dir / "redis.log"

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://{self.host}:{self.port}/0"

    def client(self, db: int = 0, **kwargs: Any) -> redis.Redis:
        """A :class:`redis.Redis` client for database ``db``."""
        return redis.Redis(host=self.host, port=self.port, db=db, **kwargs)

    # -- _ManagedServer hooks -----------------------------------------------------------------

    def _command(self) -> list[str]:
        return [
            REDIS_SERVER,
            "--save",
            "",
            "--appendonly",
            "no",
            "--bind",
            self.host,
            "--port",
            str(self.port),
            "--dir",
            str(self.base_dir),
            "--logfile",
            str(self.log_file),
            "--daemonize",
            "no",
            *self.extra_args,
        ]

    def _log_files(self) -> tuple[Path, ...]:
        return (self.log_file, self.output_log)

    def _is_ready(self) -> bool:
        client = self.client(socket_connect_timeout=0.5, socket_timeout=2)
        try:
            # Also make sure it is *our* process answering, not a port-race winner.
            return bool(client.ping()) and client.info("server")["process_id"] == self.pid
        except redis.RedisError:
            return False
        finally:
            client.close()


__all__ = [
    "DEFAULT_MARIADB_OPTIONS",
    "MariaDB",
    "MariaDBFactory",
    "RedisServer",
    "ServiceStartError",
    "free_port",
    "log_tail",
    "normalize_options",
    "option_key",
    "reap_stale_sessions",
    "render_options",
    "shutdown_all",
    "wait_for",
]
