"""Measuring and stopping a run's whole process tree (the worker and everything it starts)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

import psutil


@dataclass
class TreeMonitor:
    """Samples a process tree: peak summed RSS, CPU seconds per process, every pid ever seen."""

    root_pid: int
    #: The attempt every process of the run carries (:data:`ATTEMPT_ENV`): its run directory.
    attempt: str | None = None
    peak_rss_bytes: int = 0
    cpu_by_pid: dict[int, float] = field(default_factory=dict)
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    def sample(self) -> None:
        try:
            root = psutil.Process(self.root_pid)
            descendants = _descendant_pids(self.root_pid) if _PROC_CHILDREN else None
            if descendants is None:
                processes = [root, *root.children(recursive=True)]
            else:
                processes = [root, *_processes(descendants)]
        except psutil.Error:
            processes = [process for process in self.seen.values() if _alive(process)]
        rss = 0
        for process in processes:
            try:
                with process.oneshot():
                    rss += process.memory_info().rss
                    times = process.cpu_times()
                    self.cpu_by_pid[process.pid] = max(
                        self.cpu_by_pid.get(process.pid, 0.0),
                        times.user + times.system,
                    )
                self.seen.setdefault(process.pid, process)
            except psutil.Error:
                continue
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)

    def account_reaped(self, pid: int, cpu_seconds: float | None, peak_rss_bytes: int | None) -> None:
        """Take in what the parent that reaped ``pid`` measured of it (``wait4``): its peak resident set
        counts toward the tree's peak, and its CPU time stands for its own where no sample saw it (its
        CPU time also holds the children it waited for, which samples may have counted apart)."""
        if peak_rss_bytes is not None:
            self.peak_rss_bytes = max(self.peak_rss_bytes, int(peak_rss_bytes))
        if cpu_seconds is not None and pid not in self.cpu_by_pid:
            self.cpu_by_pid[pid] = float(cpu_seconds)

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the tree as last sampled (a lower bound: the last interval may be missed)."""
        return float(sum(self.cpu_by_pid.values()))

    def survivors(self) -> list[psutil.Process]:
        """Processes of this tree still alive (the root excluded once it exited)."""
        return [process for process in self.seen.values() if _alive(process)]


    def adopt_marked(self) -> None:
        """Add live processes carrying this attempt's ``RLCOMPARE_ATTEMPT`` (e.g. daemons that left
        the tree and the process group, as Ray's may): they are the run's even if no longer its
        children. Only this attempt's: another driver's run with the same run id is left alone."""
        if self.attempt is None:
            return
        for process in psutil.process_iter():
            if process.pid in self.seen or process.pid == os.getpid():
                continue
            try:
                if process.environ().get(ATTEMPT_ENV) == self.attempt:
                    self.seen[process.pid] = process
            except psutil.Error:
                continue


#: Every process of a run inherits these variables, so stragglers can be found after the fact: the
#: run id (for people), and the attempt (its run directory; cleanup matches on this one only).
RUN_ID_ENV = "RLCOMPARE_RUN_ID"
ATTEMPT_ENV = "RLCOMPARE_ATTEMPT"


#: Linux lists each thread's children in /proc: walking them costs O(the run's tree), where psutil's
#: ``children(recursive=True)`` reads every process on the machine (3.4 ms per sample measured on
#: a 2-core host, ten samples a second, on a core the run may need).
_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _descendant_pids(pid: int) -> list[int]:
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:  # exited meanwhile
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    children = [int(child) for child in handle.read().split()]
            except (OSError, ValueError):  # the thread or process exited meanwhile
                continue
            found.extend(children)
            stack.extend(children)
    return list(dict.fromkeys(found))


def _processes(pids: list[int]) -> list[psutil.Process]:
    processes = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return processes


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_tree(monitor: TreeMonitor, grace_seconds: float = 3.0) -> None:
    """SIGTERM the run's process group and every process it was seen with, then SIGKILL stragglers."""
    monitor.sample()
    monitor.adopt_marked()
    if not _group_exists(monitor.root_pid) and not monitor.survivors():
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(monitor.root_pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for process in monitor.survivors():
            try:
                process.send_signal(sig)
            except psutil.Error:
                pass
        deadline = time.monotonic() + (grace_seconds if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline and monitor.survivors():
            time.sleep(0.05)
        if not monitor.survivors():
            return


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False
