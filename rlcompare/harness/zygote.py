"""A warm start's parent process: ``python -m rlcompare.harness.zygote SOCKET LAUNCHED_AT MODULES.json``.

With ``--warm-start`` the local backend starts, per adapter environment, one fresh interpreter that
imports the framework first thing, exactly as a cold worker does (its import timed and its API walked:
:func:`rlcompare.harness.framework_import.measure_in_this_interpreter`), then the harness's worker and
the adapter's module, and then forks one child per run on request. Each child is the run's process:
its own session, the run's environment, working directory, log and driver pipe, and the module the
request names run as ``__main__`` (the worker, the kit's probe worker, the parity worker). The import
is paid once per environment instead of once per run; the child reports the parent's measured import
and adds the parent's preload to its start-up (:mod:`rlcompare.harness.preloaded`), so its figures stay those of a cold
run (docs/criteria.md).

Requests arrive on a Unix ``SOCK_SEQPACKET`` socket, one connection per run: a JSON message
``{"module", "argv", "env", "cwd"}`` with two file descriptors (the log, the driver pipe's read end);
the reply is ``{"pid": N}`` (or ``{"error": ...}``), then ``{"exit": STATUS, "cpu_seconds", "peak_rss_bytes"}``
once the child ended (negative status: killed by that signal; its own CPU time, with its waited-for
children's, and its peak resident set, from ``wait4``). The parent stops when its own driver pipe closes (the driver
ended), its children each watch their own. A pool's parent (``... ENTRY``, its folder in the pool) has no driver
pipe: it stops once unused for the pool's idle time, once the pool's owner has ended (both in the pool's
``pool.json``), or once ENTRY is removed. Standard library and the harness's light modules only: it
runs in the adapter's environment.
"""

from __future__ import annotations

# ruff: noqa: E402 - run as ``python -m``, the current directory leaves the import path first of all
from rlcompare.harness.import_path import drop_current_directory

if __name__ == "__main__":
    drop_current_directory()

import importlib
import json
import os
import random
import runpy
import select
import shutil
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field

from rlcompare.harness.driver_watch import DRIVER_FD_ENV, take_driver_fd
from rlcompare.harness.preloaded import Preloaded, add_preload_seconds, mark_forked, set_preloaded
from rlcompare.harness.run_directory import process_is

#: Largest request accepted (the run's environment dominates it).
MAX_REQUEST_BYTES = 1 << 20


def preload(modules: list[str], launched_at: float) -> Preloaded:
    """Import ``modules`` first thing (timed as a cold worker times them), then what every run loads."""
    from rlcompare.harness.framework_import import measure_in_this_interpreter

    measurement = measure_in_this_interpreter(modules) if modules else None
    for name in ("rlcompare.harness.worker", "rlcompare.harness.context"):
        importlib.import_module(name)
    return Preloaded(tuple(modules), measurement, max(0.0, time.time() - launched_at), parent=os.urandom(8).hex())


#: A pool's settings file (:func:`rlcompare.pyenvs.warm.open_pool`): ``{"idle_seconds": S, "owner": [PID, START]}``.
POOL_SETTINGS = "pool.json"
#: Seconds a pooled parent waits unused before it stops, unless its pool says otherwise.
POOL_IDLE_SECONDS = 120.0


