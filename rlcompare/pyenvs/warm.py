"""Warm starts: each run forked from an interpreter that already imported its framework.

A cold run's process is ``python -m MODULE ARGS``: a fresh interpreter that imports the framework
before it trains (torch and an RL library: 2 to 7 CPU seconds, often more than a short run's training).
With warm starts (``rlcompare run --warm-start``, or ``RLCOMPARE_WARM_START=1``) the driver keeps one
parent process per adapter environment, framework and environment variables
(:mod:`rlcompare.harness.zygote`), which imports the framework once, first thing, and forks every
run's process from there: the same module, arguments, environment, working directory, log, driver
pipe and session as the cold start gives it, with the import already done. The parent's measured
cold import is what each run records, and its preload is added to each run's start-up, so a run's
figures stay those of a cold start (docs/criteria.md). Where the parent cannot start or answer, the
run starts cold, as without the option.

A driver's parents are its own, and they stop when it ends. Drivers that name one folder in
``RLCOMPARE_WARM_POOL`` share their parents instead (:func:`open_pool`): a script or a test session
that starts many drivers pays each framework's import once. A pooled parent stops once it has been
unused for the pool's idle time, when the pool's owner ends, or when its folder is removed; each run it
forks still watches its own driver, so runs die with their driver either way.

:func:`start` returns a :class:`WarmProcess`, which the local backend uses as it uses a
:class:`subprocess.Popen` (``pid``, ``poll``, ``wait``, ``returncode``).
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from rlcompare.harness.driver_watch import ATTEMPT_ENV, DRIVER_FD_ENV, RUN_ID_ENV
from rlcompare.harness.run_directory import process_alive, process_is, process_start
from rlcompare.harness.zygote import POOL_IDLE_SECONDS, POOL_SETTINGS, remove_pooled_socket

#: Set to 1 to start every local run warm (what ``--warm-start`` sets for the driver and its runs).
WARM_START_ENV = "RLCOMPARE_WARM_START"
ZYGOTE_MODULE = "rlcompare.harness.zygote"
#: Variables that differ from run to run and that nothing reads at import: they do not split parents
#: (each forked process still gets its request's value). pytest sets PYTEST_CURRENT_TEST for each
#: phase of each test: a test process that drives runs would otherwise start a parent per test; and
#: pytest-xdist names each of its processes in PYTEST_XDIST_WORKER, which would split a shared pool.
PER_RUN_VARIABLES = frozenset({RUN_ID_ENV, ATTEMPT_ENV, DRIVER_FD_ENV, "PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER"})
#: Parents kept at once per driver (each holds its framework imported: a few hundred MiB); the one
#: used longest ago stops first.
MAX_PARENTS = 4
#: Seconds a parent may wait unused before the next request stops it.
IDLE_SECONDS = 300.0
#: Seconds a parent may take to import its framework before its runs start cold instead.
READY_TIMEOUT_SECONDS = 300.0
#: A folder where the parents of every driver that names it are shared (:func:`open_pool`).
WARM_POOL_ENV = "RLCOMPARE_WARM_POOL"
#: Longest path a Unix socket may be bound to here (108 bytes on Linux, with its terminating zero).
MAX_SOCKET_PATH = 100


def warm_start_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``RLCOMPARE_WARM_START`` asks for warm starts."""
    return (environ if environ is not None else os.environ).get(WARM_START_ENV, "").strip() in ("1", "true", "yes")


class WarmProcess:
    """A run's process forked by a parent: ``pid`` and the parts of :class:`subprocess.Popen`'s
    interface the backends use. Its exit status comes over its own connection to the parent."""

    def __init__(self, pid: int, connection: socket.socket, parent: Parent | PooledParent | None = None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._parent = parent
        #: The process's own CPU seconds (with those of the children it waited for) and peak resident
        #: set, as its parent reaped it; None until then, or when the parent went first.
        self.cpu_seconds: float | None = None
        self.peak_rss_bytes: int | None = None
        self._connection = connection

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read(block=False)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"warm run {self.pid}", timeout or 0.0)
            self._read(block=True, timeout=0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic())))
        assert self.returncode is not None
        return self.returncode

    def _read(self, block: bool, timeout: float = 0.0) -> None:
        self._connection.settimeout(timeout if block else 0.0)
        try:
            message = self._connection.recv(4096)
        except (BlockingIOError, TimeoutError, InterruptedError):
            return
        except OSError:
            message = b""
        if message:
            ended = json.loads(message)
            self.returncode = int(ended["exit"])
            self.cpu_seconds, self.peak_rss_bytes = ended.get("cpu_seconds"), ended.get("peak_rss_bytes")
        elif not process_alive(self.pid):
            self.returncode = -9  # the parent went before it could say (killed with the driver's group)
        else:
            time.sleep(0.05)  # the parent went, the process still ends on its own (its driver pipe)
        if self.returncode is not None:
            self._connection.close()
            if self._parent is not None:
                self._parent.running.discard(self.pid)


