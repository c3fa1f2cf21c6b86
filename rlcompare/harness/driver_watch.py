"""Inside a worker: stop the run's whole process tree when its driver dies.

The driver keeps the write end of a pipe whose read end the worker inherits; a thread of the worker
blocks reading it. The read returns only when every write end is closed, which happens when the
driver exits or is killed (SIGKILL included), so a worker never trains on unsupervised. The tree is
the worker's process group plus every process carrying this attempt's ``RLCOMPARE_ATTEMPT`` (daemons
such as Ray's may leave the group): the attempt (the run directory's path) names the store and
differs for every attempt, so a worker never touches the processes of another driver's run with
the same run id. Standard library only: the worker may run in another
environment.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

DRIVER_FD_ENV = "RLCOMPARE_DRIVER_FD"
RUN_ID_ENV = "RLCOMPARE_RUN_ID"
#: Every process of one attempt of a run carries this variable: the attempt's run directory.
ATTEMPT_ENV = "RLCOMPARE_ATTEMPT"


def take_driver_fd() -> int | None:
    """The driver pipe's read end the driver handed this process (``RLCOMPARE_DRIVER_FD``, removed from
    the environment so that this process's own children do not take it too); None without one."""
    text = os.environ.pop(DRIVER_FD_ENV, "")
    return int(text) if text.isdigit() else None


def watch_driver() -> threading.Thread | None:
    """Start the watching thread if the driver handed this process a pipe; None otherwise."""
    fd = take_driver_fd()
    if fd is None:
        return None
    try:
        os.set_inheritable(fd, False)  # the worker's own children do not need it
    except OSError:
        return None
    thread = threading.Thread(target=_wait_then_stop, args=(fd,), name="rlcompare-driver-watch", daemon=True)
    thread.start()
    return thread


def _wait_then_stop(fd: int) -> None:
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    stop_run_tree(os.environ.get(ATTEMPT_ENV))


def marked_processes(attempt: str) -> list[int]:
    """Pids of live processes (other than this one) whose environment carries ``attempt``."""
    marker = f"{ATTEMPT_ENV}={attempt}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def stop_run_tree(attempt: str | None) -> None:
    """SIGKILL every process of the attempt outside this process group, then the group (this one too)."""
    if attempt:
        for pid in marked_processes(attempt):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    try:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    finally:
        os._exit(137)