@dataclass
class Pooled:
    """A parent shared by the drivers of a pool (:mod:`rlcompare.pyenvs.warm`): it stops once unused for
    ``idle_seconds``, once process ``owner`` (pid, start) has ended, or once its ``entry`` in the pool
    (the folder that names it to the drivers) is removed."""

    entry: str
    idle_seconds: float = POOL_IDLE_SECONDS
    owner: tuple[int, float] | None = None
    last_used: float = field(default_factory=time.monotonic)
    checked: float = 0.0

    @classmethod
    def of_entry(cls, entry: str) -> Pooled:
        """The parent of ``entry``, with the settings of the pool that holds it (defaults where it has none)."""
        try:
            with open(os.path.join(os.path.dirname(entry.rstrip("/")), POOL_SETTINGS), encoding="utf-8") as handle:
                settings = json.load(handle)
            owner = settings.get("owner")
            return cls(entry, float(settings.get("idle_seconds", POOL_IDLE_SECONDS)),
                       (int(owner[0]), float(owner[1])) if owner and owner[1] is not None else None)
        except (OSError, ValueError, TypeError, AttributeError, IndexError):
            return cls(entry)

    def done(self, busy: bool) -> bool:
        now = time.monotonic()
        if busy:
            self.last_used = now
        if now - self.last_used > self.idle_seconds:
            return True
        if now - self.checked < 0.5:
            return False
        self.checked = now
        if self.owner is not None and not process_is(*self.owner):
            return True
        return not os.path.exists(self.entry)


def remove_pooled_socket(path: str, entry: str) -> None:
    """Remove a pooled parent's socket: from its entry in the pool, or with the short folder of its own
    it has where the pool sits deeper than a socket's path may be long."""
    if os.path.dirname(path) == entry.rstrip("/"):
        try:
            os.unlink(path)
        except OSError:
            pass  # the pool was removed
    else:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def serve(path: str, preloaded: Preloaded, pooled: Pooled | None = None) -> None:
    """Accept requests on ``path`` until the driver's pipe closes (a pool's parent: until ``pooled``
    says it is done)."""
    set_preloaded(preloaded)
    watch = take_driver_fd()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    print(json.dumps({"ready": True}), flush=True)
    if pooled is not None:  # the driver that started it reads no more than that line, and may end
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    children: dict[int, socket.socket] = {}
    learning = Learning(os.path.dirname(path))
    while True:
        readable, _, _ = select.select([listener] + ([watch] if watch is not None else []), [], [], 0.05)
        if watch is not None and watch in readable and not os.read(watch, 1):
            break  # the driver ended; each child watches its own pipe
        if listener in readable:
            connection, _ = listener.accept()
            pid = _start(connection, listener, watch, children, learning)
            if pid is not None:
                children[pid] = connection
        _reap(children, learning)
        if pooled is not None and pooled.done(busy=bool(children) or listener in readable):
            break
    if pooled is not None:  # no driver connects to a parent that stopped
        remove_pooled_socket(path, pooled.entry)
    else:  # a driver's own parent's folder: nothing in it is read once the driver has gone (it may have been killed)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    listener.close()
    os._exit(0)


#: Packages whose modules a parent never imports after its preload: they may start threads, open
#: sockets or initialize devices at import, which a fork must not inherit.
NOT_LEARNED = frozenset({"ray", "grpc", "jax", "jaxlib", "tensorflow", "zmq", "torch_xla", "multiprocessing",
                         "concurrent", "asyncio", "threading", "__main__", "__mp_main__"})


@dataclass
class Learning:
    """What a parent learns from its first run that ends well: the modules that run imported of the
    packages the parent had loaded (a framework's lazily imported parts: torch's first optimizer imports
    ``torch._dynamo``, 1 to 3 CPU seconds), which the parent imports when the next run is asked for, before
    it forks it and the runs after it. The seconds it takes are added to the preload those runs count in
    their start-up."""

    folder: str
    done: bool = False
    #: What the first good run imported, imported by the parent only when another run is asked for (a
    #: parent that forks one run never spends the time).
    pending: list[str] | None = None

    def report_path(self, pid: int) -> str:
        return os.path.join(self.folder, f"modules-{pid}.json")

    def learn_from(self, pid: int, status: int) -> None:
        path = self.report_path(pid)
        try:
            with open(path, encoding="utf-8") as handle:
                names = json.load(handle)
        except (OSError, ValueError):
            return
        finally:
            if os.path.exists(path):
                os.remove(path)
        if self.done or status != 0 or not isinstance(names, list):
            return
        self.done, self.pending = True, [str(name) for name in names]

    def import_pending(self) -> None:
        """Import what was learned (before the next fork)."""
        names, self.pending = self.pending or [], None
        if not names:
            return
        loaded = {name.partition(".")[0] for name in sys.modules}
        started = time.time()
        for name in names:
            top = str(name).partition(".")[0]
            if top in loaded and top not in NOT_LEARNED and name not in sys.modules:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - a module its run imported in another way; the runs import it
                    continue
        add_preload_seconds(time.time() - started)