@dataclass
class Parent:
    """One parent process and the socket it listens on."""

    process: subprocess.Popen[bytes]
    folder: Path
    driver_pipe: int
    ready: bool = False
    failed: bool = False
    ready_lock: threading.Lock = field(default_factory=threading.Lock)
    log: IO[bytes] | None = None
    last_used: float = field(default_factory=time.monotonic)
    #: Its forked processes still running: a parent is not stopped under them (their exit status and
    #: usage come from it), only when the driver ends.
    running: set[int] = field(default_factory=set)

    @property
    def socket_path(self) -> str:
        return str(self.folder / "socket")

    def stop(self) -> None:
        try:
            os.close(self.driver_pipe)  # the parent stops when it reads the end of its pipe
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class Parents:
    """The parents of one driver process, by (interpreter, framework modules, environment)."""

    limit: int = MAX_PARENTS
    parents: OrderedDict[tuple[object, ...], Parent] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, python: str, modules: Iterable[str], env: Mapping[str, str],
            varying: frozenset[str] = PER_RUN_VARIABLES) -> Parent | PooledParent | None:
        """The parent for runs of ``python`` importing ``modules`` with ``env`` (except the ``varying``
        variables, which each run sets for itself), started and ready; None when it cannot be. With
        ``RLCOMPARE_WARM_POOL`` set, the pool's (:func:`pooled_parent`)."""
        base = {name: value for name, value in env.items() if name not in varying}
        pool = pool_folder()
        if pool is not None:
            return pooled_parent(pool, python, tuple(modules), base)
        key = (python, tuple(modules), tuple(sorted(base.items())))
        with self.lock:
            now = time.monotonic()
            for other in [other for other, held in self.parents.items()
                          if now - held.last_used > IDLE_SECONDS and not held.running]:
                self.parents.pop(other).stop()
            parent = self.parents.get(key)
            if parent is not None and parent.process.poll() is not None:
                self.parents.pop(key).stop()
                parent = None
            if parent is None:
                idle = [other for other, held in self.parents.items() if not held.running]  # used longest ago first
                while len(self.parents) >= self.limit and idle:
                    self.parents.pop(idle.pop(0)).stop()
                parent = _launch(python, tuple(modules), base)
                if parent is None:
                    return None
                self.parents[key] = parent
            self.parents.move_to_end(key)
            parent.last_used = now
        with parent.ready_lock:  # outside the pool's lock: parents of other frameworks start meanwhile
            if not parent.ready and not parent.failed:
                parent.failed = not _wait_ready(parent)
        if parent.failed:
            with self.lock:
                if self.parents.get(key) is parent:
                    self.parents.pop(key).stop()
            return None
        return parent

    def stop_all(self) -> None:
        with self.lock:
            while self.parents:
                self.parents.popitem(last=False)[1].stop()


PARENTS = Parents()
atexit.register(PARENTS.stop_all)


@dataclass
class PooledParent:
    """A parent of a shared pool, as one driver sees it: where it listens, and which of the processes
    it forked for this driver still run."""

    socket_path: str
    running: set[int] = field(default_factory=set)


def pool_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """The shared pool ``RLCOMPARE_WARM_POOL`` names, if any."""
    value = (environ if environ is not None else os.environ).get(WARM_POOL_ENV, "").strip()
    return Path(value) if value else None