def _start(connection: socket.socket, listener: socket.socket, watch: int | None,
           children: dict[int, socket.socket], learning: Learning) -> int | None:
    fds: list[int] = []
    try:
        message, fds, _flags, _address = socket.recv_fds(connection, MAX_REQUEST_BYTES, 2)
        request = json.loads(message)
        if len(fds) != 2:
            raise ValueError(f"expected the log and the driver pipe, got {len(fds)} descriptors")
        module, argv, env, cwd = request["module"], request["argv"], request["env"], request["cwd"]
        learning.import_pending()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except Exception as error:  # noqa: BLE001 - the driver falls back to a cold start, saying why
        for fd in fds:
            os.close(fd)
        connection.sendall(json.dumps({"error": f"{type(error).__name__}: {error}"[:300]}).encode())
        connection.close()
        return None
    if pid == 0:
        mark_forked()
        listener.close()
        for other in children.values():
            other.close()
        connection.close()
        if watch is not None:
            os.close(watch)
        _run_child(module, argv, env, cwd, log=fds[0], driver=fds[1],
                   report=None if learning.done else learning.report_path(os.getpid()))
    for fd in fds:
        os.close(fd)
    connection.sendall(json.dumps({"pid": pid}).encode())
    return pid


def _run_child(module: str, argv: list[str], env: dict[str, str], cwd: str, log: int, driver: int,
               report: str | None = None) -> None:
    """The run's process: what ``subprocess.Popen([python, "-m", module, *argv], start_new_session=True,
    stdout=log, stderr=STDOUT, stdin=DEVNULL, env=env, cwd=cwd, pass_fds=(driver,))`` would have made.
    With ``report``, the modules it imported are written there as it exits (:class:`Learning`)."""
    status = 1
    if report is not None:
        _report_modules_at_exit(report)
    try:
        os.setsid()
        for number in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(number, signal.SIG_DFL if number != signal.SIGINT else signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.set_inheritable(driver, True)
        os.environ.clear()
        os.environ.update(env)
        os.environ[DRIVER_FD_ENV] = str(driver)
        os.chdir(cwd)
        random.seed()  # a fresh interpreter's own seed, not the parent's
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        sys.argv = [module, *argv]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stop:
        code = stop.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if not isinstance(code, int) and code is not None:
            print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - as an uncaught exception in a fresh interpreter
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _report_modules_at_exit(path: str) -> None:
    """Write the modules this process imports from now on to ``path`` as it exits (``os._exit``, which
    the worker and this module's own exit path both take)."""
    before = set(sys.modules)
    leave = os._exit

    def exit_reporting(status: int) -> None:
        try:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(sorted(set(sys.modules) - before), handle)
        except Exception:  # noqa: BLE001 - nothing learned; the exit is what matters
            pass
        leave(status)

    os._exit = exit_reporting  # type: ignore[assignment]


def _reap(children: dict[int, socket.socket], learning: Learning) -> None:
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is None:
            continue
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        # what the process used, exactly (a run shorter than the driver's sampling interval is never sampled)
        ended = {"exit": code, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_bytes": usage.ru_maxrss * 1024}
        try:
            connection.sendall(json.dumps(ended).encode())
        except OSError:
            pass  # the driver let go of this run
        connection.close()
        learning.learn_from(pid, code)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path, launched_at, modules = argv[0], float(argv[1]), json.loads(argv[2])
    pooled = Pooled.of_entry(argv[3]) if len(argv) > 3 else None  # a pool's: its entry folder
    serve(path, preload([str(name) for name in modules], launched_at), pooled)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