def open_pool(folder: Path, owner: int | None = None, idle_seconds: float = POOL_IDLE_SECONDS) -> None:
    """Make ``folder`` a pool of parents (drivers started with ``RLCOMPARE_WARM_POOL=folder`` share it)
    whose parents stop after ``idle_seconds`` unused, and once process ``owner`` has ended."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # whoever can reach a parent's socket can run code
    settings: dict[str, object] = {"idle_seconds": idle_seconds}
    if owner is not None:
        settings["owner"] = [owner, process_start(owner)]
    (folder / POOL_SETTINGS).write_text(json.dumps(settings), encoding="utf-8")


#: Pooled parents this driver started (reaped as they end; they outlive it otherwise).
_LAUNCHED: list[subprocess.Popen[bytes]] = []


def pooled_parent(pool: Path, python: str, modules: tuple[str, ...], env: Mapping[str, str]) -> PooledParent | None:
    """The pool's parent for runs of ``python`` importing ``modules`` with ``env``: the one a driver
    started, or one started now (other drivers wait for it, then share it); None when it cannot be."""
    for launched in list(_LAUNCHED):
        if launched.poll() is not None:
            _LAUNCHED.remove(launched)
    key = json.dumps([python, list(modules), sorted(env.items())])
    folder = pool / hashlib.sha256(key.encode()).hexdigest()[:24]
    try:
        pool.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(f"{folder}.lock", "a", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one driver starts it; the others wait, then share it
            found = _pooled_socket(folder)
            if found is not None:
                return PooledParent(found)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(mode=0o700)
            socket_path = str(folder / "socket")
            if len(socket_path.encode()) > MAX_SOCKET_PATH:  # a deep pool: the socket in a short folder of its own
                socket_path = str(Path(tempfile.mkdtemp(prefix="rlcz-")) / "socket")
            process = _start_parent(python, modules, env, folder, socket_path, pool_entry=str(folder))
            if process is None:
                remove_pooled_socket(socket_path, str(folder))
                return None
            _LAUNCHED.append(process)
            ready = _read_ready(process)
            assert process.stdout is not None
            process.stdout.close()
            if not ready:
                process.kill()
                remove_pooled_socket(socket_path, str(folder))
                return None
            (folder / "parent.json").write_text(json.dumps(
                {"pid": process.pid, "start": process_start(process.pid), "socket": socket_path}), encoding="utf-8")
            return PooledParent(socket_path)
    except (OSError, ValueError):
        return None


def _pooled_socket(folder: Path) -> str | None:
    """Where the parent a driver started for ``folder`` listens, if it still runs."""
    try:
        parent = json.loads((folder / "parent.json").read_text(encoding="utf-8"))
        pid, started, socket_path = int(parent["pid"]), parent["start"], str(parent["socket"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return socket_path if os.path.exists(socket_path) and process_is(pid, started) else None


def _launch(python: str, modules: tuple[str, ...], env: Mapping[str, str]) -> Parent | None:
    folder = Path(tempfile.mkdtemp(prefix="rlcz-"))
    watched, held = os.pipe()
    log = (folder / "parent.log").open("wb")
    try:
        process = _start_parent(python, modules, {**env, DRIVER_FD_ENV: str(watched)}, folder, str(folder / "socket"),
                                log=log, watched=watched)
    finally:
        os.close(watched)
    if process is None:
        os.close(held)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return Parent(process, folder, held, log=log)


def _start_parent(python: str, modules: tuple[str, ...], env: Mapping[str, str], folder: Path, socket_path: str,
                  log: IO[bytes] | None = None, watched: int | None = None,
                  pool_entry: str | None = None) -> subprocess.Popen[bytes] | None:
    """``python -m rlcompare.harness.zygote`` listening on ``socket_path``, its log in ``folder``: a driver's
    own (watching its pipe ``watched``) or a pool's (``pool_entry``: its folder there)."""
    own_log = log is None
    stderr = (folder / "parent.log").open("wb") if log is None else log
    try:
        return subprocess.Popen(
            [python, "-m", ZYGOTE_MODULE, socket_path, repr(time.time()), json.dumps(list(modules)),
             *([pool_entry] if pool_entry else [])],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, env=dict(env),
            pass_fds=() if watched is None else (watched,), start_new_session=True)
    except OSError:
        return None
    finally:
        if own_log:
            stderr.close()


def _read_ready(process: subprocess.Popen[bytes]) -> bool:
    import select

    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], READY_TIMEOUT_SECONDS)
    line = process.stdout.readline() if readable else b""
    return line.strip() == b'{"ready": true}'


def _wait_ready(parent: Parent) -> bool:
    parent.ready = _read_ready(parent.process)
    return parent.ready


def start(python: str, module: str, argv: list[str], env: Mapping[str, str], modules: Iterable[str],
          log: IO[bytes], driver_pipe: int, cwd: str | None = None,
          varying: frozenset[str] = PER_RUN_VARIABLES) -> WarmProcess | None:
    """Fork ``python -m module *argv`` from the parent for (``python``, ``modules``, ``env``), started
    and preloaded the first time; None when no parent could start or answer (start it cold then)."""
    parent = PARENTS.get(python, modules, env, varying)
    if parent is None:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(parent.socket_path)
        request = {"module": module, "argv": list(argv), "env": dict(env), "cwd": cwd or os.getcwd()}
        socket.send_fds(connection, [json.dumps(request).encode()], [log.fileno(), driver_pipe])
        connection.settimeout(120)  # the parent may be importing what its first run taught it
        reply = json.loads(connection.recv(4096) or b"{}")
    except (OSError, ValueError):
        connection.close()
        return None
    if "pid" not in reply:
        connection.close()
        return None
    parent.running.add(int(reply["pid"]))
    return WarmProcess(int(reply["pid"]), connection, parent)


def run_module(python: str, module: str, argv: list[str], modules: Iterable[str], timeout: float,
               env: Mapping[str, str] | None = None) -> tuple[int, str] | None:
    """``subprocess.run([python, "-m", module, *argv], timeout=timeout)`` forked warm: its exit status
    and its output (stdout and stderr together), or None when no parent could start or answer (run it
    cold then). Past ``timeout`` its session is killed and :class:`subprocess.TimeoutExpired` raised."""
    watched, held = os.pipe()  # the process stops if this driver dies, as a run does
    with tempfile.TemporaryFile() as log:
        try:
            process = start(python, module, argv, dict(os.environ if env is None else env), modules, log, watched)
        finally:
            os.close(watched)
        if process is None:
            os.close(held)
            return None
        try:
            status = process.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, 9)
            except OSError:
                pass
            process.wait()
            raise
        finally:
            os.close(held)
        log.seek(0)
        return status, log.read().decode(errors="replace")
